import numpy as np

from ragx.index.communities import NO_COMMUNITY, leiden
from ragx.index.graph import Graph, gaining_rows, pair_weights, top_k_lists, undirected


def unit(rng, n, d=16):
    v = rng.normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def brute_top_k(ids, vecs, k, min_sim):
    sims = vecs.astype(np.float64) @ vecs.T.astype(np.float64)
    out = set()
    for i, sid in enumerate(ids):
        order = sorted((j for j in range(len(ids)) if j != i), key=lambda j: (-sims[i, j], ids[j]))[:k]
        out |= {(sid, ids[j]) for j in order if sims[i, j] >= min_sim}
    return out


def test_top_k_lists_match_brute_force_across_blocks(monkeypatch):
    import ragx.index.graph as g

    monkeypatch.setattr(g, "BLOCK_ROWS", 7)  # several blocks, uneven last one
    rng = np.random.default_rng(0)
    ids = np.arange(10, 10 + 60, dtype=np.int64) * 3
    vecs = unit(rng, 60)
    src, dst = top_k_lists(ids, vecs, ids, vecs, k=5, min_sim=0.1)
    assert set(zip(src.tolist(), dst.tolist())) == brute_top_k(ids.tolist(), vecs, 5, 0.1)
    assert not np.any(src == dst)


def test_gaining_rows_finds_every_list_a_new_chunk_enters():
    rng = np.random.default_rng(1)
    ids = np.arange(1, 81, dtype=np.int64)
    vecs = unit(rng, 80)
    old, new = ids[:70], ids[70:]
    src, dst = top_k_lists(old, vecs[:70], old, vecs[:70], k=4, min_sim=0.0)
    w = pair_weights(lambda x: vecs[x - 1], src, dst)
    gains = set(gaining_rows(new, vecs[70:], old, vecs[:70], src, w, 4, 0.0).tolist())
    after_src, after_dst = top_k_lists(old, vecs[:70], ids, vecs, k=4, min_sim=0.0)
    before = {s: set(dst[src == s].tolist()) for s in old.tolist()}
    after = {s: set(after_dst[after_src == s].tolist()) for s in old.tolist()}
    changed = {s for s in old.tolist() if before[s] != after[s]}
    assert changed and changed <= gains


def test_csr_holds_each_undirected_edge_both_ways():
    src = np.array([1, 2, 3, 1])
    dst = np.array([2, 1, 1, 3])
    w = np.array([0.9, 0.9, 0.7, 0.7])
    a, b, uw = undirected(src, dst, w)
    assert list(zip(a.tolist(), b.tolist(), uw.tolist())) == [(1, 2, 0.9), (1, 3, 0.7)]
    graph = Graph.from_edges(np.array([1, 2, 3, 4]), a, b, uw)
    assert graph.n_edges == 2
    nbr, wt = graph.neighbors(1)
    assert nbr.tolist() == [2, 3] and wt.tolist() == [0.9, 0.7]
    assert graph.neighbors(4)[0].size == 0
    assert graph.neighbors(99)[0].size == 0


def test_leiden_is_deterministic_and_finds_two_cliques():
    ids = np.arange(1, 9)
    pairs = [(i, j) for i in range(1, 5) for j in range(i + 1, 5)] + [(i, j) for i in range(5, 9) for j in range(i + 1, 9)]
    pairs.append((4, 5))
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    w = np.where((a == 4) & (b == 5), 0.1, 1.0)
    first = leiden(np.append(ids, 9), a, b, w, 1.0, 42)
    assert np.array_equal(first, leiden(np.append(ids, 9), a, b, w, 1.0, 42))
    assert len(set(first[:4])) == 1 and len(set(first[4:8])) == 1 and first[0] != first[4]
    assert first[8] == NO_COMMUNITY


def test_leiden_keeps_a_starting_partition_where_moving_gains_nothing():
    """Node 5 bridges two 4-cliques with equal weights: either side is as good, so from singletons
    Leiden picks one, and from a previous partition (an incremental run's) it stays where it was."""
    pairs = [(i, j) for c in (range(1, 5), range(6, 10)) for i in c for j in c if i < j] + [(4, 5), (5, 6)]
    a, b = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    w, ids = np.ones(len(a)), np.arange(1, 10)
    cold = leiden(ids, a, b, w, 1.0, 42)
    sides = {}
    for side, bridge in (("first", 0), ("second", 1)):
        warm = leiden(ids, a, b, w, 1.0, 42, start=np.array([0, 0, 0, 0, bridge, 1, 1, 1, 1]))
        assert len(set(warm[:4])) == 1 and len(set(warm[5:])) == 1 and warm[0] != warm[5]
        sides[side] = warm[4] == warm[0]
    assert sides == {"first": True, "second": False}  # the start decided; from singletons only one of these
    assert cold[4] in (cold[0], cold[5])
    # a node without a previous community starts alone and joins a clique; none known: singletons
    new_node = leiden(ids, a, b, w, 1.0, 42, start=np.array([0, 0, 0, 0, 1, 1, 1, 1, NO_COMMUNITY]))
    assert new_node[8] == new_node[5] and new_node[4] == new_node[5]
    assert np.array_equal(leiden(ids, a, b, w, 1.0, 42, start=np.full(9, NO_COMMUNITY)), cold)


