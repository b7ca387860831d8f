"""Chunk vectors in an HNSW index (usearch: cosine over int8 copies of the vectors). Labels are chunk ids.

The index only proposes candidates: every caller re-scores them exactly with the float16 rows of
vectors.npy (a dense query asks for `rescore_pool(k)` and keeps the best k; the graph asks for
`graph.ann_candidates(k)`). So the walk may compare quantised vectors: int8 makes the file about 40%
smaller than float16 (fewer mapped pages per query at 1M chunks) and the build ~1.5x faster, and
with the pool the dense top 100 holds as many of the exact top 100 as the float16 index's (SciFact
test queries: 0.9944 against 0.9932; scale benchmark at 100k: 0.9310 against 0.9274). A file
written as float16 (before) is read as it is.

A reader maps the file (usearch's "view") instead of loading it: opening costs milliseconds and a
search reads only the pages of the nodes and vectors it visits, as clean page cache shared by every
reader. hnswlib, used before, has no such mode: at 1M chunks it read its whole 1.6 GB file into
private memory in ~1.7 s before the first answer (scripts/bench/bench_ann.py). A writer's first change
(`add`, `remove`) loads the file into memory, writable.

A generation's HNSW file is written only when its base vectors are (snapshot.py): between two such
writes the same file is hard-linked into each new generation, and the index loaded from it is told
what changed since (`attach`): chunks deleted since are hidden (a mapped file cannot change, so
they are filtered out of the results, which ask for a few more to make up for them), and chunks
added since (the delta, a few percent of the index at most) are searched exactly and merged by
cosine. So an incremental run never rewrites the HNSW file for a small change.

A file written by hnswlib (ragx before the usearch index) is still read, whole, until the next
index run replaces it (snapshot.VECTORS_FORMAT); a change to it converts it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import struct
import sys
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..errors import FULL_RUN, CorruptIndexError
from ..lookup import find_sorted, unique_ids

M = 16
# usearch's build slows faster with N than hnswlib's at the same setting: at 200, 1.4x hnswlib's time
# at 100k and 1.8x at 300k (2 threads, bench_scale vectors); at 128 it equals hnswlib's at 200 (99.6 s
# against 104.4 s at 300k), which keeps the 1M build within the graph's 15-minute budget.
EF_CONSTRUCTION = 128
EF_SEARCH = 250  # usearch at 250 matches hnswlib's recall at 200 on the scale benchmark (bench_ann.py)
EF_GRAPH = 64  # candidate list when the graph asks for every chunk's neighbours (recall: bench_scale.py)
DELTA_BLOCK = 512  # query rows per exact product with the delta: 512 x 20k float32 = 40 MB
SCALAR = "i8"  # what the walk compares (re-scored exactly afterwards: see the module's docstring)
# A dense query's pool: asking for half as many again as it keeps lets the exact re-scoring recover
# the neighbours int8 distances put just outside the top k (at k = 100, 1.5k: 0.958 -> 0.994 of the
# exact top 100 on SciFact test; 2k gains nothing more on the scale benchmark).
POOL_FACTOR = 1.5
# An index of at most this many entries, or a search asking for a quarter of its entries or more, is
# searched exhaustively (usearch's exact mode): its multi-threaded build can leave a node of a small
# index unreachable, which a scan never misses, and there a scan costs no more than the walk.
EXHAUSTIVE_MAX = 2048
HIDDEN_MARGIN = 16  # extra results asked for per row when some stored chunks are hidden


class DeletedEntriesError(CorruptIndexError):
    """An ANN file holding deleted entries, which the ANN library cannot open (holds_deleted)."""


def rescore_pool(k: int) -> int:
    """How many candidates a dense query takes from the index to keep the best k after exact re-scoring."""
    return int(np.ceil(k * POOL_FACTOR))


def _threads() -> int:
    return os.cpu_count() or 1


def _new_index(dim: int) -> Any:
    from usearch.index import Index

    return Index(ndim=dim, metric="cos", dtype=SCALAR, connectivity=M, expansion_add=EF_CONSTRUCTION, expansion_search=EF_SEARCH)


class VectorIndex:
    def __init__(self, index: Any, dim: int, path: Path | None = None):
        self.index = index                                  # usearch Index, or a _Hnswlib (an older file)
        self.dim = dim
        self._mapped = path                                 # the file `index` maps read-only (None: in memory)
        self._has_keys = path is None                       # a mapped file is opened without its key table
        self.hidden = np.empty(0, np.int64)                 # sorted ids the mapped file holds but no longer serves
        self.delta_ids = np.empty(0, np.int64)              # chunks added since the file was written
        self.delta = np.empty((0, dim), np.float32)         # their unit vectors (searched exactly)
        self.indexed_live: int | None = None                # live elements of the HNSW part, when known

    def attach(self, dead: np.ndarray, delta_ids: np.ndarray, delta_vecs: np.ndarray, indexed_live: int) -> "VectorIndex":
        """What changed since the file was written: `dead` ids are hidden, `delta_ids` searched exactly."""
        self._hide(dead)
        vecs = np.asarray(delta_vecs, dtype=np.float32).reshape(-1, self.dim)
        self.delta = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        self.delta_ids = np.asarray(delta_ids, dtype=np.int64)
        self.indexed_live = indexed_live
        return self

    @classmethod
    def empty(cls, dim: int, capacity: int) -> "VectorIndex":
        """A new in-memory index (usearch grows as it adds: `capacity` needs no reservation)."""
        return cls(_new_index(dim), dim)

    @classmethod
    def load(cls, path: Path, dim: int, extra_capacity: int = 0) -> "VectorIndex":
        """The file mapped read-only; the first `add` or `remove` loads it writable."""
        if _Hnswlib.recognises(path):  # (a usearch file starts with its matrix's nonzero shape)
            return cls(_Hnswlib.load(path, dim), dim)
        try:
            index = _View.open(path)
        except (ValueError, RuntimeError) as exc:  # usearch's words for a file it cannot read
            raise CorruptIndexError(f"ANN index {path} is unreadable ({exc}): {FULL_RUN}") from None
        if index.ndim != dim:
            raise CorruptIndexError(f"ANN index {path} is unreadable (not {dim}-dimensional): {FULL_RUN}")
        return cls(index, dim, path)

    @classmethod
    def exact(cls, ids: np.ndarray, vectors: np.ndarray) -> "VectorIndex":
        """No graph: every chunk in the exactly searched delta (an index whose file cannot be opened)."""
        dim = vectors.shape[1]
        return cls.empty(dim, 0).attach(np.empty(0, np.int64), ids, vectors, 0)

    @classmethod
    def build(cls, ids: np.ndarray, vectors: np.ndarray) -> "VectorIndex":
        made = cls.empty(vectors.shape[1], len(ids))
        made.add(ids, vectors)
        return made

    def _writable(self) -> Any:
        """The index in memory, changeable: a mapped file is loaded, an hnswlib one converted."""
        if isinstance(self.index, _Hnswlib):
            ids = self.index.labels()
            ids = ids[~find_sorted(self.hidden, ids)[1]]
            converted = _new_index(self.dim)
            converted.add(ids, self.index.vectors(ids), threads=_threads())
            self.index, self.hidden = converted, np.empty(0, np.int64)
        elif self._mapped is not None:
            from usearch.index import Index

            loaded = Index.restore(str(self._mapped), view=False)
            if loaded is None:
                raise CorruptIndexError(f"ANN index {self._mapped} vanished while mapped: {FULL_RUN}")
            loaded.remove(self.hidden, threads=_threads())
            self.index, self._mapped, self.hidden = loaded, None, np.empty(0, np.int64)
        return self.index

    def _keyed(self) -> None:
        """A mapped file opened again with its key table, which `get` needs and a search does not."""
        if self._mapped is not None and not self._has_keys:
            from usearch.index import Index

            self.index, self._has_keys = Index.restore(str(self._mapped), view=True), True

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        if len(ids) == 0:
            return
        self._writable().add(np.asarray(ids, dtype=np.int64), np.ascontiguousarray(vectors, dtype=np.float32), threads=_threads())

    def remove(self, ids: np.ndarray) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids):
            self._writable().remove(ids, threads=_threads())

    def _hide(self, ids: np.ndarray) -> None:
        """Remove where the index is in memory; filter out of results where it is mapped."""
        ids = np.asarray(ids, dtype=np.int64)
        if self._mapped is None and not isinstance(self.index, _Hnswlib):
            self.remove(ids)
        elif len(ids):
            self.hidden = unique_ids(np.concatenate([self.hidden, ids]))  # np.union1d imports numpy.ma (lookup.py)

    @property
    def stored(self) -> int:
        """Elements held, deleted ones included (they still cost memory and search time); counted
        over every node, so for index runs only (a mapped file would be read whole)."""
        return int(self.index.stats.nodes)

    def get(self, ids: np.ndarray) -> np.ndarray:
        """The index's copies of `ids`' vectors, float32 (n, dim) (int8-rounded unless the file is
        float16: the exact values are vectors.npy's); KeyError when one is not held (or hidden)."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((len(ids), self.dim), np.float32)
        pos, in_delta = find_sorted(self.delta_ids, ids)
        out[in_delta] = self.delta[pos[in_delta]]
        rest = ids[~in_delta]
        if len(rest):
            self._keyed()
            missing = ~np.asarray(self.index.contains(rest), dtype=bool) | find_sorted(self.hidden, rest)[1]
            if missing.any():
                raise KeyError(f"{int(missing.sum())} chunk ids have no vector in the ANN index, e.g. {int(rest[missing][0])}")
            got = _stack(self.index.get(rest, dtype="f32"), self.dim)
            out[~in_delta] = got / np.maximum(np.linalg.norm(got, axis=1, keepdims=True), 1e-12)
        return out

    def search(self, query: np.ndarray, k: int, live: int) -> tuple[np.ndarray, np.ndarray]:
        """k candidate chunk ids for one query vector and their cosines as the index computes them
        (approximate for an int8 file: re-score them exactly, see rescore_pool), best first."""
        k = min(k, live)
        if k <= 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        rows = np.asarray(query, dtype=np.float32).reshape(1, -1)
        labels, sims = self._nearest(rows, k, live - len(self.delta_ids), EF_SEARCH)
        keep = labels[0] >= 0
        return labels[0][keep], sims[0][keep].astype(np.float32)

    def knn_batch(self, vectors: np.ndarray, k: int, ef: int = 0) -> np.ndarray:
        """The k nearest stored chunk ids of each row of `vectors` (graph building), int64 (rows, k);
        -1 fills a row the index could not fill (only when k approaches the number of chunks)."""
        indexed = self.indexed_live if self.indexed_live is not None else len(self.index) - len(self.hidden)
        return self._nearest(np.ascontiguousarray(vectors, dtype=np.float32), k, indexed, ef or EF_GRAPH)[0]

    def _nearest(self, rows: np.ndarray, k: int, indexed_live: int, ef: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, cosines) of the k best per row: HNSW's candidates merged with the exact delta's."""
        kh = min(k, max(indexed_live, 0))
        if kh > 0:
            ids, sims = self._ann_nearest(rows, kh, ef)
        else:
            ids, sims = np.empty((len(rows), 0), np.int64), np.empty((len(rows), 0))
        if not len(self.delta_ids):
            return ids, sims
        did, dsims = self._delta_nearest(rows, k)
        ids, sims = np.concatenate([ids, did], axis=1), np.concatenate([sims, dsims], axis=1)
        order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(ids, order, axis=1), np.take_along_axis(sims, order, axis=1)

    def _ann_nearest(self, rows: np.ndarray, k: int, ef: int) -> tuple[np.ndarray, np.ndarray]:
        """The k best visible entries per row (-1 / -inf where fewer exist): hidden entries are
        filtered out, rows they leave short are asked again for twice as many."""
        stored = len(self.index)  # entries a search can return (not `stored`: counting slots reads every node)
        ids = np.full((len(rows), k), -1, np.int64)
        sims = np.full((len(rows), k), -np.inf)
        todo, fetch = np.arange(len(rows)), min(stored, k + (min(len(self.hidden), max(HIDDEN_MARGIN, k // 4)) if len(self.hidden) else 0))
        while len(todo):
            got, dist, ok = self._query(rows[todo], fetch, max(ef, fetch))
            if len(self.hidden):
                ok &= ~find_sorted(self.hidden, got)[1]
            order = np.argsort(~ok, axis=1, kind="stable")[:, :k]  # visible first, best first
            take = min(k, order.shape[1])
            ids[todo, :take] = np.where(np.take_along_axis(ok, order, axis=1), np.take_along_axis(got, order, axis=1), -1)[:, :take]
            sims[todo, :take] = np.where(ids[todo, :take] >= 0, 1.0 - np.take_along_axis(dist, order, axis=1)[:, :take], -np.inf)
            short = ok.sum(axis=1) < k
            if fetch >= stored or not short.any():
                break
            todo, fetch = todo[short], min(stored, 2 * fetch)
        return ids, sims

    def _query(self, rows: np.ndarray, count: int, ef: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, cosine distances, filled) of `count` candidates per row from the index itself."""
        if isinstance(self.index, _Hnswlib):
            return self.index.query(rows, count, ef)
        self.index.expansion_search = ef
        exhaustive = len(self.index) <= max(EXHAUSTIVE_MAX, 4 * count)
        found = self.index.search(rows, count, threads=1 if len(rows) == 1 else _threads(), exact=exhaustive)
        keys = np.asarray(found.keys).reshape(len(rows), -1)
        counts = getattr(found, "counts", None)  # a one-row search answers Matches: only its found keys
        counts = np.asarray(counts).reshape(-1, 1) if counts is not None else np.full((1, 1), keys.shape[1])
        filled = np.arange(keys.shape[1])[None, :] < counts
        dist = np.nan_to_num(np.asarray(found.distances, dtype=np.float64).reshape(len(rows), -1), nan=2.0)
        return keys.astype(np.int64), dist, filled

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

    def _rebuilt(self, index: Any) -> Any:
        """A new index of `index`'s live entries, without its deleted slots. Built from its own int8
        copies, which are what a build from the float vectors would compare anyway."""
        keys = np.asarray(index.keys, dtype=np.int64)
        fresh = _new_index(self.dim)
        if len(keys):
            fresh.add(keys, _stack(index.get(keys, dtype="f32"), self.dim), threads=_threads())
        self.index = fresh
        return fresh

    def save(self, path: Path) -> None:
        """Write the index as a usearch file (a mapped or hnswlib index is loaded/converted first)."""
        index = self._writable()
        if int(index.stats.nodes) > len(index):  # slots freed by removals and not refilled (holds_deleted)
            index = self._rebuilt(index)
        try:
            index.save(str(path))
        except RuntimeError as exc:  # usearch's word for a failed write (a full disk, a size limit)
            raise OSError(f"writing {path} failed ({exc})") from None


def _compiled() -> Any:
    """usearch's compiled module without its Python package: the package's __init__ imports
    urllib.request (to download binaries) and its index module tqdm, ~60 ms of a cold query's
    ~350 ms on a slow machine, while a reader needs only the compiled index. As the package does, the
    SIMD library is loaded into the global symbol namespace first (the module links against it).
    Anything unexpected falls back to the ordinary import; either way the one module object is
    registered as usearch.compiled, so the package imported later (by a writer) finds it."""
    loaded = sys.modules.get("usearch.compiled")
    if loaded is not None:
        return loaded
    try:
        import ctypes

        import simsimd

        ctypes.CDLL(simsimd.__file__, mode=ctypes.RTLD_GLOBAL)
        package = importlib.util.find_spec("usearch")  # located, not imported
        folders = list(package.submodule_search_locations or []) if package else []
        found = [Path(f) / f"compiled{suffix}" for f in folders for suffix in importlib.machinery.EXTENSION_SUFFIXES]
        path = next(p for p in found if p.exists())
        spec = importlib.util.spec_from_file_location("usearch.compiled", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["usearch.compiled"] = module
        spec.loader.exec_module(module)
        return module
    except (ImportError, OSError, StopIteration, AssertionError):
        sys.modules.pop("usearch.compiled", None)
        import usearch.compiled

        return usearch.compiled


class _Found(NamedTuple):
    keys: np.ndarray       # (rows, count)
    distances: np.ndarray  # (rows, count)
    counts: np.ndarray     # (rows,) results filled per row


class _View:
    """A usearch file mapped read-only through the compiled index alone (_compiled): what a query
    needs (length, dimensions, search). Opened without the key table (built by reading every node):
    only `get` needs it, which opens the file again through the package (VectorIndex._keyed)."""

    def __init__(self, compiled_index: Any):
        self._index = compiled_index

    @classmethod
    def open(cls, path: Path) -> "_View":
        compiled = _compiled()
        meta = compiled.index_dense_metadata_from_path(str(path))
        if not meta:
            raise ValueError("no usearch header")
        if int(meta.get("count_deleted", 0)) > 0:  # never handed to the library (holds_deleted)
            raise DeletedEntriesError(f"ANN index {path} holds deleted entries, which usearch cannot open: "
                                      "run `ragx index` to rewrite it")
        index = compiled.Index(ndim=meta["dimensions"], dtype=meta["kind_scalar"], metric_kind=meta["kind_metric"],
                               connectivity=M, expansion_add=EF_CONSTRUCTION, expansion_search=EF_SEARCH,
                               enable_key_lookups=False)
        index.view_index_from_path(str(path), None)
        return cls(index)

    def __len__(self) -> int:
        return len(self._index)

    @property
    def ndim(self) -> int:
        return int(self._index.ndim)

    @property
    def expansion_search(self) -> int:
        return int(self._index.expansion_search)

    @expansion_search.setter
    def expansion_search(self, ef: int) -> None:
        self._index.expansion_search = ef

    def search(self, rows: np.ndarray, count: int, *, threads: int, exact: bool) -> _Found:
        keys, distances, counts, *_ = self._index.search_many(np.ascontiguousarray(rows, dtype=np.float32), count, exact, threads)
        return _Found(np.asarray(keys), np.asarray(distances), np.asarray(counts))


def holds_deleted(path: Path) -> bool:
    """Whether a usearch file holds deleted entries (slots a removal freed and no add reused). usearch
    2.23 cannot open such a file, mapped or loaded: after reading it, the index reserves room for
    `capacity` vector pointers (the live count, or with key lookups on, its key table's capacity) and
    copies the pointers of every slot into it, deleted ones too. When the slots outnumber that room it
    writes past the buffer (valgrind: invalid writes in index_dense_gt::try_reserve, called from
    view_index_from_path) and the corrupted heap aborts the process (`free(): corrupted unsorted
    chunks`; ../shared/repro/usearch-view-abort: 5,524 slots, 38 deleted). So ragx never writes one
    (VectorIndex.save) and never opens one (VectorIndex.load). Reads only the file's 64-byte header;
    False for a file it cannot read (VectorIndex.load then says the file is unreadable)."""
    if _Hnswlib.recognises(path):
        return False
    try:
        meta = _compiled().index_dense_metadata_from_path(str(path))
    except (ValueError, RuntimeError):
        return False
    return bool(meta) and int(meta.get("count_deleted", 0)) > 0


def _stack(rows: Any, dim: int) -> np.ndarray:
    """usearch's `get` of many keys (a tuple of rows) as one float32 (n, dim) array."""
    if isinstance(rows, np.ndarray) and rows.ndim == 2:
        return rows.astype(np.float32, copy=False)
    return np.asarray(rows, dtype=np.float32).reshape(-1, dim)


class _Hnswlib:
    """An index file written by hnswlib (before the usearch index), read whole: searched and read
    back until a change or the next index run converts it. Deleted ids are hidden by the caller."""

    def __init__(self, index: Any):
        self._index = index

    @staticmethod
    def recognises(path: Path) -> bool:
        """hnswlib's header: level-0 offset 0, then capacity, count and bytes per element that fit the file."""
        try:
            with open(path, "rb") as fh:
                offset0, capacity, count, per_element = struct.unpack("<4Q", fh.read(32))
            size = os.path.getsize(path)
        except (OSError, struct.error):
            return False
        return offset0 == 0 and 0 < count <= capacity and 0 < per_element and count * per_element < size

    @classmethod
    def load(cls, path: Path, dim: int) -> "_Hnswlib":
        import hnswlib

        index = hnswlib.Index(space="cosine", dim=dim)
        try:
            index.load_index(str(path), max_elements=0)
        except RuntimeError as exc:  # hnswlib's word for a damaged or truncated file
            raise CorruptIndexError(f"ANN index {path} is unreadable ({exc}): {FULL_RUN}") from None
        index.set_num_threads(_threads())
        return cls(index)

    def __len__(self) -> int:
        return int(self._index.get_current_count())

    @property
    def stats(self) -> Any:
        return type("Stats", (), {"nodes": self._index.get_current_count()})

    def labels(self) -> np.ndarray:
        return np.sort(np.asarray(self._index.get_ids_list(), dtype=np.int64))

    def contains(self, ids: np.ndarray) -> np.ndarray:
        return np.isin(ids, self.labels())

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        return np.asarray(self._index.get_items(ids, return_type="numpy"), dtype=np.float32)

    def get(self, ids: np.ndarray, dtype: str = "f32") -> np.ndarray:
        return self.vectors(ids)

    def query(self, rows: np.ndarray, count: int, ef: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._index.set_ef(max(ef, count))
        labels, dist = self._index.knn_query(rows, k=count)
        return labels.astype(np.int64), dist.astype(np.float64), np.ones(labels.shape, bool)
