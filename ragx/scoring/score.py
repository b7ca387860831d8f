"""Scoring: pure numpy over a Candidates object. Same inputs -> same floats, on any machine.

    fused   = RRF of the seed rankings                        (fuse.rrf)
    heat    = propagated from the seeds along the graph        (traverse.propagate)
    pre     = (heat_weight*heat + dense_weight*dense + lexical_weight*lexical) / (heat_weight + dense_weight + lexical_weight), each min-max normalised
              (dense and lexical with their files' anchor evidence mixed in: dense_signal, lexical_signal)
    final   = (rerank_weight*rerank + heat_weight*heat + dense_weight*dense + lexical_weight*lexical) / (rerank_weight + heat_weight + dense_weight + lexical_weight)

The candidates are every admitted node. Without rerank scores rerank_weight drops out (the other weights
renormalise). The pre-score picks the reranker's shortlist; should heat_weight, dense_weight and lexical_weight all be 0,
it weighs the three signals equally, so the shortlist is never chosen by a constant.

Link edges (the second edge type, explicit links between files): after the final score, each candidate
gains link_weight x the best (non-negative) score among the candidates of files linked to its own file
(`link_boost`; a no-op when link_weight is 0 or the pass found no linked files). The shortlist is
chosen before that, by the pre-score alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .candidates import ROLE_DOC, ROLE_EXAMPLE, ROLE_SOURCE, ROLE_TEST, Candidates
from .fuse import rrf
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


def _signals(c: Candidates, p: Params, trace: Trace, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return minmax(trace.heat[cand]), minmax(dense_signal(c, p, cand)), minmax(lexical_signal(c, p, cand))


def dense_signal(c: Candidates, p: Params, cand: np.ndarray) -> np.ndarray:
    """The candidates' cosines, with anchor evidence mixed in: (1 - a) * cosine + a * max(cosine, the
    best anchor cosine of the candidate's file). A file nobody links to keeps its cosine."""
    qsim = c.qsim[cand].astype(np.float64)
    a = p.anchor_dense
    if a <= 0:
        return qsim
    return (1 - a) * qsim + a * np.fmax(qsim, c.anchor_sim[cand])


def lexical_signal(c: Candidates, p: Params, cand: np.ndarray) -> np.ndarray:
    """The candidates' BM25, with the BM25 of their files' anchor documents mixed in, each scaled by
    its best candidate: (1 - a) * bm25 + a * max(bm25, anchor bm25)."""
    lexical = c.lexical[cand]
    a = p.anchor_lexical
    anchor = c.anchor_lexical[cand]
    if a <= 0 or not anchor.any():
        return lexical
    lexical = _scaled(lexical)
    return (1 - a) * lexical + a * np.maximum(lexical, _scaled(anchor))


def _scaled(x: np.ndarray) -> np.ndarray:
    top = float(np.max(x)) if len(x) else 0.0
    return x / top if top > 0 else np.zeros(len(x))


def combine(p: Params, heat: np.ndarray, dense: np.ndarray, lexical: np.ndarray) -> np.ndarray:
    """The pre-score: the weighted mean of the normalised signals (equal weights when all three are 0)."""
    b, g, d = p.heat_weight, p.dense_weight, p.lexical_weight
    if b + g + d <= 0:
        b = g = d = 1.0
    return (b * heat + g * dense + d * lexical) / (b + g + d)


def _ranked(c: Candidates, cand: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Candidates by value, ties by smaller chunk id (stable across machines)."""
    return cand[np.lexsort((c.nodes[cand], -values))]


@dataclass
class Prepared:
    """What scoring computes before rerank scores exist: read by the shortlist and the final score."""

    fused: np.ndarray
    trace: Trace
    heat: np.ndarray       # min-max normalised over the admitted candidates (trace.admitted)
    dense: np.ndarray
    lexical: np.ndarray
    pre: np.ndarray        # the pre-score of each admitted candidate
    shortlist: np.ndarray  # local positions the reranker should score, best pre-score first


def prepare(c: Candidates, p: Params) -> Prepared:
    """Fusion, propagation, normalisation and the pre-score: once per query and params."""
    fused = rrf(c, p)
    trace = propagate(c, p, fused)
    cand = trace.admitted
    heat, dense, lexical = _signals(c, p, trace, cand)
    pre = combine(p, heat, dense, lexical)
    return Prepared(fused, trace, heat, dense, lexical, pre, _ranked(c, cand, pre)[: p.shortlist])


def shortlist(c: Candidates, p: Params) -> np.ndarray:
    """Local positions the reranker should score: the best `p.shortlist` by pre-score."""
    return prepare(c, p).shortlist


def score(c: Candidates, p: Params, prepared: Prepared | None = None) -> Ranking:
    """The final ranking; `prepared` (from `prepare(c, p)`) saves recomputing fusion and propagation."""
    pr = prepared if prepared is not None else prepare(c, p)
    cand = pr.trace.admitted
    raw_rerank = c.rerank[cand]
    scored = ~np.isnan(raw_rerank)
    reranked = p.rerank_weight > 0 and bool(scored.any())
    if reranked:
        rr = np.zeros(len(cand))
        rr[scored] = minmax(raw_rerank[scored])  # unscored candidates get the lowest rerank value
        total = p.rerank_weight + p.heat_weight + p.dense_weight + p.lexical_weight
        values = (p.rerank_weight * rr + p.heat_weight * pr.heat + p.dense_weight * pr.dense + p.lexical_weight * pr.lexical) / total
    else:
        values = pr.pre
    values = link_boost(c.file_ids[cand], values, c.link_pairs, p.link_weight)
    values = role_prior(c.file_role[cand], values, p)
    out = np.full(len(c.nodes), np.nan)
    out[cand] = values
    return Ranking(_ranked(c, cand, values), out, pr.fused, pr.trace, reranked)


def link_boost(file_ids: np.ndarray, values: np.ndarray, pairs: np.ndarray | None, weight: float) -> np.ndarray:
    """`values` (one per candidate, files in `file_ids`) plus `weight` x the best value among the
    files linked to each candidate's file. Unchanged when the weight is 0 or there are no links."""
    if weight <= 0 or pairs is None or len(pairs) == 0 or len(values) == 0:
        return values
    files, inv = np.unique(file_ids, return_inverse=True)
    best = np.full(len(files), -np.inf)
    np.maximum.at(best, inv, values)
    a, b = np.searchsorted(files, pairs[:, 0]), np.searchsorted(files, pairs[:, 1])
    a, b = np.minimum(a, len(files) - 1), np.minimum(b, len(files) - 1)
    present = (files[a] == pairs[:, 0]) & (files[b] == pairs[:, 1])
    a, b = a[present], b[present]
    neighbour = np.zeros(len(files))
    np.maximum.at(neighbour, a, np.maximum(best[b], 0.0))
    np.maximum.at(neighbour, b, np.maximum(best[a], 0.0))
    return values + weight * neighbour[inv]


def role_prior(roles: np.ndarray, values: np.ndarray, p: Params) -> np.ndarray:
    """Each candidate's value times its file role's weight (tests, examples, docs: p.prior_*), where
    source code is among the candidates. Where none is (a notes folder, a docs site), nothing changes:
    the weights say what answers a question about code, not how prose files rank among themselves."""
    if not len(roles) or not (roles == ROLE_SOURCE).any():
        return values
    weights = np.ones(ROLE_DOC + 1)
    weights[[ROLE_TEST, ROLE_EXAMPLE, ROLE_DOC]] = p.prior_test, p.prior_example, p.prior_doc
    return values * weights[roles]
