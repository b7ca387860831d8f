"""Candidate budgets: how many chunks a configuration scores for one query, and the Params that fill it.

A budgeted configuration gets, per query, Params whose candidate set is as large as the budget allows
and no larger: a single leg takes `budget` seeds; two legs (hybrid) take the longest equal prefixes
whose union fits (plus one more dense seed when that still fits); a graph keeps its seeds and lets
the hops admit the rest. Everything goes through the ordinary Params, so a budgeted configuration
scores what `ragx query` would with those numbers (on the pass `pass_plan` gives it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UsageError
from ..scoring.candidates import Candidates, PassCaps, bm25_of, shared_bm25
from ..scoring.params import Params
from .presets import BUDGET_SOURCE, EvalConfig


def source_params(cfg: EvalConfig) -> Params | None:
    """The Params whose admitted candidates set this config's budget (budget=graph), else None."""
    return cfg.source if cfg.budget == BUDGET_SOURCE else None


def most_admitted(p: Params) -> int:
    """An upper bound on the candidates `p` can admit for one query (one dense variant)."""
    return p.dense_n + p.lexical_n + p.hops * p.max_frontier


def bound(cfg: EvalConfig) -> int | None:
    if cfg.budget is None:
        return None
    if isinstance(cfg.budget, int):
        return int(cfg.budget)
    if cfg.source is None:
        raise ValueError(f"config {cfg.name!r}: budget={cfg.budget!r} needs the source preset's Params")
    return most_admitted(cfg.source)


def pass_groups(configs: list[EvalConfig]) -> dict[bool, list[EvalConfig]]:
    """The pipeline configurations by retrieval pass: with and without query expansion (expansion adds
    dense legs, so they need different passes). The reference BM25 needs no pass."""
    groups: dict[bool, list[EvalConfig]] = {}
    for cfg in configs:
        if not cfg.is_reference_bm25:
            groups.setdefault(cfg.expand, []).append(cfg)
    return groups


def scores_bm25(p: Params) -> bool:
    """Whether scoring `p` reads the pass's BM25 (its seeds or its lexical signal), so its k1 and b matter."""
    return p.lexical_n > 0 or p.lexical_weight > 0


def bm25_of_pass(configs: list[EvalConfig]) -> dict[str, Any]:
    """The one (k1, b, variant) with which a pass serves `configs`: every Params of theirs that scores
    BM25 (each configuration's own and its budget source's) must agree, since a pass scores BM25 once.
    A UsageError naming the configurations of each setting otherwise."""
    scoring = [(cfg.name, p) for cfg in configs for p in (cfg.params, source_params(cfg)) if p is not None and scores_bm25(p)]
    found: dict[tuple[float, float, str, str], list[str]] = {}
    for name, p in scoring:
        names = found.setdefault(bm25_of(p), [])
        if name not in names:
            names.append(name)
    if len(found) > 1:
        settings = "; ".join(f"k1={k1:g}, b={b:g}, {variant}{'' if qf == 'off' else f', query_features={qf}'}: {', '.join(names)}"
                             for (k1, b, variant, qf), names in found.items())
        raise UsageError("configs of one run must share bm25_k1/bm25_b/bm25_variant/query_features: one retrieval pass scores BM25 once; "
                         f"run `ragx eval` once per setting ({settings})")
    return shared_bm25([p for _, p in scoring])


def check_passes(configs: list[EvalConfig]) -> None:
    """Refuse, before any work, configurations that no single pass per group can serve."""
    for group in pass_groups(configs).values():
        bm25_of_pass(group)


def pass_caps(configs: list[EvalConfig]) -> PassCaps:
    """One pass wide enough for every configuration, its budget, and the budget's source."""
    return _caps([need for cfg in configs for need in _needs(cfg)], bm25_of_pass(configs))


def _needs(cfg: EvalConfig) -> list[Params]:
    """The Params a pass must serve for `cfg`: its own (a budgeted leg widened to `most` seeds) and
    its budget source's."""
    p, most = cfg.params, bound(cfg)
    if most is not None and p.hops == 0:  # budgeted legs may need up to `most` seeds each
        p = p.replace(dense_n=most if p.dense_n > 0 else 0, lexical_n=most if p.lexical_n > 0 else 0)
    source = source_params(cfg)
    return [p] if source is None else [p, source]