def _clustered(rng, n, d=32, centres=40):
    c = unit(rng, centres, d)
    v = c[rng.integers(0, centres, n)] + 0.35 * rng.normal(size=(n, d)).astype(np.float32) / np.sqrt(d)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def test_approximate_lists_through_hnsw_recall_the_exact_ones(monkeypatch):
    """Above EXACT_MAX_PAIRS the lists come from HNSW candidates, re-scored and cut exactly like the exact path."""
    import ragx.index.graph as g
    from ragx.index.vectors import VectorIndex

    rng = np.random.default_rng(3)
    ids = np.arange(5, 5 + 3000, dtype=np.int64) * 2
    vecs = _clustered(rng, len(ids))
    exact_src, exact_dst = top_k_lists(ids, vecs, ids, vecs, k=8, min_sim=0.3, ann=VectorIndex.build(ids, vecs))
    monkeypatch.setattr(g, "EXACT_MAX_PAIRS", 0)
    monkeypatch.setattr(g, "ANN_BLOCK", 700)  # several blocks, uneven last one
    src, dst = top_k_lists(ids, vecs, ids, vecs, k=8, min_sim=0.3, ann=VectorIndex.build(ids, vecs))
    exact = set(zip(exact_src.tolist(), exact_dst.tolist()))
    approx = set(zip(src.tolist(), dst.tolist()))
    assert len(approx & exact) / len(exact) >= 0.95
    assert not np.any(src == dst) and np.all(np.bincount(np.searchsorted(ids, src)) <= 8)
    w = pair_weights(lambda x: vecs[np.searchsorted(ids, x)], src, dst)
    assert np.all(w >= 0.3 - 1e-6)  # the same threshold on the exact cosine


def test_exact_below_the_threshold_even_with_an_index():
    """A small corpus (or an incremental run's few rows) keeps the exact lists when an index is passed."""
    from ragx.index.vectors import VectorIndex

    rng = np.random.default_rng(4)
    ids = np.arange(1, 301, dtype=np.int64)
    vecs = _clustered(rng, len(ids), d=16)
    src, dst = top_k_lists(ids, vecs, ids, vecs, k=4, min_sim=0.2, ann=VectorIndex.build(ids, vecs))
    assert set(zip(src.tolist(), dst.tolist())) == brute_top_k(ids.tolist(), vecs, 4, 0.2)


def test_edge_weights_in_blocks_are_the_same_floats_as_all_at_once(monkeypatch):
    """pair_weights works in blocks to bound memory (2 x edges x dim float64 at once was ~50 GB at 1M
    chunks); the blocks must not change a single weight."""
    import ragx.index.graph as graph

    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((300, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    a, b = rng.integers(0, 300, 1000), rng.integers(0, 300, 1000)
    at_once = np.einsum("ij,ij->i", vecs[a].astype(np.float64), vecs[b].astype(np.float64))
    monkeypatch.setattr(graph, "PAIR_BLOCK", 7)  # 143 blocks, the last one short
    assert np.array_equal(pair_weights(lambda ids: vecs[ids], a, b), at_once)


def _random_graph(rng, n):
    ids = np.sort(rng.choice(np.arange(1, 5 * n), n, replace=False)).astype(np.int64)
    a, b = rng.choice(ids, 4 * n), rng.choice(ids, 4 * n)
    keep = a != b
    return ids, *undirected(a[keep], b[keep], rng.random(int(keep.sum())))


def _degrees_counted(graph) -> int:  # every live chunk's row located and measured: the definition
    return int(graph.degrees().sum()) // 2


def test_edges_are_counted_as_every_live_row_would_count_them():
    from ragx.index.graph import Adjacency

    rng = np.random.default_rng(3)
    ids, a, b, w = _random_graph(rng, 300)
    graph = Graph.from_edges(ids, a, b, w)
    assert graph.check() and graph.n_edges == _degrees_counted(graph) == len(a)
    # rows changed since the base (a delta), new chunks, and chunks gone since the base was written
    gone = rng.choice(ids, 20, replace=False)
    new = np.arange(5 * 300 + 1, 5 * 300 + 11, dtype=np.int64)
    live = np.union1d(np.setdiff1d(ids, gone), new)
    touched = np.union1d(rng.choice(np.setdiff1d(ids, gone), 15, replace=False), new)
    ra, rb = rng.choice(live, 60), rng.choice(live, 60)
    ok = (ra != rb) & (np.isin(ra, touched) | np.isin(rb, touched))
    rows = Adjacency.of_rows(touched, *undirected(ra[ok], rb[ok], rng.random(int(ok.sum()))))
    after = graph.with_rows(live, rows)
    assert after.check() and after.n_edges == _degrees_counted(after)
    assert Graph(live[: len(live) // 2], after.base, after.delta).n_edges == _degrees_counted(Graph(live[: len(live) // 2], after.base, after.delta))
    assert not Graph(np.union1d(live, [10**6]), after.base, after.delta).check()  # a live chunk without a row
