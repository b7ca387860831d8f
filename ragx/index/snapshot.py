"""One generation of an index's derived arrays, written whole before the commit that names it.

    gen-NNNNNN/chunks.npz    ids (sorted live chunk ids) and the file id of each
    gen-NNNNNN/vectors.npy   float32 unit vectors, row i = ids[i] (memory-mapped on load)
    gen-NNNNNN/graph.npz     CSR adjacency of the similarity graph over the same rows
    gen-NNNNNN/vectors.hnsw  the ANN index (labels = chunk ids), loaded on first search
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from ..errors import CorruptIndexError
from .graph import Graph
from .vectors import VectorIndex

CHUNKS, VECTORS_NPY, GRAPH, HNSW = "chunks.npz", "vectors.npy", "graph.npz", "vectors.hnsw"
FILES = (CHUNKS, VECTORS_NPY, GRAPH, HNSW)


@dataclass
class Snapshot:
    folder: Path
    file_ids: np.ndarray
    vectors: np.ndarray
    graph: Graph
    _vindex: VectorIndex | None = field(default=None, repr=False)

    @property
    def ids(self) -> np.ndarray:
        return self.graph.ids

    def positions(self, chunk_ids: np.ndarray) -> np.ndarray:
        """Row of each chunk id (ids must be live)."""
        return np.searchsorted(self.graph.ids, chunk_ids)

    @cached_property
    def vindex(self) -> VectorIndex:
        if self._vindex is not None:
            return self._vindex
        return VectorIndex.load(self.folder / HNSW, self.vectors.shape[1])

    @classmethod
    def load(cls, folder: Path) -> "Snapshot":
        try:
            with np.load(folder / CHUNKS) as z:
                ids, file_ids = z["ids"], z["file_ids"]
            with np.load(folder / GRAPH) as z:
                graph = Graph(ids, z["indptr"], z["nbr"], z["weight"])
            vectors = np.load(folder / VECTORS_NPY, mmap_mode="r")
        except (OSError, KeyError, ValueError) as exc:
            raise CorruptIndexError(f"index arrays in {folder} are unreadable ({exc}): run `ragx index --full`") from None
        if not (len(file_ids) == len(ids) == vectors.shape[0] == len(graph.indptr) - 1):
            raise CorruptIndexError(f"index arrays in {folder} disagree in length: run `ragx index --full`")
        return cls(folder, file_ids, vectors, graph)

    def write(self, target: Path, vindex: VectorIndex) -> None:
        """Write every file into a temporary folder, fsync, then rename it to `target` in one step."""
        tmp = target.with_name(f"tmp-{target.name}-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with open(tmp / CHUNKS, "wb") as fh:
            np.savez(fh, ids=self.graph.ids, file_ids=self.file_ids)
        with open(tmp / GRAPH, "wb") as fh:
            np.savez(fh, indptr=self.graph.indptr, nbr=self.graph.nbr, weight=self.graph.weight)
        with open(tmp / VECTORS_NPY, "wb") as fh:
            np.save(fh, np.ascontiguousarray(self.vectors, dtype=np.float32))
        vindex.save(tmp / HNSW)
        for name in FILES:
            with open(tmp / name, "rb") as fh:
                os.fsync(fh.fileno())
        if target.exists():  # an orphan of a run that crashed before its commit
            shutil.rmtree(target)
        os.replace(tmp, target)
        fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
