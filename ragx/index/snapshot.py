"""One generation of an index's derived arrays, written whole before the commit that names it.

    gen-NNNNNN/chunks.npz    ids (sorted live chunk ids) and the file id of each
    gen-NNNNNN/vectors.npy   float16 unit vectors, row i = ids[i] (memory-mapped on load)

Vectors are stored in float16: half the disk and half the page cache of float32, and a query
process maps the file instead of holding a copy (the rows it scores are read and widened to
float32: retrieve.cosines, the exact rescoring of HNSW's candidates). Every vector is rounded to
float16 as soon as it is made (plan.py), so the graph weights and the file hold the very same
numbers whether a run is full or incremental. The HNSW index keeps its own float32 copy in memory
(normalised again by hnswlib; it has no memory-mapped mode): about 1.7 kB per chunk at 384 dimensions.
    gen-NNNNNN/graph.npz     CSR adjacency of the similarity graph over the same rows
    gen-NNNNNN/vectors.hnsw  the ANN index (labels = chunk ids), loaded on first search
"""

from __future__ import annotations

import os
import zipfile
import shutil
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import xxhash

from ..errors import CorruptIndexError
from .graph import Graph
from .vectors import VectorIndex

CHUNKS, VECTORS_NPY, GRAPH, HNSW = "chunks.npz", "vectors.npy", "graph.npz", "vectors.hnsw"
FILES = (CHUNKS, VECTORS_NPY, GRAPH, HNSW)
VECTOR_DTYPE = np.float16
VECTORS_FORMAT = "float16"  # the manifest's "vectors": an index stored otherwise is rebuilt once (vectors reused)


def as_stored(vectors: np.ndarray) -> np.ndarray:
    """float32 vectors holding exactly the values the vector file will hold."""
    return np.asarray(vectors, dtype=np.float32).astype(VECTOR_DTYPE).astype(np.float32)
HINT = "run `ragx index --full`"


def file_checksum(path: Path) -> str:
    """xxh3-128 of a file's bytes, streamed (the manifest records one per generation file)."""
    h = xxhash.xxh3_128()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def damaged(folder: Path, checksums: dict[str, str] | None, names: tuple[str, ...] = FILES) -> list[str]:
    """Files of a generation whose bytes differ from the checksums recorded at commit.

    An index written before checksums were recorded (`checksums` None) has nothing to compare."""
    if not checksums:
        return []
    out = []
    for name in names:
        try:
            ok = name in checksums and file_checksum(folder / name) == checksums[name]
        except OSError:
            ok = False
        if not ok:
            out.append(name)
    return out


def verify(folder: Path, checksums: dict[str, str] | None, names: tuple[str, ...] = FILES) -> None:
    bad = damaged(folder, checksums, names)
    if bad:
        raise CorruptIndexError(f"{', '.join(bad)} in {folder} fail their checksums (damaged): {HINT}")


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
    def load(cls, folder: Path, *, with_ann: bool = False, checksums: dict[str, str] | None = None) -> "Snapshot":
        """`with_ann`: also load the HNSW file now, so the snapshot never reads its folder again
        (a writer may delete an old generation's folder while a reader still uses it).
        `checksums`: the manifest's; every file is verified against them before it is trusted."""
        verify(folder, checksums, FILES if with_ann else (CHUNKS, VECTORS_NPY, GRAPH))
        try:
            with np.load(folder / CHUNKS) as z:
                ids, file_ids = z["ids"], z["file_ids"]
            with np.load(folder / GRAPH) as z:
                graph = Graph(ids, z["indptr"], z["nbr"], z["weight"])
            vectors = np.load(folder / VECTORS_NPY, mmap_mode="r")
        except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise CorruptIndexError(f"index arrays in {folder} are unreadable ({exc}): run `ragx index --full`") from None
        if not (len(file_ids) == len(ids) == vectors.shape[0] == len(graph.indptr) - 1):
            raise CorruptIndexError(f"index arrays in {folder} disagree in length: run `ragx index --full`")
        snap = cls(folder, file_ids, vectors, graph)
        if with_ann:
            try:
                snap._vindex = VectorIndex.load(folder / HNSW, vectors.shape[1])
            except (OSError, RuntimeError) as exc:
                raise CorruptIndexError(f"ANN index in {folder} is unreadable ({exc}): run `ragx index --full`") from None
        return snap

    @staticmethod
    def load_vectors(folder: Path, checksums: dict[str, str] | None) -> tuple[np.ndarray, np.ndarray]:
        """(sorted chunk ids, their vectors) of a generation, verified against its checksums: the
        only source vector reuse takes vectors from (the graph and HNSW files are not needed)."""
        verify(folder, checksums, (CHUNKS, VECTORS_NPY))
        try:
            with np.load(folder / CHUNKS) as z:
                ids = z["ids"]
            vectors = np.load(folder / VECTORS_NPY, mmap_mode="r")
        except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise CorruptIndexError(f"index arrays in {folder} are unreadable ({exc}): {HINT}") from None
        if vectors.ndim != 2 or vectors.shape[0] != len(ids):
            raise CorruptIndexError(f"index arrays in {folder} disagree in length: {HINT}")
        return ids, vectors

    def write(self, target: Path, vindex: VectorIndex) -> dict[str, str]:
        """Write every file into a temporary folder, fsync, then rename it to `target` in one step.

        Returns each file's checksum, for the manifest of the commit that names this generation."""
        tmp = target.with_name(f"tmp-{target.name}-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with open(tmp / CHUNKS, "wb") as fh:
            np.savez(fh, ids=self.graph.ids, file_ids=self.file_ids)
        with open(tmp / GRAPH, "wb") as fh:
            np.savez(fh, indptr=self.graph.indptr, nbr=self.graph.nbr, weight=self.graph.weight)
        with open(tmp / VECTORS_NPY, "wb") as fh:
            np.save(fh, np.ascontiguousarray(self.vectors, dtype=VECTOR_DTYPE))
        vindex.save(tmp / HNSW)
        checksums = {}
        for name in FILES:
            with open(tmp / name, "rb") as fh:
                os.fsync(fh.fileno())
            checksums[name] = file_checksum(tmp / name)
        if target.exists():  # an orphan of a run that crashed before its commit
            shutil.rmtree(target)
        os.replace(tmp, target)
        fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return checksums
