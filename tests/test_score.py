"""Scoring semantics on hand-made Candidates: fusion, heat propagation rules, normalisation, files."""

from __future__ import annotations

import numpy as np
import pytest

from ragx.config import load_settings
from ragx.scoring.candidates import Candidates, PassCaps
from ragx.scoring.files import rank_files
from ragx.scoring.fuse import rrf
from ragx.scoring.score import minmax, score, shortlist
from ragx.scoring.traverse import path_of, propagate

BASE = load_settings(None).search


def make(edges, qsim, dense=(), lexical=(), lex_scores=None, file_ids=None):
    """Nodes are chunk ids 10, 20, 30, ... (local positions 0, 1, 2, ...)."""
    n = len(qsim)
    nodes = np.arange(1, n + 1, dtype=np.int64) * 10
    src = [a for a, b, _ in edges] + [b for a, b, _ in edges]
    dst = [b for a, b, _ in edges] + [a for a, b, _ in edges]
    w = [x for *_, x in edges] * 2
    order = np.lexsort((dst, src))
    src, dst = np.array(src, dtype=np.int64)[order], np.array(dst, dtype=np.int64)[order]
    w = np.array(w, dtype=np.float64)[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    lex = np.zeros(n) if lex_scores is None else np.asarray(lex_scores, dtype=np.float64)
    return Candidates(
        query="q", variants=["q"], dense_ids=[nodes[list(dense)]], lexical_ids=nodes[list(lexical)],
        nodes=nodes, file_ids=np.asarray(file_ids if file_ids is not None else np.arange(n), dtype=np.int64),
        qsim=np.asarray(qsim, dtype=np.float32), lexical=lex, indptr=indptr, nbr=dst.astype(np.int64), weight=w,
        caps=PassCaps(100, 100, 3, 0.0),
    )


def test_rrf_sums_reciprocal_ranks_over_legs():
    c = make([], [0.9, 0.8, 0.7], dense=[0, 1], lexical=[1, 2])
    fused = rrf(c, BASE.replace(rrf_k=60))
    assert fused.tolist() == pytest.approx([1 / 61, 1 / 62 + 1 / 61, 1 / 62])
    assert rrf(c, BASE.replace(rrf_k=60, dense_n=1, lexical_n=0)).tolist() == pytest.approx([1 / 61, 0, 0])


def test_heat_is_the_max_contribution_not_the_sum():
    # Two seeds both point at node 2; node 2 takes the larger push only.
    c = make([(0, 2, 0.9), (1, 2, 0.8)], [0.9, 0.9, 0.9], dense=[0, 1])
    p = BASE.replace(hops=1, decay=0.5, query_floor=0.0, rrf_k=60)
    fused = rrf(c, p)
    t = propagate(c, p, fused)
    assert t.heat[2] == pytest.approx(max(fused[0] * 0.9, fused[1] * 0.8) * 0.5)
    assert t.parent[2] == 0 and t.edge[2] == 0.9 and t.hop[2] == 1 and t.seed[2] == 0


def test_query_floor_blocks_a_neighbour_and_everything_behind_it():
    c = make([(0, 1, 0.9), (1, 2, 0.9)], [0.9, 0.2, 0.9], dense=[0])
    p = BASE.replace(hops=2, query_floor=0.35)
    t = propagate(c, p, rrf(c, p))
    assert t.hop.tolist() == [0, -1, -1]
    t = propagate(c, p.replace(query_floor=0.1), rrf(c, p))
    assert t.hop.tolist() == [0, 1, 2] and path_of(t, 2) == [0, 1, 2]


def test_frontier_cap_keeps_the_hottest():
    edges = [(0, i, 0.5 + i / 100) for i in range(1, 6)]
    c = make(edges, [0.9] * 6, dense=[0])
    p = BASE.replace(hops=1, query_floor=0.0, max_frontier=2)
    t = propagate(c, p, rrf(c, p))
    assert sorted(np.flatnonzero(t.hop == 1).tolist()) == [4, 5]


def test_a_node_is_settled_at_its_first_hop():
    # 0 - 1 - 2 and 0 - 2 directly: node 2 is hop 1 (direct edge), never re-settled at hop 2.
    c = make([(0, 1, 0.99), (1, 2, 0.99), (0, 2, 0.6)], [0.9, 0.9, 0.9], dense=[0])
    p = BASE.replace(hops=2, query_floor=0.0)
    t = propagate(c, p, rrf(c, p))
    assert t.hop.tolist() == [0, 1, 1] and t.parent[2] == 0


def test_weights_renormalise_without_rerank_and_pre_score_never_collapses():
    c = make([(0, 1, 0.9)], [0.9, 0.5, 0.1], dense=[0, 2], lexical=[2], lex_scores=[0, 0, 3.0])
    p = BASE.replace(hops=1, query_floor=0.0, rerank_weight=1.0, heat_weight=0.0, dense_weight=0.0, lexical_weight=0.0)
    r = score(c, p)
    assert not r.reranked
    assert len(set(np.round(r.score[r.order], 9))) > 1  # equal-weight fallback, not all zeros
    assert len(shortlist(c, p.replace(shortlist=2))) == 2
    r2 = score(c, p.replace(rerank_weight=0.5, heat_weight=1.0, dense_weight=1.0, lexical_weight=0.0))
    heat, dense = minmax(r2.trace.heat[r2.order]), minmax(c.qsim[r2.order])
    assert r2.score[r2.order] == pytest.approx((heat + dense) / 2)


def test_rerank_enters_when_scored():
    c = make([], [0.9, 0.8, 0.7], dense=[0, 1, 2])
    c.rerank[:] = [0.0, 1.0, 5.0]
    r = score(c, BASE.replace(rerank_weight=10.0, heat_weight=0.1, dense_weight=0.1, lexical_weight=0.0, hops=0))
    assert r.reranked and c.nodes[r.order].tolist() == [30, 20, 10]


def test_files_sum_their_best_chunks():
    c = make([], [0.9, 0.8, 0.7, 0.6, 0.5], dense=[0, 1, 2, 3, 4], file_ids=[7, 7, 7, 7, 9])
    p = BASE.replace(hops=0, lexical_n=0, heat_weight=0.0, dense_weight=1.0, lexical_weight=0.0, file_chunks=3)
    r = score(c, p)
    files, sums = rank_files(c, r, p)
    assert files.tolist() == [7, 9]
    assert sums[0] == pytest.approx(r.score[0] + r.score[1] + r.score[2])
