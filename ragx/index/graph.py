"""The chunk similarity graph: top-k lists (exact, or through the HNSW index at scale) and its rows,
stored as a CSR base plus a delta of the rows changed since (Graph; repair.py makes the delta).

Each chunk keeps its own top-k most similar chunks whose cosine reaches `min_sim` (the `knn` rows);
the graph is the undirected union of those lists, weight = cosine. A pair's weight is computed in one
canonical way (float64 dot of the two stored unit vectors), so it is the same number whichever side
found it and whether the run was full or incremental.

Exact lists cost rows x chunks dot products: fine for an incremental run or a corpus of tens of
thousands of chunks, quadratic for a full build of a large one (7.7e14 multiply-adds at 1M chunks).
Above EXACT_MAX_PAIRS the lists are read from the HNSW index instead: each row asks it for
ANN_CANDIDATES(k) neighbours, which are then re-scored exactly and cut to the top k exactly as the
exact path cuts (same ties, same threshold), so every stored weight is still the exact cosine and only
a neighbour HNSW misses can be missing (recall against the exact lists: scripts/bench/bench_scale.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lookup import find_sorted

BLOCK_ROWS = 512  # rows per matrix product: 512 x 100k float32 = 200 MB at most
# Rows x chunks above which top_k_lists asks the HNSW index (when given one) instead of comparing
# every pair: 4e8 is ~20k chunks for a full build (SciFact's 10,753 stay exact); an incremental run
# takes the HNSW route from a far smaller size, where it was measured cheaper (repair.EXACT_MAX_CHUNKS).
EXACT_MAX_PAIRS = 400_000_000
ANN_BLOCK = 4096  # rows per batched HNSW query: the candidate vectors are 4096 x 17 x 384 float32 = 107 MB


def ann_candidates(k: int) -> int:
    """How many HNSW neighbours each row re-scores: twice k (plus itself) lifts recall of the top k."""
    return 2 * k + 1


DELTA_MIN_ROWS, DELTA_MAX_ROWS = 4_096, 200_000


def delta_budget(live: int) -> int:
    """Graph rows the delta holds before the graph is compacted into a new base: a tenth of the chunks,
    within bounds (a one-file edit changes a few hundred to a few thousand rows)."""
    return min(DELTA_MAX_ROWS, max(DELTA_MIN_ROWS, live // 10))


PAIR_BLOCK = 16_384  # edges per block: two 16,384 x 384 float64 slabs = 100 MB, whatever the edge count


def pair_weights(vec_of, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Canonical edge weight: float64 dot of the stored (float16-valued) unit vectors.

    In blocks: both endpoints' vectors for every edge at once were 2 x edges x dim float64 (2.5 GB at
    40k chunks, ~50 GB at 1M). Each row's dot is independent of the block, so the floats are the same."""
    out = np.empty(len(a), np.float64)
    for start in range(0, len(a), PAIR_BLOCK):
        block = slice(start, start + PAIR_BLOCK)
        va = vec_of(a[block]).astype(np.float64)
        vb = vec_of(b[block]).astype(np.float64)
        out[block] = np.einsum("ij,ij->i", va, vb)
    return out


def top_k_lists(
    row_ids: np.ndarray, row_vecs: np.ndarray, all_ids: np.ndarray, all_vecs: np.ndarray, k: int, min_sim: float,
    ann=None,
) -> tuple[np.ndarray, np.ndarray]:
    """For each row, its k most similar other chunks with cosine >= min_sim: (src, dst) id arrays.

    Ties are broken by the smaller chunk id so the lists do not depend on block layout. `ann` (a
    VectorIndex over exactly `all_ids`) is used when rows x chunks exceeds EXACT_MAX_PAIRS.
    """
    if ann is not None and len(row_ids) * len(all_ids) > EXACT_MAX_PAIRS:
        vec_of = lambda ids: all_vecs[np.searchsorted(all_ids, ids)]  # noqa: E731
        return approximate_top_k_lists(row_ids, row_vecs, vec_of, len(all_ids), k, min_sim, ann)
    srcs, dsts = [], []
    kk = min(k + 1, len(all_ids))
    for start in range(0, len(row_ids), BLOCK_ROWS):
        ids = row_ids[start : start + BLOCK_ROWS]
        sims = row_vecs[start : start + BLOCK_ROWS] @ all_vecs.T
        sims[all_ids[None, :] == ids[:, None]] = -np.inf  # never your own neighbour
        if kk < len(all_ids):
            part = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
        else:
            part = np.broadcast_to(np.arange(len(all_ids)), (len(ids), len(all_ids)))
        src, dst = best_of_candidates(ids, all_ids[part], np.take_along_axis(sims, part, axis=1), k, min_sim)
        srcs.append(src)
        dsts.append(dst)
    return _joined(srcs, dsts)