def _caps(needs: list[Params], bm25: dict[str, Any]) -> PassCaps:
    return PassCaps(
        dense_n=max(p.dense_n for p in needs),
        lexical_n=max(p.lexical_n for p in needs),
        hops=max(p.hops for p in needs),
        query_floor=min(p.query_floor for p in needs),
        **bm25,
    )


def _served(configs: list[EvalConfig], sources: list[Params]) -> list[Params]:
    return [need for cfg in configs for need in _needs(cfg)] + sources


@dataclass(frozen=True)
class PassSpec:
    """One retrieval pass of an evaluation: its caps, the configurations scored on it, and the budget
    sources whose admitted candidates (a budget=graph configuration's target) are counted on it."""

    caps: PassCaps
    configs: list[EvalConfig]
    sources: list[Params]


def pass_plan(configs: list[EvalConfig]) -> list[PassSpec]:
    """The passes that score every configuration exactly as `ragx query` would score its own Params.

    A dense leg is not prefix-stable: k seeds are the exact re-scoring of an ANN pool of 1.5k (its beam
    as wide as the pool when that exceeds EF_SEARCH), so the first 100 of 347 seeds can differ from a
    query's own 100. So configurations with caps of their own (and budget sources) are scored on a
    pass of their own dense depth, one pass per depth, and only the budgeted legs, whose depth no
    query takes anyway, on the widest pass."""
    bm25 = bm25_of_pass(configs)
    own = [cfg for cfg in configs if bound(cfg) is None]
    budgeted = [cfg for cfg in configs if bound(cfg) is not None]
    sources = list(dict.fromkeys(s for cfg in budgeted if (s := source_params(cfg)) is not None))
    by_depth: dict[int, tuple[list[EvalConfig], list[Params]]] = {}
    for cfg in own:
        by_depth.setdefault(cfg.params.dense_n, ([], []))[0].append(cfg)
    for source in sources:
        by_depth.setdefault(source.dense_n, ([], []))[1].append(source)
    specs = [(cfgs, srcs) for _, (cfgs, srcs) in sorted(by_depth.items())]
    if budgeted:
        wide = pass_caps(budgeted)
        if specs and wide.dense_n <= max(p.dense_n for p in _served(*specs[-1])):  # they fit the deepest pass
            specs[-1] = ([*specs[-1][0], *budgeted], specs[-1][1])
        else:
            specs.append((budgeted, []))
    plan = [PassSpec(_caps(_served(cfgs, srcs), bm25), cfgs, srcs) for cfgs, srcs in specs]
    return plan


def fit(p: Params, c: Candidates, target: int) -> Params:
    """`p` with its caps set so that this query's candidates fill `target` without exceeding it."""
    target = max(int(target), 0)
    if p.hops > 0:
        seeds = union_size(c, p.dense_n, p.lexical_n)
        if seeds >= target:  # the budget does not even cover the seeds: a hybrid of that size
            return fit(p.replace(hops=0), c, target)
        return p.replace(max_frontier=(target - seeds) // p.hops)
    if p.dense_n > 0 and p.lexical_n > 0:
        n = equal_prefix(c, target)
        if union_size(c, n + 1, n) <= target:
            return p.replace(dense_n=n + 1, lexical_n=n)
        return p.replace(dense_n=n, lexical_n=n)
    if p.dense_n > 0:
        return p.replace(dense_n=target)
    return p.replace(lexical_n=target)


def union_size(c: Candidates, dense_n: int, lexical_n: int) -> int:
    legs = [ids[:dense_n] for ids in c.dense_ids] + [c.lexical_ids[:lexical_n]]
    return int(np.unique(np.concatenate([*legs, np.empty(0, np.int64)])).size)


def equal_prefix(c: Candidates, target: int) -> int:
    """The largest n such that the first n of every leg together hold at most `target` chunks."""
    legs = [*c.dense_ids, c.lexical_ids]
    ids = np.concatenate([*legs, np.empty(0, np.int64)])
    if ids.size == 0:
        return target
    ranks = np.concatenate([np.arange(len(leg)) for leg in legs])
    by_rank = np.argsort(ranks, kind="stable")
    _, first = np.unique(ids[by_rank], return_index=True)
    first_rank = np.sort(ranks[by_rank][first])   # the rank at which each chunk first enters
    # union(n) = #chunks entering at rank < n; it is non-decreasing in n, so the answer is where it
    # passes `target`: one below the rank of the (target+1)-th chunk, or every rank when it never does.
    if len(first_rank) <= target:
        return max(len(leg) for leg in legs)
    return int(first_rank[target])
