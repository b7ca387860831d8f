"""The second stage of an index run: the derived arrays of the new generation, from a ChangeSet.

vectors (vectors.npy, float16, is the source of truth; hnswlib holds its own float32 copy for ANN) -> the kNN
lists -> the similarity graph -> communities. A full run computes them all. An incremental run
repairs them where the change reaches (repair.py): the kNN lists that change (exactly what a full
rebuild would give while that is cheap), the graph rows they touch (a delta on the previous
generation's graph), and communities for new chunks (Leiden over the whole graph while the index
is small or when the graph is compacted). `write` puts them in a new generation folder, complete
before any commit; a small change adds a delta to the previous generation's vectors, HNSW file and
graph instead of rewriting them (stored_vectors.py, graph.py).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Callable, ContextManager, Iterator

import numpy as np

from ..config import Settings
from ..errors import FULL_RUN, CorruptIndexError, ManifestMismatchError
from ..lookup import find_sorted, ids_minus, union_ids
from .communities import LEIDEN_EVERY_RUN_MAX, NO_COMMUNITY, leiden
from .graph import Graph, delta_budget, pair_weights, top_k_lists, undirected
from .layout import Layout
from .lexicon import LexiconPart
from .plan import ChangeSet
from .repair import assign_communities, exact_is_cheap, repair_knn
from .snapshot import LexiconFiles, Snapshot, graph_base_linkable, lexicon_parts
from .store import Store
from .stored_vectors import StoredVectors, budget
from .vectors import VectorIndex, holds_deleted
from .verified import CHUNK_LISTS, DELTA, GRAPH, GRAPH_DELTA, HNSW, LEXICON, LEXICON_DELTA, VECTORS_NPY, has_postings, verify

TEXT_BLOCK = 50_000  # stored texts read back at once for BM25's postings


@dataclass
class Arrays:
    live: np.ndarray          # sorted live chunk ids
    file_ids: np.ndarray      # file id per live chunk
    vindex: VectorIndex | None  # the ANN index to save with a new base (None: the base is linked)
    stored: StoredVectors     # the vector files' rows (base + delta)
    base_from: tuple[Path, dict[str, str]] | None   # the generation whose vector base files are hard-linked
    graph: Graph
    graph_from: tuple[Path, dict[str, str]] | None  # the generation whose graph.npz is this graph's base
    community_ids: np.ndarray  # chunks whose community is (re)written ...
    community: np.ndarray     # ... and their community
    communities_whole: bool   # True: community_ids are every live chunk (Leiden ran), labels are redone
    knn_src: np.ndarray       # the kNN rows computed by this run (to insert)
    knn_dst: np.ndarray
    knn_weight: np.ndarray
    redo: np.ndarray          # chunk ids whose kNN rows are replaced (recomputed or removed)
    lexicon: LexiconFiles     # BM25's postings

    def write(self, layout: Layout, generation: int) -> dict[str, str]:
        """The generation folder, complete on disk; returns its checksums for the manifest."""
        target = layout.gen(generation)
        snap = Snapshot(target, self.file_ids, np.empty((0, 0), np.float16), self.graph, self.stored)
        return snap.write(target, self.vindex, self.base_from, self.graph_from, self.lexicon)


@dataclass
class _Vectors:
    kept_old: np.ndarray      # stored chunk ids that stay
    live: np.ndarray          # kept_old then the new ids: sorted
    new_ids: np.ndarray
    new_vecs: np.ndarray
    old: Snapshot | None      # the current generation (None: a full run)
    all_vecs: np.ndarray | None  # float32 rows following `live`, when already in memory
    ann: object               # VectorIndex, or a _LazyAnn that loads one only when asked
    stored: StoredVectors
    vindex: VectorIndex | None
    base_from: tuple[Path, dict[str, str]] | None

    def of(self, ids: np.ndarray) -> np.ndarray:
        """float32 vectors of live chunk ids (a 1-d array), read from the stored rows, not all of them."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.all_vecs is not None:
            return self.all_vecs[np.searchsorted(self.live, ids)]
        out = np.empty((len(ids), self.new_vecs.shape[1]), np.float32)
        first_new = self.new_ids[0] if len(self.new_ids) else np.iinfo(np.int64).max
        new = ids >= first_new
        out[new] = self.new_vecs[ids[new] - first_new]  # new ids are consecutive
        if (~new).any():
            assert self.old is not None
            out[~new] = self.old.vectors[self.old.positions(ids[~new])]
        return out

    def every(self) -> np.ndarray:
        """Every live vector, float32 (O(chunks): a full comparison, or a compaction, needs them)."""
        if self.all_vecs is None:
            self.all_vecs = self.of(self.live)
        return self.all_vecs


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
    live = np.concatenate([kept_old, new_ids])  # every new id exceeds every old one
    if not have_arrays or change.full:
        if not change.full and len(kept_old) + len(change.removed):
            raise ManifestMismatchError(f"index arrays are missing: {FULL_RUN}")
        vindex = VectorIndex.build(new_ids, new_vecs)
        stored = StoredVectors(new_ids, new_vecs, np.empty(0, np.int64), np.empty((0, dim), np.float32))
        return _Vectors(kept_old, live, new_ids, new_vecs, None, new_vecs, vindex, stored, vindex, None)
    checksums = manifest.get("checksums") or {}
    old = Snapshot.load(current, checksums=checksums)
    prev = old.stored
    keep_delta = find_sorted(live, prev.delta_ids)[1]  # live: sorted, each id once
    delta_ids = np.concatenate([prev.delta_ids[keep_delta], new_ids])
    dead = prev.dead(live)
    # small change: link the base, write the delta (unless the base's ANN file cannot be opened: holds_deleted)
    if checksums and len(delta_ids) + len(dead) <= budget(len(live)) and not holds_deleted(current / HNSW):
        delta = np.concatenate([np.asarray(prev.delta[keep_delta], dtype=np.float32), new_vecs])
        stored = StoredVectors(prev.base_ids, prev.base, delta_ids, delta)
        indexed = len(prev.base_ids) - len(dead)

        def load() -> VectorIndex:
            verify(current, checksums, (HNSW,))  # read only now: a run with exact lists never opens it
            return VectorIndex.load(current / HNSW, dim).attach(dead, delta_ids, delta, indexed)

        return _Vectors(kept_old, live, new_ids, new_vecs, old, None, _LazyAnn(load), stored, None, (current, checksums))
    # a new base of every live row, copied from these files: hash every byte, whatever the run trusts
    verify(current, checksums, (*CHUNK_LISTS, VECTORS_NPY, DELTA, HNSW), trust_unchanged=False)
    made = _Vectors(kept_old, live, new_ids, new_vecs, old, None, None, prev, None, None)
    all_vecs = made.every()
    if holds_deleted(current / HNSW):  # a file the library cannot open: built again, without opening it
        vindex = VectorIndex.build(live, all_vecs)
    else:
        vindex = VectorIndex.load(current / HNSW, dim, extra_capacity=len(delta_ids))  # compact: base = every live row
        vindex.remove(dead)
        vindex.add(delta_ids, np.concatenate([np.asarray(prev.delta[keep_delta], dtype=np.float32), new_vecs]))
    # (slots the removals freed and the adds did not refill are dropped when it is saved: VectorIndex.save)
    made.ann = made.vindex = vindex
    made.stored = StoredVectors(live, all_vecs, np.empty(0, np.int64), np.empty((0, dim), np.float32))
    return made


