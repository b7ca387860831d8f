"""Named configurations for side-by-side evaluation, and `--config name=preset,key=value`.

A configuration is a preset (the current defaults with some legs switched off), Params overrides,
and a candidate budget: how many chunks it may score per query.

    budget=graph   per query, as many candidates as the `graph` preset admits for that query
                   (the default for dense, bm25 and hybrid: they are compared at equal cost)
    budget=N       at most N candidates per query
    budget=own     whatever the Params' own caps give (dense_n, lexical_n, hops, max_frontier)

`bm25-ref` is not a ragx pipeline: the field's reference BM25 (bm25s, Lucene variant) ranking the
same files directly, so ragx's own lexical leg is checked against it (overrides: k1, b).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from ..errors import UsageError
from ..search.params import Params

# Each preset is the current defaults with some legs switched off, so it tracks `lab promote`.
PRESETS: dict[str, Callable[[Params], Params]] = {
    # single legs stay single: no link edges ([ranking] link_weight = 0), no anchor evidence; the hybrid
    # is the plain two-leg fusion every other configuration is measured against
    "dense": lambda p: p.replace(lexical_n=0, hops=0, rerank_weight=0.0, heat_weight=0.0, dense_weight=1.0, lexical_weight=0.0, link_weight=0.0,
                                 anchor_dense=0.0, anchor_lexical=0.0),
    "bm25": lambda p: p.replace(dense_n=0, hops=0, rerank_weight=0.0, heat_weight=0.0, dense_weight=0.0, lexical_weight=1.0, link_weight=0.0,
                                anchor_dense=0.0, anchor_lexical=0.0),
    "hybrid": lambda p: p.switched(graph=False, rerank=False).replace(anchor_dense=0.0, anchor_lexical=0.0),
    "graph": lambda p: p.switched(graph=True, rerank=False),   # the graph stage on (off by default)
    "default": lambda p: p.switched(rerank=False),             # the shipped pipeline, without a reranker
    "full": lambda p: p,
}
REFERENCE_BM25 = "bm25-ref"
BUDGET_SOURCE = "graph"          # the preset whose admitted candidates set `budget=graph`
DEFAULT_BUDGET = {"dense": BUDGET_SOURCE, "bm25": BUDGET_SOURCE, "hybrid": BUDGET_SOURCE}
DEFAULT_CONFIGS = (
    "dense",
    "bm25",
    REFERENCE_BM25,
    "hybrid",
    "hybrid-wide=hybrid,dense_n=100,lexical_n=100,budget=own",  # a plain wide hybrid, always shown
    "default",                                                  # what `ragx query` runs (own caps)
    "graph",
)
DEFAULT_REFERENCE = "hybrid"     # significance is measured against the plain hybrid at equal budget


@dataclass(frozen=True)
class ReferenceBM25:
    k1: float = 0.9
    b: float = 0.4


@dataclass(frozen=True)
class EvalConfig:
    name: str
    preset: str
    params: Params
    expand: bool
    budget: int | str | None = None         # None = own caps; an int; or BUDGET_SOURCE
    bm25: ReferenceBM25 | None = None        # set for the reference BM25 only
    source: Params | None = None             # with budget=graph: the `graph` preset's Params

    @property
    def is_reference_bm25(self) -> bool:
        return self.bm25 is not None

    def describe(self) -> dict:
        if self.bm25 is not None:
            return {"name": self.name, "preset": self.preset, "budget": "all files",
                    "bm25": {"library": "bm25s", "method": "lucene", **dataclasses.asdict(self.bm25),
                             "stemmer": "english (PyStemmer)", "stopwords": "en"}}
        return {"name": self.name, "preset": self.preset, "expand": self.expand,
                "budget": "own" if self.budget is None else self.budget, "params": dataclasses.asdict(self.params)}


def parse_config(spec: str, defaults: Params) -> EvalConfig:
    """`graph`, or `name=graph,hops=3,decay=0.7` (the preset first, then overrides)."""
    name, eq, rest = spec.partition("=")
    parts = [x.strip() for x in (rest if eq else name).split(",") if x.strip()]
    preset, overrides = parts[0] if parts else "", parts[1:]
    name = name.strip() if eq else preset
    if preset == REFERENCE_BM25:
        fields: dict[str, type] = {"k1": float, "b": float}
        return EvalConfig(name, preset, defaults, expand=False, bm25=ReferenceBM25(**_numbers(spec, overrides, fields, list(fields))))
    if preset not in PRESETS:
        raise UsageError(f"--config {spec!r}: unknown preset {preset!r} (presets: {', '.join([*PRESETS, REFERENCE_BM25])})")
    budget: int | str | None = DEFAULT_BUDGET.get(preset)
    rest_items = []
    for item in overrides:
        key, _, value = item.partition("=")
        if key.strip() == "budget":
            budget = _budget(spec, value.strip())
        else:
            rest_items.append(item)
    fields = {f.name: (int if f.type in (int, "int") else float) for f in dataclasses.fields(Params)}
    params = PRESETS[preset](defaults).replace(**_numbers(spec, rest_items, fields, [*fields, "budget"]))
    source = PRESETS[BUDGET_SOURCE](defaults) if budget == BUDGET_SOURCE else None
    return EvalConfig(name, preset, params, expand=(preset == "full"), budget=budget, source=source)


def _budget(spec: str, value: str) -> int | str | None:
    if value == "own":
        return None
    if value == BUDGET_SOURCE:
        return BUDGET_SOURCE
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise UsageError(f"--config {spec!r}: budget is a positive number, {BUDGET_SOURCE!r} or 'own', got {value!r}")


def _numbers(spec: str, items: list[str], fields: dict[str, type], known: list[str]) -> dict[str, int | float]:
    out: dict[str, int | float] = {}
    for item in items:
        key, _, value = (x.strip() for x in item.partition("="))
        if key not in fields:
            raise UsageError(f"--config {spec!r}: unknown parameter {key!r} (known: {', '.join(known)})")
        try:
            out[key] = fields[key](value)
        except ValueError:
            raise UsageError(f"--config {spec!r}: {key} needs a number, got {value!r}") from None
    return out
