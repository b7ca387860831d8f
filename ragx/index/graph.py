"""The chunk similarity graph: top-k lists (exact, or through the HNSW index at scale) and CSR adjacency.

Each chunk keeps its own top-k most similar chunks whose cosine reaches `min_sim` (the `knn` rows);
the graph is the undirected union of those lists, weight = cosine. A pair's weight is computed in one
canonical way (float64 dot of the two stored unit vectors), so it is the same number whichever side
found it and whether the run was full or incremental.

Exact lists cost rows x chunks dot products: fine for an incremental run or a corpus of tens of
thousands of chunks, quadratic for a full build of a large one (7.7e14 multiply-adds at 1M chunks).
Above EXACT_MAX_PAIRS the lists are read from the HNSW index instead: each row asks it for
ANN_CANDIDATES(k) neighbours, which are then re-scored exactly and cut to the top k exactly as the
exact path cuts (same ties, same threshold), so every stored weight is still the exact cosine and only
a neighbour HNSW misses can be missing (recall against the exact lists: scripts/bench_scale.py).
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np

BLOCK_ROWS = 512  # rows per matrix product: 512 x 100k float32 = 200 MB at most
# Rows x chunks above which top_k_lists asks the HNSW index (when given one) instead of comparing
# every pair: 4e8 is ~20k chunks for a full build (SciFact's 10,753 stay exact), while an incremental
# run's few hundred rows stay exact up to a million chunks.
EXACT_MAX_PAIRS = 400_000_000
ANN_BLOCK = 4096  # rows per batched HNSW query: the candidate vectors are 4096 x 17 x 384 float32 = 107 MB


def ann_candidates(k: int) -> int:
    """How many HNSW neighbours each row re-scores: twice k (plus itself) lifts recall of the top k."""
    return 2 * k + 1


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
        return approximate_top_k_lists(row_ids, row_vecs, all_ids, all_vecs, k, min_sim, ann)
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
    row_ids: np.ndarray, row_vecs: np.ndarray, all_ids: np.ndarray, all_vecs: np.ndarray, k: int, min_sim: float, ann,
) -> tuple[np.ndarray, np.ndarray]:
    """top_k_lists from HNSW candidates, re-scored exactly: O(rows x log chunks) instead of O(rows x chunks)."""
    want = min(ann_candidates(k), len(all_ids))
    srcs, dsts = [], []
    for start in range(0, len(row_ids), ANN_BLOCK):
        ids = row_ids[start : start + ANN_BLOCK]
        vecs = row_vecs[start : start + ANN_BLOCK]
        cand = ann.knn_batch(vecs, want)                                   # (rows, want) chunk ids
        cand_vecs = all_vecs[np.searchsorted(all_ids, cand)]               # (rows, want, dim)
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


@dataclass
class Graph:
    """CSR adjacency over chunk ids: neighbours of ids[i] are nbr[indptr[i]:indptr[i+1]]."""

    ids: np.ndarray      # int64, sorted: every live chunk id
    indptr: np.ndarray   # int64 (len(ids) + 1)
    nbr: np.ndarray      # int64 chunk ids
    weight: np.ndarray   # float64, same as the store's edge weight

    @classmethod
    def from_edges(cls, ids: np.ndarray, a: np.ndarray, b: np.ndarray, w: np.ndarray) -> "Graph":
        src = np.concatenate([a, b])
        dst = np.concatenate([b, a])
        ww = np.concatenate([w, w])
        order = np.lexsort((dst, src))
        src, dst, ww = src[order], dst[order], ww[order]
        pos = np.searchsorted(ids, src)
        indptr = np.zeros(len(ids) + 1, dtype=np.int64)
        np.add.at(indptr, pos + 1, 1)
        return cls(ids, np.cumsum(indptr), dst.astype(np.int64), ww.astype(np.float64))

    def position(self, chunk_ids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.ids, chunk_ids)

    def neighbors(self, chunk_id: int) -> tuple[np.ndarray, np.ndarray]:
        i = int(self.position(np.array([chunk_id]))[0])
        if i >= len(self.ids) or self.ids[i] != chunk_id:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        lo, hi = self.indptr[i], self.indptr[i + 1]
        return self.nbr[lo:hi], self.weight[lo:hi]

    @property
    def n_edges(self) -> int:
        return len(self.nbr) // 2
