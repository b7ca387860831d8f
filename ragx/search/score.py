"""Scoring: pure numpy over a Candidates object. Same inputs -> same floats, on any machine.

    fused   = RRF of the seed rankings                        (fuse.rrf)
    heat    = propagated from the seeds along the graph        (traverse.propagate)
    pre     = (beta*heat + gamma*dense + delta*lexical) / (beta + gamma + delta), each min-max normalised
    final   = (alpha*rerank + beta*heat + gamma*dense + delta*lexical) / (alpha + beta + gamma + delta)

The candidates are every admitted node. Without rerank scores alpha drops out (the other weights
renormalise). The pre-score picks the reranker's shortlist; should beta, gamma and delta all be 0,
it weighs the three signals equally, so the shortlist is never chosen by a constant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .candidates import Candidates
from .fuse import rrf
from .link_edges import link_boost
from .params import Params
from .traverse import Trace, propagate


@dataclass
class Ranking:
    order: np.ndarray      # local positions of the candidates, best first
    score: np.ndarray      # final score per node (NaN where not a candidate)
    fused: np.ndarray      # RRF per node
    trace: Trace
    reranked: bool         # whether rerank scores entered the final score


def minmax(x: np.ndarray) -> np.ndarray:
    """Scale to [0, 1] over the given values; a constant signal carries no information -> 0."""
    if len(x) == 0:
        return x.astype(np.float64)
    lo, hi = np.min(x), np.max(x)
    if not hi > lo:
        return np.zeros(len(x))
    return (x.astype(np.float64) - lo) / (hi - lo)


def _signals(c: Candidates, trace: Trace, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return minmax(trace.heat[cand]), minmax(c.qsim[cand]), minmax(c.lexical[cand])


def _pre(p: Params, heat: np.ndarray, dense: np.ndarray, lexical: np.ndarray) -> np.ndarray:
    b, g, d = p.beta, p.gamma, p.delta
    if b + g + d <= 0:
        b = g = d = 1.0
    return (b * heat + g * dense + d * lexical) / (b + g + d)


def _ranked(c: Candidates, cand: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Candidates by value, ties by smaller chunk id (stable across machines)."""
    return cand[np.lexsort((c.nodes[cand], -values))]


def shortlist(c: Candidates, p: Params) -> np.ndarray:
    """Local positions the reranker should score: the best `p.shortlist` by pre-score."""
    fused = rrf(c, p)
    trace = propagate(c, p, fused)
    cand = trace.admitted
    pre = _pre(p, *_signals(c, trace, cand))
    return _ranked(c, cand, pre)[: p.shortlist]


def score(c: Candidates, p: Params) -> Ranking:
    fused = rrf(c, p)
    trace = propagate(c, p, fused)
    cand = trace.admitted
    heat, dense, lexical = _signals(c, trace, cand)
    raw_rerank = c.rerank[cand]
    scored = ~np.isnan(raw_rerank)
    reranked = p.alpha > 0 and bool(scored.any())
    if reranked:
        rr = np.zeros(len(cand))
        rr[scored] = minmax(raw_rerank[scored])  # unscored candidates get the lowest rerank value
        total = p.alpha + p.beta + p.gamma + p.delta
        values = (p.alpha * rr + p.beta * heat + p.gamma * dense + p.delta * lexical) / total
    else:
        values = _pre(p, heat, dense, lexical)
    values = link_boost(c.file_ids[cand], values, c.link_pairs, p.link_weight)  # [ranking] link edges
    out = np.full(len(c.nodes), np.nan)
    out[cand] = values
    return Ranking(_ranked(c, cand, values), out, fused, trace, reranked)


def rank_files(c: Candidates, r: Ranking, p: Params) -> tuple[np.ndarray, np.ndarray]:
    """Files by the sum of their best `file_chunks` chunk scores: (file ids, scores), best first.

    Ties go to the file whose best chunk ranks higher.
    """
    order = r.order
    if len(order) == 0:
        return np.empty(0, np.int64), np.empty(0)
    files = c.file_ids[order]
    # `order` is already best-first, so a stable sort by file keeps each file's chunks best-first.
    by_file = np.argsort(files, kind="stable")
    f_sorted = files[by_file]
    starts = np.flatnonzero(np.r_[True, f_sorted[1:] != f_sorted[:-1]])
    rank_in_file = np.arange(len(f_sorted)) - np.repeat(starts, np.diff(np.r_[starts, len(f_sorted)]))
    keep = rank_in_file < p.file_chunks
    uniq, inv = np.unique(f_sorted, return_inverse=True)
    sums = np.bincount(inv[keep], weights=r.score[order][by_file][keep], minlength=len(uniq))
    first_pos = by_file[starts]  # position in `order` of each file's best chunk
    ranked = np.lexsort((first_pos, -sums))
    return uniq[ranked], sums[ranked]
