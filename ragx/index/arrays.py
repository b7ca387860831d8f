"""The second stage of an index run: the derived arrays of the new generation, from a ChangeSet.

vectors (vectors.npy, float16, is the source of truth; hnswlib holds its own float32 copy for ANN) -> the kNN rows of
new chunks and of the rows they touch (exactly what a full rebuild would give) -> the undirected CSR
graph -> communities. `write` puts them in a new generation folder, complete before any commit; a
small change adds a delta to the previous generation's vectors and HNSW file instead of rewriting
them (stored_vectors.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import Settings
from ..errors import ManifestMismatchError
from .communities import leiden
from .graph import Graph, gaining_rows, pair_weights, top_k_lists, undirected
from .layout import Layout
from .plan import ChangeSet
from .snapshot import HNSW, Snapshot, verify
from .store import Store
from .stored_vectors import StoredVectors, budget
from .vectors import VectorIndex

REBUILD_DELETED_SHARE = 0.25  # rebuild the HNSW file once a quarter of what it holds is deleted


@dataclass
class Arrays:
    live: np.ndarray          # sorted live chunk ids
    file_ids: np.ndarray      # file id per live chunk
    vectors: np.ndarray       # float32 row per live chunk
    vindex: VectorIndex | None  # the ANN index to save with a new base (None: the base is linked)
    stored: StoredVectors     # the vector files' rows (base + delta)
    base_from: tuple[Path, dict[str, str]] | None  # the generation whose base files are hard-linked
    graph: Graph
    community: np.ndarray     # community per live chunk
    knn_src: np.ndarray       # the kNN rows recomputed by this run (to insert)
    knn_dst: np.ndarray
    knn_weight: np.ndarray
    redo: np.ndarray          # chunk ids whose kNN rows are replaced (recomputed or removed)

    def write(self, layout: Layout, generation: int) -> dict[str, str]:
        """The generation folder, complete on disk; returns its checksums for the manifest."""
        target = layout.gen(generation)
        snap = Snapshot(target, self.file_ids, self.vectors, self.graph, self.stored)
        return snap.write(target, self.vindex, self.base_from)


@dataclass
class _Vectors:
    kept_old: np.ndarray      # stored chunk ids that stay
    all_vecs: np.ndarray      # float32, rows follow `live` (kept_old then new ids)
    ann: object               # VectorIndex, or a _LazyAnn that loads one only when asked
    stored: StoredVectors
    vindex: VectorIndex | None
    base_from: tuple[Path, dict[str, str]] | None


class _LazyAnn:
    """The previous generation's HNSW file with this run's changes attached, loaded on first use
    (an incremental run with exact kNN lists never needs it)."""

    def __init__(self, load):
        self._load, self._index = load, None

    def knn_batch(self, vectors: np.ndarray, k: int, ef: int = 0) -> np.ndarray:
        if self._index is None:
            self._index = self._load()
        return self._index.knn_batch(vectors, k, ef)


def _vectors(layout: Layout, manifest: dict, change: ChangeSet, dim: int) -> _Vectors:
    """This run's vectors: a delta on the current generation's base when the change is small, else a new base."""
    generation = int(manifest.get("generation", 0))
    current = layout.gen(generation)
    have_arrays = generation > 0 and (current / HNSW).exists()
    new_ids, new_vecs, kept_old = change.new_ids, change.new_vecs, change.kept_old
    if not have_arrays or change.full:
        if not change.full and len(kept_old) + len(change.removed):
            raise ManifestMismatchError("index arrays are missing: run `ragx index --full`")
        vindex = VectorIndex.build(new_ids, new_vecs)
        stored = StoredVectors(new_ids, new_vecs, np.empty(0, np.int64), np.empty((0, dim), np.float32))
        return _Vectors(np.empty(0, np.int64), new_vecs, vindex, stored, vindex, None)
    checksums = manifest.get("checksums") or {}
    old = Snapshot.load(current, checksums=checksums)
    verify(current, checksums, (HNSW,))
    kept_vecs = np.asarray(old.vectors[old.positions(kept_old)], dtype=np.float32)  # stored float16
    all_vecs = np.concatenate([kept_vecs, new_vecs])  # rows follow `live`: every new id exceeds every old one
    live = np.union1d(kept_old, new_ids)
    prev = old.stored
    keep_delta = np.isin(prev.delta_ids, live)
    delta_ids = np.concatenate([prev.delta_ids[keep_delta], new_ids])
    dead = prev.dead(live)
    if checksums and len(delta_ids) + len(dead) <= budget(len(live)):  # small change: link the base, write the delta
        delta = np.concatenate([np.asarray(prev.delta[keep_delta], dtype=np.float32), new_vecs])
        stored = StoredVectors(prev.base_ids, prev.base, delta_ids, delta)
        indexed = len(prev.base_ids) - len(dead)
        ann = _LazyAnn(lambda: VectorIndex.load(current / HNSW, dim).attach(dead, delta_ids, delta, indexed))
        return _Vectors(kept_old, all_vecs, ann, stored, None, (current, checksums))
    vindex = VectorIndex.load(current / HNSW, dim, extra_capacity=len(delta_ids))  # compact: base = every live row
    vindex.remove(dead)
    vindex.add(delta_ids, np.concatenate([np.asarray(prev.delta[keep_delta], dtype=np.float32), new_vecs]))
    if vindex.stored > len(live) / (1 - REBUILD_DELETED_SHARE):
        vindex = VectorIndex.build(live, all_vecs)
    stored = StoredVectors(live, all_vecs, np.empty(0, np.int64), np.empty((0, dim), np.float32))
    return _Vectors(kept_old, all_vecs, vindex, stored, vindex, None)


def _knn(store: Store, change: ChangeSet, kept_old, kept_vecs, all_vecs, live, settings: Settings, vindex):
    """Surviving stored kNN rows plus the recomputed ones: (src, dst, w, recomputed rows, recomputed ids)."""
    k, min_sim = settings.graph.k, settings.graph.min_sim
    new_ids, new_vecs, removed = change.new_ids, change.new_vecs, change.removed
    if change.full:
        src = dst = np.empty(0, np.int64)
        w = np.empty(0, np.float64)
    else:
        src, dst, w = store.knn_arrays()
    touches_removed = np.isin(dst, removed)
    losing = np.setdiff1d(np.unique(src[touches_removed]), removed)
    keep_row = ~(np.isin(src, removed) | touches_removed)
    src, dst, w = src[keep_row], dst[keep_row], w[keep_row]
    gaining = gaining_rows(new_ids, new_vecs, kept_old, kept_vecs, src, w, k, min_sim)
    recompute = np.union1d(np.union1d(losing, gaining), new_ids)
    pos = np.searchsorted(live, recompute)
    rs, rd = top_k_lists(recompute, all_vecs[pos], live, all_vecs, k, min_sim, ann=vindex)  # HNSW above a size
    rw = pair_weights(lambda ids: all_vecs[np.searchsorted(live, ids)], rs, rd)
    good = rw >= min_sim
    rs, rd, rw = rs[good], rd[good], rw[good]
    stay = ~np.isin(src, recompute)
    merged = np.concatenate([src[stay], rs]), np.concatenate([dst[stay], rd]), np.concatenate([w[stay], rw])
    return merged, (rs, rd, rw), recompute


def build_arrays(layout: Layout, store: Store, manifest: dict, change: ChangeSet, settings: Settings, dim: int) -> Arrays:
    vec = _vectors(layout, manifest, change, dim)  # damaged arrays: CorruptIndexError
    kept_old, all_vecs = vec.kept_old, vec.all_vecs
    live = np.union1d(kept_old, change.new_ids)
    kept_vecs = all_vecs[: len(kept_old)]
    (src, dst, w), (rs, rd, rw), recompute = _knn(store, change, kept_old, kept_vecs, all_vecs, live, settings, vec.ann)
    a, b, uw = undirected(src, dst, w)
    graph = Graph.from_edges(live, a, b, uw)
    community = leiden(live, a, b, uw, settings.graph.leiden_resolution, settings.graph.leiden_seed)
    stored_ids, stored_files = store.chunk_files()
    new_file_ids = change.next_file + np.array([fi for fi, _ in change.chunks], dtype=np.int64)
    kept_files = stored_files[np.searchsorted(stored_ids, kept_old)]
    file_ids = np.concatenate([kept_files, new_file_ids])  # live = kept_old then new_ids, already sorted
    return Arrays(live, file_ids, all_vecs, vec.vindex, vec.stored, vec.base_from, graph, community, rs, rd, rw,
                  np.union1d(recompute, change.removed))
