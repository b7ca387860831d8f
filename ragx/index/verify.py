"""Whole-index checks (`ragx status`, `status --deep`, doctor): the rows, the full-text index, the vectors
and the graph all describe the same chunks. Each problem is one line that ends with the fix."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CorruptIndexError
from .verified import FILES, HINT, damaged, has_postings, verify

if TYPE_CHECKING:  # pragma: no cover
    from .layout import Layout
    from .store import Store

__all__ = ["verify_index"]


def verify_index(layout: Layout, store: Store, manifest: dict, deep: bool) -> list[str]:
    """Whole-index checks: rows, FTS, vectors and graph all describe the same chunks.

    The quick form costs milliseconds and needs no numpy: the generation files a query reads are the
    ones their commit hashed (trusted by identity, as a query trusts them, hashed otherwise), and the
    chunk table's fingerprint is the one that commit recorded of the arrays. An index committed before
    fingerprints were recorded loads its arrays and compares ids instead. `deep` checks every
    generation file's checksum and every chunk text's, asks the HNSW file for every live chunk's
    vector, and compares the arrays themselves. Each problem ends with the fix."""
    problems = store.integrity_problems() if deep else []
    if deep and not problems:  # the rows read back whole only from a sound file
        problems = store.text_problems()
    if not has_postings(manifest):  # BM25 reads the FTS5 table
        fts, live = store.fts_size(), store.live_fingerprint()[0]
        if fts != live:
            problems.append(f"full-text index holds {fts} chunks, store holds {live}: {HINT}")
    orphans = store.orphan_chunks()
    if orphans:
        problems.append(f"{orphans} chunks belong to no file: {HINT}")
    folder = layout.gen(int(manifest.get("generation", 0)))
    recorded, checksums = manifest.get("chunk_fingerprint"), manifest.get("checksums")
    if not deep and recorded is not None and checksums:
        return problems + _quick_array_problems(folder, store, checksums, recorded)
    return problems + _array_problems(folder, store, manifest, deep)


def _quick_array_problems(folder: Path, store: Store, checksums: dict[str, str], recorded: list[int]) -> list[str]:
    try:  # every file a query reads, at a query's cost: a stat each, a hash where one changed
        verify(folder, checksums, FILES, trust_unchanged=True)
    except CorruptIndexError as exc:
        return [str(exc)]
    if store.live_fingerprint() != recorded:
        return [f"index arrays list other chunks than the store: {HINT}"]
    return []


def _array_problems(folder: Path, store: Store, manifest: dict, deep: bool) -> list[str]:
    """The arrays loaded and compared with the store (numpy): `deep`, or an index without a fingerprint."""
    import numpy as np

    from .snapshot import Snapshot, load_lexicon

    problems: list[str] = []
    if deep:
        bad = damaged(folder, manifest.get("checksums"))
        if bad:  # never load a damaged HNSW file: hnswlib may crash on one
            return [f"{', '.join(bad)} in {folder.name} fail their checksums (damaged): {HINT}"]
    ids, file_ids = store.chunk_files()
    try:
        snap = Snapshot.load(folder)
        if not (np.array_equal(snap.ids, ids) and np.array_equal(snap.file_ids, file_ids)):
            problems.append(f"index arrays list other chunks than the store: {HINT}")
        if snap.vectors.shape[1] != int(manifest["dim"]):
            problems.append(f"vectors have dimension {snap.vectors.shape[1]}, manifest says {manifest['dim']}: {HINT}")
        if deep:
            snap.vindex.get(ids)  # raises if any live chunk lacks a vector
            lexicon = load_lexicon(folder, snap.ids)
            if lexicon is not None and not lexicon.covers_live():
                problems.append(f"BM25's postings miss live chunks: {HINT}")
            if not np.isfinite(snap.vectors).all():
                problems.append(f"vectors hold non-finite values: {HINT}")
            in_sql = store.counted_in_sql()
            if snap.graph.n_edges != in_sql["edges"]:  # the graph file (base + delta) and the kNN rows disagree
                problems.append(f"the graph holds {snap.graph.n_edges} edges, the store {in_sql['edges']}: {HINT}")
            if store.counts() != in_sql:
                problems.append(f"recorded counts {store.counts()} differ from the store's {in_sql}: {HINT}")
    except Exception as exc:  # noqa: BLE001 - any failure here is an inconsistency to report
        problems.append(f"index arrays unreadable: {exc}")
    return problems