@dataclass
class _GraphWork:
    knn: tuple[np.ndarray, np.ndarray, np.ndarray]  # the kNN rows computed by this run (src, dst, weight)
    redo: np.ndarray                                 # chunk ids whose kNN rows they replace
    graph: Graph
    graph_from: tuple[Path, dict[str, str]] | None
    changed: np.ndarray                              # chunks whose graph rows changed


def build_arrays(
    layout: Layout, store: Store, manifest: dict, change: ChangeSet, settings: Settings, dim: int,
    stage: Callable[[str], ContextManager[None]] = lambda name: nullcontext(),
) -> Arrays:
    """`stage(name)` times each step (IndexReport.stage)."""
    with stage("vectors"):
        vec = _vectors(layout, manifest, change, dim)  # damaged arrays: CorruptIndexError
    with stage("graph"):
        work = _whole_graph(vec, settings) if vec.old is None else _repaired_graph(store, vec, change, manifest, settings)
    with stage("communities"):
        community_ids, community, whole = _communities(store, work.graph, work.graph_from, vec.new_ids, work.changed, settings,
                                                       incremental=vec.old is not None)
    with stage("lexicon"):
        lexicon = _lexicon(store, manifest, change, vec)
    return Arrays(vec.live, _file_ids(vec, change), vec.vindex, vec.stored, vec.base_from, work.graph, work.graph_from,
                  community_ids, community, whole, *work.knn, work.redo, lexicon)


def _lexicon(store: Store, manifest: dict, change: ChangeSet, vec: _Vectors) -> LexiconFiles:
    """BM25's postings: a delta of the chunks added since the current generation's base (the base
    hard-linked; the previous delta's live chunks merged with this run's) while that and the deleted
    chunks stay within the vectors' budget, else a new base of every live chunk (the texts of kept
    chunks read back from the store)."""
    new_texts = [chunk.embed_text for _, chunk in change.chunks]
    checksums = manifest.get("checksums") or {}
    if vec.old is not None and has_postings(manifest):
        verify(vec.old.folder, checksums, (LEXICON, LEXICON_DELTA))  # the base is linked, the delta merged
        base_ids, delta = lexicon_parts(vec.old.folder)
        keep = find_sorted(vec.live, delta.ids)[1]
        dead = len(base_ids) - (len(vec.kept_old) - int(keep.sum()))  # a kept chunk is in the base or the delta
        if int(keep.sum()) + len(change.new_ids) + dead <= budget(len(vec.live)):
            return LexiconFiles(None, delta.merged(keep, LexiconPart.build(change.new_ids, new_texts)), (vec.old.folder, checksums))
    return LexiconFiles(LexiconPart.build(vec.live, chain(_stored_texts(store, vec.kept_old), new_texts)), LexiconPart.empty())


