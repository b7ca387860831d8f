"""The vectorised scoring kernels against slow, obviously-correct dict-and-loop references.

`reference_rrf` and `reference_propagate` follow the written rules of ragx/scoring/fuse.py and
traverse.py one node and one edge at a time; hypothesis draws graphs, seeds and params and holds the
numpy kernels equal to them (same floats, same hops, parents, edges and seeds).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragx.scoring.candidates import Candidates, PassCaps
from ragx.scoring.fuse import rrf
from ragx.scoring.params import Params
from ragx.scoring.traverse import propagate


def reference_rrf(c: Candidates, p: Params) -> dict[int, float]:
    """chunk id -> sum over the seed legs of 1 / (rrf_k + rank)."""
    legs = [list(ids[: p.dense_n]) for ids in c.dense_ids]
    if p.lexical_n > 0:
        legs.append(list(c.lexical_ids[: p.lexical_n]))
    fused: dict[int, float] = {}
    for leg in legs:
        for rank, chunk in enumerate(leg, start=1):
            fused[int(chunk)] = fused.get(int(chunk), 0.0) + 1.0 / (p.rrf_k + float(rank))
    return fused


def reference_propagate(c: Candidates, p: Params, fused: dict[int, float]):
    """chunk id -> (heat, hop, parent id, edge weight, seed id), hop by hop with plain dicts."""
    ids = [int(x) for x in c.nodes]
    adjacency = {ids[i]: [(ids[int(c.nbr[e])], float(c.weight[e])) for e in range(c.indptr[i], c.indptr[i + 1])] for i in range(len(ids))}
    qsim = {ids[i]: float(c.qsim[i]) for i in range(len(ids))}
    state = {chunk: (f, 0, None, None, chunk) for chunk, f in fused.items() if f > 0}
    frontier = sorted(state)
    for hop in range(1, p.hops + 1):
        best: dict[int, tuple[float, int, float]] = {}  # dst -> (contribution, parent, weight)
        for src in frontier:
            for dst, w in adjacency[src]:
                if dst in state or qsim[dst] < p.query_floor:
                    continue
                contrib = state[src][0] * w * p.decay
                old = best.get(dst)
                if old is None or contrib > old[0] or (contrib == old[0] and src < old[1]):
                    best[dst] = (contrib, src, w)
        if not best:
            break
        chosen = sorted(best, key=lambda d: (-best[d][0], d))[: p.max_frontier]
        for dst in chosen:
            contrib, parent, w = best[dst]
            state[dst] = (contrib, hop, parent, w, state[parent][4])
        frontier = sorted(chosen)
    return state


@st.composite
def cases(draw):
    n = draw(st.integers(1, 14))
    nodes = np.array(sorted(draw(st.sets(st.integers(1, 500), min_size=n, max_size=n))), dtype=np.int64)
    weight = st.sampled_from([0.3, 0.55, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0])
    pairs = draw(st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda t: t[0] < t[1]), max_size=3 * n))
    edges = {pair: draw(weight) for pair in pairs}
    adj: dict[int, list[tuple[int, float]]] = {i: [] for i in range(n)}
    for (a, b), w in edges.items():
        adj[a].append((b, w))
        adj[b].append((a, w))
    indptr, nbr, wts = [0], [], []
    for i in range(n):
        for b, w in sorted(adj[i]):
            nbr.append(b)
            wts.append(w)
        indptr.append(len(nbr))
    qsim = np.array(draw(st.lists(st.sampled_from([-0.2, 0.1, 0.3, 0.5, 0.8]), min_size=n, max_size=n)), dtype=np.float32)
    leg = st.lists(st.sampled_from(list(nodes)), unique=True, max_size=n)
    dense = [np.array(draw(leg), dtype=np.int64) for _ in range(draw(st.integers(1, 3)))]
    lexical = np.array(draw(leg), dtype=np.int64)
    c = Candidates(
        query="q", variants=["q"] * len(dense), dense_ids=dense, lexical_ids=lexical, nodes=nodes,
        file_ids=np.zeros(n, np.int64), qsim=qsim, lexical=np.zeros(n), indptr=np.array(indptr, dtype=np.int64),
        nbr=np.array(nbr, dtype=np.int64), weight=np.array(wts, dtype=np.float64), caps=PassCaps(50, 50, 3, -1.0),
    )
    p = Params(
        top=10, dense_n=draw(st.integers(0, 8)), lexical_n=draw(st.integers(0, 8)), rrf_k=draw(st.sampled_from([1.0, 30.6, 60.0])),
        hops=draw(st.integers(0, 3)), decay=draw(st.sampled_from([0.25, 0.5, 1.0])), query_floor=draw(st.sampled_from([-1.0, 0.2, 0.4])),
        max_frontier=draw(st.integers(1, 6)), rerank_weight=0.0, heat_weight=1.0, dense_weight=1.0, lexical_weight=1.0, shortlist=10, file_chunks=1,
            link_weight=0.0, min_dense_evidence=0.0, min_lexical_evidence=0.0, min_lexical_share=0.0, bm25_k1=1.2, bm25_b=0.75, bm25_variant="fts5", query_features="off", anchor_dense=0.0, anchor_lexical=0.0, prior_test=1.0, prior_example=1.0, prior_doc=1.0,
    )
    return c, p


@settings(max_examples=300, deadline=None)
@given(cases())
def test_vectorised_fusion_and_propagation_equal_the_reference(case):
    c, p = case
    fused = rrf(c, p)
    want_fused = reference_rrf(c, p)
    got_fused = {int(c.nodes[i]): float(fused[i]) for i in np.flatnonzero(fused > 0)}
    assert got_fused == want_fused

    trace = propagate(c, p, fused)
    want = reference_propagate(c, p, want_fused)
    got = {}
    for i in trace.admitted.tolist():
        parent = int(c.nodes[trace.parent[i]]) if trace.parent[i] >= 0 else None
        edge = None if np.isnan(trace.edge[i]) else float(trace.edge[i])
        got[int(c.nodes[i])] = (float(trace.heat[i]), int(trace.hop[i]), parent, edge, int(c.nodes[trace.seed[i]]))
    assert got == want