def approximate_top_k_lists(
    row_ids: np.ndarray, row_vecs: np.ndarray, vec_of, chunks: int, k: int, min_sim: float, ann,
) -> tuple[np.ndarray, np.ndarray]:
    """top_k_lists from HNSW candidates, re-scored exactly: O(rows x log chunks) instead of O(rows x chunks).
    `vec_of(ids)`: the stored float32 vectors of a 1-d array of chunk ids; `chunks`: how many the index holds."""
    want = min(ann_candidates(k), chunks)
    srcs, dsts = [], []
    for start in range(0, len(row_ids), ANN_BLOCK):
        ids = row_ids[start : start + ANN_BLOCK]
        vecs = row_vecs[start : start + ANN_BLOCK]
        cand = ann.knn_batch(vecs, want)                                   # (rows, want) chunk ids
        cand_vecs = vec_of(cand.ravel()).reshape(*cand.shape, -1)          # (rows, want, dim)
        sims = np.einsum("rd,rcd->rc", vecs, cand_vecs)
        sims[cand == ids[:, None]] = -np.inf                                # never your own neighbour
        src, dst = best_of_candidates(ids, cand, sims, k, min_sim)
        srcs.append(src)
        dsts.append(dst)
    return _joined(srcs, dsts)


def best_of_candidates(
    ids: np.ndarray, cand_ids: np.ndarray, cand_sims: np.ndarray, k: int, min_sim: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the k best candidates (ties: the smaller chunk id, so lists do not depend on how the
    candidates were found) with cosine >= min_sim, as (src, dst) id arrays."""
    order = np.lexsort((cand_ids, -cand_sims), axis=1)[:, :k]
    top_sims = np.take_along_axis(cand_sims, order, axis=1)
    top_ids = np.take_along_axis(cand_ids, order, axis=1)
    keep = top_sims >= min_sim
    return np.repeat(ids, keep.sum(axis=1)), top_ids[keep]


def _joined(srcs: list[np.ndarray], dsts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    if not srcs:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(srcs).astype(np.int64), np.concatenate(dsts).astype(np.int64)


def gaining_rows(
    new_ids: np.ndarray, new_vecs: np.ndarray, old_ids: np.ndarray, old_vecs: np.ndarray,
    src: np.ndarray, weight: np.ndarray, k: int, min_sim: float,
) -> np.ndarray:
    """Old chunks whose top-k list would take in one of the new chunks (so must be recomputed)."""
    if len(new_ids) == 0 or len(old_ids) == 0:
        return np.empty(0, np.int64)
    # Each old chunk's list length and weakest weight, from the current rows.
    pos = np.searchsorted(old_ids, src)
    count = np.bincount(pos, minlength=len(old_ids))
    weakest = np.full(len(old_ids), np.inf)
    np.minimum.at(weakest, pos, weight)
    best_new = np.full(len(old_ids), -np.inf, dtype=np.float32)
    for start in range(0, len(new_ids), BLOCK_ROWS):
        sims = new_vecs[start : start + BLOCK_ROWS] @ old_vecs.T
        best_new = np.maximum(best_new, sims.max(axis=0))
    gains = (best_new >= min_sim) & ((count < k) | (best_new >= weakest - 1e-6))
    return old_ids[gains]


def undirected(src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique undirected edges (a < b) of directed kNN rows."""
    a = np.minimum(src, dst)
    b = np.maximum(src, dst)
    key = np.stack([a, b], axis=1)
    uniq, first = np.unique(key, axis=0, return_index=True)
    return uniq[:, 0], uniq[:, 1], weight[first]


def segments(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Indices of the concatenated ranges [starts[i], starts[i] + lens[i]), in order (no Python loop)."""
    total = int(lens.sum())
    return np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(total, dtype=np.int64)


@dataclass
class Adjacency:
    """CSR rows over chunk ids: the neighbours of ids[i] are nbr[indptr[i]:indptr[i+1]]."""

    ids: np.ndarray      # int64, sorted: the chunks these rows belong to
    indptr: np.ndarray   # int64 (len(ids) + 1)
    nbr: np.ndarray      # int64 chunk ids
    weight: np.ndarray   # float64, same as the store's edge weight

    @classmethod
    def empty(cls) -> "Adjacency":
        return cls(np.empty(0, np.int64), np.zeros(1, np.int64), np.empty(0, np.int64), np.empty(0, np.float64))

    @classmethod
    def of_rows(cls, ids: np.ndarray, a: np.ndarray, b: np.ndarray, w: np.ndarray) -> "Adjacency":
        """Rows for `ids` (sorted) from undirected edges (a, b, w): each edge is kept at whichever of
        its ends are among `ids`, so the edges may reach chunks that have no row here."""
        src = np.concatenate([a, b]).astype(np.int64)
        dst = np.concatenate([b, a]).astype(np.int64)
        ww = np.concatenate([w, w]).astype(np.float64)
        pos, mine = find_sorted(ids, src)
        order = np.lexsort((dst[mine], src[mine]))
        pos, dst, ww = pos[mine][order], dst[mine][order], ww[mine][order]
        indptr = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(pos, minlength=len(ids)), out=indptr[1:])
        return cls(np.asarray(ids, np.int64), indptr, dst, ww)

    def lengths(self, pos: np.ndarray) -> np.ndarray:
        return self.indptr[pos + 1] - self.indptr[pos]


@dataclass
class Graph:
    """The similarity graph over the live chunks: a base of CSR rows (graph.npz, hard-linked between
    generations while it lasts) and a delta of rows that replace base rows or belong to chunks added
    since (graph-delta.npz). A chunk's row is its delta row if it has one, else its base row; every
    row a change touches goes to the delta, so base rows never name a chunk that is gone.
    An incremental run so rewrites the rows it touched, not the whole graph (bench_scale.py)."""

    ids: np.ndarray          # int64, sorted: every live chunk id
    base: Adjacency
    delta: Adjacency

    @classmethod
    def from_edges(cls, ids: np.ndarray, a: np.ndarray, b: np.ndarray, w: np.ndarray) -> "Graph":
        """A graph with every row in its base (a full build, or a compaction)."""
        return cls(np.asarray(ids, np.int64), Adjacency.of_rows(ids, a, b, w), Adjacency.empty())

    def check(self) -> bool:
        """Every live chunk has a row (in the delta or the base), and the CSR arrays agree in length.
        Membership in the base is one pass (np.isin, a table of ids), not a binary search per live
        chunk (~40 ms at a million, on every load); only the few not there are looked up in the delta."""
        not_in_base = self.ids[~np.isin(self.ids, self.base.ids, assume_unique=True)]
        in_delta = find_sorted(self.delta.ids, not_in_base)[1]
        return bool(in_delta.all()) and all(len(g.indptr) == len(g.ids) + 1 for g in (self.base, self.delta))

    def position(self, chunk_ids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.ids, chunk_ids)

    def _locate(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(in_delta, row in the delta, row in the base) of the chunks at positions `rows`."""
        chunk_ids = self.ids[np.asarray(rows, dtype=np.int64)]
        dpos, in_delta = find_sorted(self.delta.ids, chunk_ids)
        bpos = np.zeros(len(chunk_ids), np.int64)
        bpos[~in_delta] = np.searchsorted(self.base.ids, chunk_ids[~in_delta])
        return in_delta, dpos, bpos

    def _lengths(self, in_delta: np.ndarray, dpos: np.ndarray, bpos: np.ndarray) -> np.ndarray:
        lens = np.zeros(len(in_delta), np.int64)
        if in_delta.any():
            lens[in_delta] = self.delta.lengths(dpos[in_delta])
        if (~in_delta).any():
            lens[~in_delta] = self.base.lengths(bpos[~in_delta])
        return lens

    def edges_of(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lens, nbr, weight) of the rows at positions `rows`: row i's neighbours are the lens[i]
        entries after those of rows before it."""
        in_delta, dpos, bpos = self._locate(rows)
        lens = self._lengths(in_delta, dpos, bpos)
        offsets = np.cumsum(lens) - lens
        nbr = np.empty(int(lens.sum()), np.int64)
        weight = np.empty(len(nbr), np.float64)
        for part, which, pos in ((self.delta, in_delta, dpos), (self.base, ~in_delta, bpos)):
            if which.any():
                src = segments(part.indptr[pos[which]], lens[which])
                dst = segments(offsets[which], lens[which])
                nbr[dst], weight[dst] = part.nbr[src], part.weight[src]
        return lens, nbr, weight

    def neighbors(self, chunk_id: int) -> tuple[np.ndarray, np.ndarray]:
        i = int(self.position(np.array([chunk_id]))[0])
        if i >= len(self.ids) or self.ids[i] != chunk_id:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        _, nbr, weight = self.edges_of(np.array([i]))
        return nbr, weight

    def degrees(self) -> np.ndarray:
        """Neighbours of every live chunk (O(chunks), vectorised)."""
        return self._lengths(*self._locate(np.arange(len(self.ids))))

    @property
    def n_edges(self) -> int:
        """Half the row lengths of the live chunks, summed without locating every chunk's row (a commit
        counts them: ~50 ms at a million chunks that way): all delta rows of live chunks, and all base
        rows but those the delta replaces and, when there are any, those of chunks gone since."""
        base, delta = self.base, self.delta
        live_delta = find_sorted(self.ids, delta.ids)[1]
        ends = int(np.diff(delta.indptr)[live_delta].sum())
        pos, shadowed = find_sorted(base.ids, delta.ids[live_delta])
        counted = np.ones(len(base.ids), bool)
        counted[pos[shadowed]] = False
        # Every live chunk has a row (check()): the live ones outside the delta are base rows, so when
        # the counts agree, every base row not replaced belongs to a live chunk.
        if len(base.ids) - int(shadowed.sum()) != len(self.ids) - int(live_delta.sum()):
            counted &= np.isin(base.ids, self.ids, assume_unique=True)
        return (ends + int(np.diff(base.indptr)[counted].sum())) // 2

    def all_edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every undirected edge once (a < b), sorted by (a, b), with its weight."""
        lens, nbr, weight = self.edges_of(np.arange(len(self.ids)))
        src = np.repeat(self.ids, lens)
        keep = src < nbr
        return src[keep], nbr[keep], weight[keep]

    def compacted(self) -> "Graph":
        """The same graph with every row in the base (the delta folded in)."""
        lens, nbr, weight = self.edges_of(np.arange(len(self.ids)))
        indptr = np.zeros(len(self.ids) + 1, np.int64)
        np.cumsum(lens, out=indptr[1:])
        return Graph(self.ids, Adjacency(self.ids, indptr, nbr, weight), Adjacency.empty())

    def with_rows(self, live: np.ndarray, rows: Adjacency) -> "Graph":
        """This graph after a change: `live` the chunks now, `rows` the new rows of every chunk whose
        neighbours changed (new chunks included). Earlier delta rows of live chunks carry over."""
        keep = find_sorted(live, self.delta.ids)[1] & ~find_sorted(rows.ids, self.delta.ids)[1]  # both sorted, each id once
        kept_lens = self.delta.lengths(np.flatnonzero(keep))
        kept = segments(self.delta.indptr[np.flatnonzero(keep)], kept_lens)
        ids = np.concatenate([self.delta.ids[keep], rows.ids])
        lens = np.concatenate([kept_lens, np.diff(rows.indptr)])
        nbr = np.concatenate([self.delta.nbr[kept], rows.nbr])
        weight = np.concatenate([self.delta.weight[kept], rows.weight])
        order = np.argsort(ids, kind="stable")
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64) if len(lens) else np.empty(0, np.int64)
        take = segments(starts[order], lens[order])
        indptr = np.zeros(len(ids) + 1, np.int64)
        np.cumsum(lens[order], out=indptr[1:])
        return Graph(np.asarray(live, np.int64), self.base, Adjacency(ids[order], indptr, nbr[take], weight[take]))