def _stored_texts(store: Store, ids: np.ndarray) -> Iterator[str]:
    """The indexed texts of stored chunks, in the order of `ids` (sorted), every one of them, read a
    block at a time (a million chunks' texts at once would be ~1 GB of Python strings)."""
    for start in range(0, len(ids), TEXT_BLOCK):
        wanted = ids[start : start + TEXT_BLOCK]
        found, texts = store.chunk_texts(wanted)
        if not np.array_equal(found, wanted):
            raise CorruptIndexError(f"chunks of the index arrays are missing from the store: {FULL_RUN}")
        yield from texts


def _whole_graph(vec: _Vectors, settings: Settings) -> _GraphWork:
    """A full run: every chunk's kNN list (exact, or from HNSW candidates above a size), the whole graph."""
    live, k, min_sim = vec.live, settings.graph.k, settings.graph.min_sim
    all_vecs = vec.every()
    rs, rd = top_k_lists(live, all_vecs, live, all_vecs, k, min_sim, ann=vec.vindex)
    rw = pair_weights(vec.of, rs, rd)
    good = rw >= min_sim
    rs, rd, rw = rs[good], rd[good], rw[good]
    return _GraphWork((rs, rd, rw), live, Graph.from_edges(live, *undirected(rs, rd, rw)), None, live)


def _repaired_graph(store: Store, vec: _Vectors, change: ChangeSet, manifest: dict, settings: Settings) -> _GraphWork:
    """An incremental run: the lists the change reaches (repair.py), the graph rows they touch."""
    assert vec.old is not None
    live = vec.live
    exact = exact_is_cheap(len(live))
    rep = repair_knn(store, change.removed, change.new_ids, change.new_vecs, vec.kept_old, live, vec.of,
                     vec.every() if exact else None, vec.ann, settings.graph.k, settings.graph.min_sim)
    graph, graph_from = _graph_after(vec.old, live, rep, manifest)
    return _GraphWork((rep.knn_src, rep.knn_dst, rep.knn_weight), rep.redo, graph, graph_from, rep.rows.ids)


def _graph_after(old: Snapshot, live: np.ndarray, rep, manifest: dict):
    """(graph, generation whose graph.npz is its base): the previous graph with the changed rows in its
    delta, or every row in a new base once the delta outgrows its budget (or the base predates deltas)."""
    graph = old.graph.with_rows(live, rep.rows)
    checksums = manifest.get("checksums") or {}
    if GRAPH in checksums and graph_base_linkable(old.folder) and len(graph.delta.ids) <= delta_budget(len(live)):
        return graph, (old.folder, checksums)
    verify(old.folder, checksums, (GRAPH, GRAPH_DELTA), trust_unchanged=False)  # copied into a new base: hash it
    return graph.compacted(), None


def _communities(store: Store, graph: Graph, graph_from, new_ids: np.ndarray, changed: np.ndarray, settings: Settings,
                 incremental: bool):
    """(ids, community, whole): Leiden over the whole graph while the index is small or when the graph
    was compacted (an incremental run refines the stored partition, a full run starts afresh); else
    only new chunks (and old ones whose rows `changed` that had none) get one, by their neighbours' vote."""
    if graph_from is None or len(graph.ids) <= LEIDEN_EVERY_RUN_MAX:
        a, b, w = graph.all_edges()
        start = store.community_array(graph.ids) if incremental else None
        g = settings.graph
        return graph.ids, leiden(graph.ids, a, b, w, g.leiden_resolution, g.leiden_seed, start), True
    touched_old = ids_minus(changed, new_ids)
    had_none = touched_old[store.community_array(touched_old) == NO_COMMUNITY]
    targets = union_ids(new_ids, had_none)
    return targets, assign_communities(graph, targets, store.community_array), False


def _file_ids(vec: _Vectors, change: ChangeSet) -> np.ndarray:
    """The file id of every live chunk: the current generation's for kept chunks, this run's for new ones."""
    new_file_ids = change.next_file + np.array([fi for fi, _ in change.chunks], dtype=np.int64)
    if vec.old is None:
        return new_file_ids
    # The kept chunks are the old ones less those removed: a mask, not a binary search of each (~70 ms at 1M).
    kept = np.ones(len(vec.old.ids), bool)
    pos, found = find_sorted(vec.old.ids, change.removed)
    kept[pos[found]] = False
    if not np.array_equal(vec.old.ids[kept], vec.kept_old):  # (kept_old came from another list: search)
        kept = vec.old.positions(vec.kept_old)
    return np.concatenate([vec.old.file_ids[kept], new_file_ids])
