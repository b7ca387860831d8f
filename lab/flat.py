"""Every cached pass end to end, and `ragx.scoring.score.prepare` for all of them at once.

`Flat` concatenates the passes' arrays once (node positions, edges and seed legs shifted to the
concatenation, a segment number per node). `flat_prepare` then runs RRF, propagation and the
normalised signals of one structure over every query in a few numpy calls instead of a Python call
per query: the same operations as `fuse.rrf`, `traverse.propagate`, `score.dense_signal`,
`score.lexical_signal` and `score.minmax`, applied per segment (a minimum, a maximum, a top-k per
query), so the same floats (tests/test_lab_vectorised.py holds them equal to `prepare` per pass).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragx.scoring.candidates import Candidates
from ragx.scoring.params import Params


@dataclass
class Flat:
    seg: np.ndarray        # N: query of each node
    nodes: np.ndarray      # N chunk ids
    file_ids: np.ndarray
    roles: np.ndarray
    qsim: np.ndarray       # float32, as stored
    lexical: np.ndarray
    anchor_sim: np.ndarray
    anchor_lexical: np.ndarray
    rerank: np.ndarray
    indptr: np.ndarray     # N + 1, over the concatenated edges
    nbr: np.ndarray        # global node positions
    weight: np.ndarray
    leg_pos: np.ndarray    # the seed legs' nodes, query by query, each leg in rank order (dense variants, then BM25)
    leg_rank: np.ndarray   # 1-based rank within its leg
    leg_lexical: np.ndarray  # whether the leg is BM25's
    pair_seg: np.ndarray   # the passes' linked file pairs: query, then the two file ids
    pair_a: np.ndarray
    pair_b: np.ndarray
    queries: int
    qids: list[str]
    width: int             # above every file id: (query, file) pairs are keyed query * width + file


def flatten(passes: list[Candidates]) -> Flat:
    """The passes' arrays end to end (one Python pass over the queries, once per list of passes)."""
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("seg", "nodes", "file_ids", "roles", "qsim", "lexical", "anchor_sim",
                                                         "anchor_lexical", "rerank", "indptr", "nbr", "weight", "leg_pos", "leg_rank", "leg_lexical",
                                                         "pair_seg", "pair_a", "pair_b")}
    nodes_at = edges_at = 0
    for q, c in enumerate(passes):
        legs = [*c.dense_ids, c.lexical_ids]
        pairs = np.empty((0, 2), np.int64) if c.link_pairs is None else np.asarray(c.link_pairs, np.int64).reshape(-1, 2)
        # only pairs of files the pass holds can ever join two candidates (link_boost reads no other)
        pairs = pairs[np.isin(pairs[:, 0], c.file_ids) & np.isin(pairs[:, 1], c.file_ids)]
        for key, value in (("seg", np.full(len(c.nodes), q)), ("nodes", c.nodes), ("file_ids", c.file_ids), ("roles", c.file_role),
                           ("qsim", c.qsim), ("lexical", c.lexical), ("anchor_sim", c.anchor_sim), ("anchor_lexical", c.anchor_lexical),
                           ("rerank", c.rerank), ("indptr", c.indptr[:-1] + edges_at), ("nbr", c.nbr + nodes_at), ("weight", c.weight),
                           ("leg_pos", np.concatenate([c.local(leg) for leg in legs]) + nodes_at),
                           ("leg_rank", np.concatenate([np.arange(1, len(leg) + 1) for leg in legs])),
                           ("leg_lexical", np.repeat([False] * len(c.dense_ids) + [True], [len(leg) for leg in legs])),
                           ("pair_seg", np.full(len(pairs), q)), ("pair_a", pairs[:, 0]), ("pair_b", pairs[:, 1])):
            cols[key].append(np.asarray(value))
        nodes_at += len(c.nodes)
        edges_at += int(c.indptr[-1])
    cols["indptr"].append(np.array([edges_at]))
    dtypes = {"qsim": np.float32, "anchor_sim": np.float32, "leg_lexical": bool, "roles": np.int64}
    out = {k: np.concatenate(v).astype(dtypes.get(k, np.float64 if k in ("lexical", "anchor_lexical", "rerank", "weight") else np.int64))
           if v else np.empty(0) for k, v in cols.items()}
    width = int(max((x.max(initial=-1) for x in (out["file_ids"], out["pair_a"], out["pair_b"])), default=-1)) + 1
    return Flat(**out, queries=len(passes), qids=[c.qid for c in passes], width=max(width, 1))


