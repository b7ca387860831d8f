"""Chunk vectors in hnswlib (cosine). Labels are chunk ids."""

from __future__ import annotations

import os
from pathlib import Path

import hnswlib
import numpy as np

from ..errors import CorruptIndexError

M = 16
EF_CONSTRUCTION = 200
EF_SEARCH = 200
EF_GRAPH = 64  # candidate list when the graph asks for every chunk's neighbours (recall: bench_scale.py)


class VectorIndex:
    def __init__(self, index: hnswlib.Index, dim: int):
        self.index = index
        self.dim = dim

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
        if len(ids) == 0:
            return np.empty((0, self.dim), np.float32)
        return np.asarray(self.index.get_items(np.asarray(ids, dtype=np.int64), return_type="numpy"), dtype=np.float32)

    def search(self, query: np.ndarray, k: int, live: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k chunk ids and cosine similarities for one query vector, best first."""
        k = min(k, live)
        if k <= 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        self.index.set_ef(max(EF_SEARCH, k))
        labels, dist = self.index.knn_query(np.asarray(query, dtype=np.float32).reshape(1, -1), k=k)
        return labels[0].astype(np.int64), (1.0 - dist[0]).astype(np.float32)

    def knn_batch(self, vectors: np.ndarray, k: int, ef: int = 0) -> np.ndarray:
        """The k nearest stored chunk ids of each row of `vectors` (graph building), int64 (rows, k)."""
        self.index.set_ef(max(ef or EF_GRAPH, k))
        labels, _ = self.index.knn_query(np.ascontiguousarray(vectors, dtype=np.float32), k=k)
        return labels.astype(np.int64)

    def save(self, path: Path) -> None:
        self.index.save_index(str(path))
