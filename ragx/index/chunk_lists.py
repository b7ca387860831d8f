"""A generation's chunk lists (the live chunk ids, the file id of each) as a base and a delta, so a
one-file edit writes a few kilobytes instead of the whole lists (24 MB at a million chunks).

    chunks.npz        ids, file_ids: the chunks live when the vector base was written; its ids are
                      exactly vectors.npy's rows (`base_ids`), so the two are written, linked and
                      compacted together (stored_vectors.budget is the rule for both)
    chunks-delta.npz  gone: base ids deleted since; ids, file_ids: the chunks added since (= delta.npy's rows)

Live chunks = the base's ids less `gone`, then the delta's ids (sorted: chunk ids only grow, so every
delta id exceeds every base id). An incremental run that links the vector base links chunks.npz too
and writes only chunks-delta.npz; the delta never outgrows the vectors' budget, since its rows are the
vectors' delta rows and the base rows they hide. Both files are written whole into the generation's
temporary folder and checksummed like the others, so a crash leaves the committed generation as it was.

Older generations: a chunks.npz with `base_ids` (written between the vector delta and this file) holds
the live lists whole and names the vector rows itself; one with `ids` and `file_ids` only and no delta
file is a base with an empty delta. The first run over the former writes a base in this format
(the file id of a base row deleted since is unknown there: -1, never read) and links it from then on.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..lookup import find_sorted
from .verified import CHUNKS, CHUNKS_DELTA

UNKNOWN_FILE = -1  # the file id recorded for a base row that was already deleted when the base was written


@dataclass(frozen=True)
class ChunkLists:
    ids: np.ndarray        # sorted live chunk ids
    file_ids: np.ndarray   # the file id of each
    base_ids: np.ndarray   # vectors.npy's rows
    delta_ids: np.ndarray  # delta.npy's rows
    slots: np.ndarray | None = None  # the stored row (base rows, then delta rows) of each live id; None: search for them


def read_chunk_lists(folder: Path) -> ChunkLists:
    """The lists of a generation folder, in any of the formats above (the caller verifies checksums).

    An index run asks three times (the ids indexed, the reusable vectors, the snapshot it builds on):
    read once (2 x 8 MB and a search at a million chunks), while neither file changes identity (inode,
    size, mtime, ctime). The arrays are read-only: every caller shares them."""
    global _LAST
    key = (os.fspath(folder), _identity(folder / CHUNKS), _identity(folder / CHUNKS_DELTA))
    last = _LAST  # one read of the pair: a server's search and index threads may both be here
    if last is not None and last[0] == key:
        return last[1]
    lists = _read_chunk_lists(folder)
    for array in (lists.ids, lists.file_ids, lists.base_ids, lists.delta_ids, lists.slots):
        if array is not None:
            array.setflags(write=False)
    _LAST = (key, lists)  # replaced whole, never changed in place
    return lists


_LAST: tuple | None = None  # (the key of the lists last read, those lists)


def _identity(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _read_chunk_lists(folder: Path) -> ChunkLists:
    with np.load(folder / CHUNKS) as z:
        base_ids, base_files = z["ids"], z["file_ids"]
        if "base_ids" in z.files:  # the lists whole, as written before this file existed
            return ChunkLists(base_ids, base_files, z["base_ids"], z["delta_ids"])
    if not (folder / CHUNKS_DELTA).exists():
        return ChunkLists(base_ids, base_files, base_ids, np.empty(0, np.int64), np.arange(len(base_ids)))
    with np.load(folder / CHUNKS_DELTA) as z:
        gone, delta_ids, delta_files = z["gone"], z["ids"], z["file_ids"]
    keep = np.ones(len(base_ids), bool)
    pos, found = find_sorted(base_ids, gone)
    if not found.all():
        raise ValueError("the chunk delta deletes chunks its base does not hold")
    keep[pos] = False
    ids = np.concatenate([base_ids[keep], delta_ids])
    if len(ids) > 1 and not (ids[1:] > ids[:-1]).all():
        raise ValueError("the chunk lists are not sorted")
    slots = np.concatenate([np.flatnonzero(keep), len(base_ids) + np.arange(len(delta_ids))])
    return ChunkLists(ids, np.concatenate([base_files[keep], delta_files]), base_ids, delta_ids, slots)


def base_linkable(folder: Path) -> bool:
    """Whether a generation's chunks.npz is a base in this format (one with `base_ids` holds the lists whole)."""
    try:
        with zipfile.ZipFile(folder / CHUNKS) as zf:
            return "base_ids.npy" not in zf.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def write_chunk_lists(tmp: Path, ids: np.ndarray, file_ids: np.ndarray, base_ids: np.ndarray, delta_ids: np.ndarray,
                      linked_base: bool) -> None:
    """Write chunks-delta.npz, and chunks.npz unless `linked_base` (the caller links the previous one).

    `ids`/`file_ids`: the live chunks; `base_ids`/`delta_ids`: the vector files' rows."""
    if not linked_base:
        pos, found = find_sorted(ids, base_ids)
        base_files = np.where(found, file_ids[pos], UNKNOWN_FILE) if len(ids) else np.full(len(base_ids), UNKNOWN_FILE)
        with open(tmp / CHUNKS, "wb") as fh:
            np.savez(fh, ids=np.asarray(base_ids, np.int64), file_ids=np.asarray(base_files, np.int64))
    live_base = len(ids) - len(delta_ids)  # live ids: the base's survivors, then the delta (every delta id is live)
    pos, found = find_sorted(ids[:live_base], base_ids)
    gone = base_ids[~found]
    with open(tmp / CHUNKS_DELTA, "wb") as fh:
        np.savez(fh, gone=np.asarray(gone, np.int64), ids=np.asarray(delta_ids, np.int64),
                 file_ids=np.asarray(file_ids[live_base:], np.int64))
