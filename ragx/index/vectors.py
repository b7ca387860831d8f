"""Chunk vectors in hnswlib (cosine). Labels are chunk ids.

A generation's HNSW file is written only when its base vectors are (snapshot.py): between two such
writes the same file is hard-linked into each new generation, and the index loaded from it is told
what changed since (`attach`): chunks deleted since are marked deleted in memory, and chunks added
since (the delta, a few percent of the index at most) are searched exactly and merged by cosine.
So an incremental run never rewrites the HNSW file for a small change.
"""

from __future__ import annotations

import os
from pathlib import Path

import hnswlib
import numpy as np

from ..errors import CorruptIndexError
from ..lookup import find_sorted

M = 16
EF_CONSTRUCTION = 200
EF_SEARCH = 200
EF_GRAPH = 64  # candidate list when the graph asks for every chunk's neighbours (recall: bench_scale.py)
DELTA_BLOCK = 512  # query rows per exact product with the delta: 512 x 20k float32 = 40 MB


class VectorIndex:
    def __init__(self, index: hnswlib.Index, dim: int):
        self.index = index
        self.dim = dim
        self.delta_ids = np.empty(0, np.int64)             # chunks added since the file was written
        self.delta = np.empty((0, dim), np.float32)         # their unit vectors (searched exactly)
        self.indexed_live: int | None = None                # live elements of the HNSW part, when known

    def attach(self, dead: np.ndarray, delta_ids: np.ndarray, delta_vecs: np.ndarray, indexed_live: int) -> "VectorIndex":
        """What changed since the file was written: `dead` ids are hidden, `delta_ids` searched exactly."""
        self.remove(dead)
        vecs = np.asarray(delta_vecs, dtype=np.float32).reshape(-1, self.dim)
        self.delta = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)  # as hnswlib normalises
        self.delta_ids = np.asarray(delta_ids, dtype=np.int64)
        self.indexed_live = indexed_live
        return self

    @classmethod
    def empty(cls, dim: int, capacity: int) -> "VectorIndex":
        index = hnswlib.Index(space="cosine", dim=dim)
        index.init_index(max_elements=max(capacity, 16), ef_construction=EF_CONSTRUCTION, M=M)
        index.set_ef(EF_SEARCH)
        index.set_num_threads(os.cpu_count() or 1)
        return cls(index, dim)

    @classmethod
    def load(cls, path: Path, dim: int, extra_capacity: int = 0) -> "VectorIndex":
        index = hnswlib.Index(space="cosine", dim=dim)
        try:
            index.load_index(str(path), max_elements=0)
        except RuntimeError as exc:  # hnswlib's word for a damaged or truncated file
            raise CorruptIndexError(f"ANN index {path} is unreadable ({exc}): run `ragx index --full`") from None
        if extra_capacity:
            index.resize_index(index.get_current_count() + extra_capacity)
        index.set_ef(EF_SEARCH)
        index.set_num_threads(os.cpu_count() or 1)
        return cls(index, dim)

    @classmethod
    def build(cls, ids: np.ndarray, vectors: np.ndarray) -> "VectorIndex":
        made = cls.empty(vectors.shape[1], len(ids))
        made.add(ids, vectors)
        return made

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        if len(ids) == 0:
            return
        need = self.index.get_current_count() + len(ids)
        if need > self.index.get_max_elements():
            self.index.resize_index(need)
        self.index.add_items(np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64))

    def remove(self, ids: np.ndarray) -> None:
        for label in np.asarray(ids, dtype=np.int64).tolist():  # hnswlib marks one label per call
            self.index.mark_deleted(label)

    @property
    def stored(self) -> int:
        """Elements held, deleted ones included (they still cost memory and search time)."""
        return self.index.get_current_count()

    def get(self, ids: np.ndarray) -> np.ndarray:
        """Unit vectors for `ids` (hnswlib normalises on insert in cosine space), float32 (n, dim)."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((len(ids), self.dim), np.float32)
        pos, in_delta = find_sorted(self.delta_ids, ids)
        out[in_delta] = self.delta[pos[in_delta]]
        if (~in_delta).any():
            out[~in_delta] = self.index.get_items(ids[~in_delta], return_type="numpy")
        return out

    def search(self, query: np.ndarray, k: int, live: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k chunk ids and cosine similarities for one query vector, best first."""
        k = min(k, live)
        if k <= 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        self.index.set_ef(max(EF_SEARCH, k))
        labels, sims = self._nearest(np.asarray(query, dtype=np.float32).reshape(1, -1), k, live - len(self.delta_ids))
        return labels[0], sims[0].astype(np.float32)

    def knn_batch(self, vectors: np.ndarray, k: int, ef: int = 0) -> np.ndarray:
        """The k nearest stored chunk ids of each row of `vectors` (graph building), int64 (rows, k)."""
        self.index.set_ef(max(ef or EF_GRAPH, k))
        indexed = self.indexed_live if self.indexed_live is not None else self.index.get_current_count()
        return self._nearest(np.ascontiguousarray(vectors, dtype=np.float32), k, indexed)[0]

    def _nearest(self, rows: np.ndarray, k: int, indexed_live: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, cosines) of the k best per row: HNSW's candidates merged with the exact delta's."""
        kh = min(k, max(indexed_live, 0))
        if kh > 0:
            labels, dist = self.index.knn_query(rows, k=kh)
            ids, sims = labels.astype(np.int64), 1.0 - dist.astype(np.float64)
        else:
            ids, sims = np.empty((len(rows), 0), np.int64), np.empty((len(rows), 0))
        if not len(self.delta_ids):
            return ids, sims
        did, dsims = self._delta_nearest(rows, k)
        ids, sims = np.concatenate([ids, did], axis=1), np.concatenate([sims, dsims], axis=1)
        order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(ids, order, axis=1), np.take_along_axis(sims, order, axis=1)

    def _delta_nearest(self, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The exact k best of the delta per row, in blocks (a block x delta product stays small)."""
        kd = min(k, len(self.delta_ids))
        unit = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        ids, sims = np.empty((len(rows), kd), np.int64), np.empty((len(rows), kd), np.float64)
        for start in range(0, len(rows), DELTA_BLOCK):
            block = unit[start : start + DELTA_BLOCK] @ self.delta.T
            part = np.argpartition(-block, kd - 1, axis=1)[:, :kd]
            ids[start : start + DELTA_BLOCK] = self.delta_ids[part]
            sims[start : start + DELTA_BLOCK] = np.take_along_axis(block, part, axis=1)
        return ids, sims

    def save(self, path: Path) -> None:
        self.index.save_index(str(path))