def per_segment(x: np.ndarray, seg: np.ndarray, reduce) -> np.ndarray:
    """`reduce` (np.minimum, np.maximum) of `x` over each run of equal `seg`, spread back to every element."""
    if not len(x):
        return x
    starts = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
    lengths = np.diff(np.r_[starts, len(x)])
    return np.repeat(reduce.reduceat(x, starts), lengths)


def minmax(x: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """`score.minmax` per segment: (x - min) / (max - min), 0 where a segment is constant."""
    lo, hi = per_segment(x, seg, np.minimum), per_segment(x, seg, np.maximum)
    live = hi > lo
    return np.where(live, (x - lo) / np.where(live, hi - lo, 1.0), 0.0)


def scaled(x: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """`score._scaled` per segment: x over its segment's maximum, 0 where that is not positive."""
    top = per_segment(x, seg, np.maximum)
    return np.where(top > 0, x / np.where(top > 0, top, 1.0), 0.0)


def fused(f: Flat, p: Params) -> np.ndarray:
    """`fuse.rrf` of every pass: each leg's contributions added in leg order, node by node."""
    out = np.zeros(len(f.nodes), dtype=np.float64)
    keep = np.where(f.leg_lexical, f.leg_rank <= p.lexical_n, f.leg_rank <= p.dense_n)
    if p.lexical_n <= 0:
        keep &= ~f.leg_lexical
    np.add.at(out, f.leg_pos[keep], 1.0 / (p.rrf_k + f.leg_rank[keep].astype(np.float64)))
    return out


def propagated(f: Flat, p: Params, fused_: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`traverse.propagate`'s heat and hop of every pass (each query's max_frontier cut on its own)."""
    n = len(f.nodes)
    heat, hop = np.zeros(n), np.full(n, -1, dtype=np.int64)
    frontier = np.flatnonzero(fused_ > 0)
    heat[frontier], hop[frontier] = fused_[frontier], 0
    for h in range(1, p.hops + 1):
        if len(frontier) == 0:
            break
        starts = f.indptr[frontier]
        lens = f.indptr[frontier + 1] - starts
        src = np.repeat(frontier, lens)
        eidx = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(int(lens.sum()))
        dst = f.nbr[eidx]
        ok = (hop[dst] < 0) & (f.qsim[dst] >= p.query_floor)
        src, dst, eidx = src[ok], dst[ok], eidx[ok]
        if len(dst) == 0:
            break
        contrib = heat[src] * f.weight[eidx] * p.decay
        # each neighbour's best contribution (which parent gave it, propagate's tie-break, does not
        # change the heat: the layout needs no parents), then each query's hottest max_frontier
        top = np.full(n, -np.inf)
        np.maximum.at(top, dst, contrib)
        reached = np.flatnonzero(top > -np.inf)
        # hottest first per query, ties to the smaller chunk id: `reached` is in place order, which within
        # a query is chunk id order, and lexsort is stable, so the ids need no key of their own
        ranked = reached[np.lexsort((-top[reached], f.seg[reached]))]
        segs = f.seg[ranked]
        at = np.flatnonzero(np.r_[True, segs[1:] != segs[:-1]])
        rank = np.arange(len(ranked)) - np.repeat(at, np.diff(np.r_[at, len(ranked)]))
        d = ranked[rank < p.max_frontier]
        heat[d], hop[d] = top[d], h
        frontier = np.sort(d)
    return heat, hop


def flat_prepare(f: Flat, p: Params) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(admitted positions, heat, dense, lexical): `prepare`'s normalised signals of every pass's admitted candidates."""
    heat, hop = propagated(f, p, fused(f, p))
    cand = np.flatnonzero(hop >= 0)
    seg = f.seg[cand]
    qsim = f.qsim[cand].astype(np.float64)
    dense = qsim if p.anchor_dense <= 0 else (1 - p.anchor_dense) * qsim + p.anchor_dense * np.fmax(qsim, f.anchor_sim[cand])
    raw, anchor = f.lexical[cand], f.anchor_lexical[cand]
    lexical = raw
    if p.anchor_lexical > 0:
        has = per_segment((anchor != 0).astype(np.int64), seg, np.maximum) > 0  # `anchor.any()` per query
        mixed = (1 - p.anchor_lexical) * scaled(raw, seg) + p.anchor_lexical * np.maximum(scaled(raw, seg), scaled(anchor, seg))
        lexical = np.where(has, mixed, raw)
    return cand, minmax(heat[cand], seg), minmax(dense, seg), minmax(lexical, seg)
