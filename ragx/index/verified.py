"""A generation's files, their checksums, and which of them a reader may trust without hashing again.

Every generation file's xxh3-128 is recorded in the manifest of the commit that names the generation;
`verify` compares a folder with them. These checks need no numpy: `ragx status` runs them.

The writer also records, next to its checksums, each file's identity when it hashed it: device, inode,
size and modification time (`verified.json` in the generation folder). A program that writes into a
file moves its modification time (or its size, or, writing a new file in its place, its inode), so a
file whose identity still matches holds the bytes that were hashed; a query hashes only the files
that do not match (a file damaged by a program or a truncation among them). The change time is left
out on purpose: files are hard-linked between generations, and linking or deleting an older
generation's link moves the shared inode's change time without touching a byte, which would make
every query after an incremental run hash the whole index again. At 1M chunks this spares a cold query reading
1.6 GB (vectors.npy and vectors.hnsw) just to hash them. Incremental index runs trust the record the
same way (RunChecks). `status --deep`, full index runs and the compactions that copy old
files into a new base still hash every file: damage below the file system (a failing disk) is found
there, and never copied into a file with a new checksum.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import xxhash

from ..errors import FULL_RUN, CorruptIndexError

RECORD = "verified.json"
# the files of a generation folder (snapshot.py says what each holds)
CHUNKS, CHUNKS_DELTA, VECTORS_NPY, DELTA, GRAPH, GRAPH_DELTA, HNSW, LEXICON, LEXICON_DELTA = (
    "chunks.npz", "chunks-delta.npz", "vectors.npy", "delta.npy", "graph.npz", "graph-delta.npz", "vectors.hnsw",
    "lexicon.npz", "lexicon-delta.npz")
FILES = (CHUNKS, CHUNKS_DELTA, VECTORS_NPY, DELTA, GRAPH, GRAPH_DELTA, HNSW, LEXICON, LEXICON_DELTA)
# absent from generations written before they existed (converted on the next run; BM25 then uses FTS5)
OPTIONAL = (CHUNKS_DELTA, DELTA, GRAPH_DELTA, LEXICON, LEXICON_DELTA)
CHUNK_LISTS = (CHUNKS, CHUNKS_DELTA)  # the live chunk ids and their file ids (chunk_lists.py)
READ_BY_SNAPSHOT = (*CHUNK_LISTS, VECTORS_NPY, DELTA, GRAPH, GRAPH_DELTA)  # what Snapshot.load reads without the ANN index
HINT = FULL_RUN


def file_identity(path: Path) -> list[int]:
    """What changes whenever a file's bytes may have: device, inode, size, modification time (the one
    identity both this record and an index run's checksum memo, checksums_remembered, key on)."""
    st = os.stat(path)
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def record(folder: Path, checksums: dict[str, str]) -> None:
    """Note each file's identity with its checksum (after the last link or write of the file)."""
    entries = {name: [*file_identity(folder / name), checksum] for name, checksum in checksums.items()}
    (folder / RECORD).write_text(json.dumps(entries))


def unchanged(folder: Path, checksums: dict[str, str], names: tuple[str, ...]) -> set[str]:
    """The `names` whose identity is the one recorded with the very checksum the manifest holds."""
    try:
        entries = json.loads((folder / RECORD).read_text())
    except (OSError, ValueError):
        return set()
    same = set()
    for name in names:
        entry = entries.get(name) if isinstance(entries, dict) else None
        try:
            if entry and name in checksums and entry == [*file_identity(folder / name), checksums[name]]:
                same.add(name)
        except OSError:
            continue
    return same


@dataclass
class RunChecks:
    """What an index run knows about the checksums of the generation it builds on."""

    memo: dict[tuple, str] = field(default_factory=dict)  # file identity -> checksum, hashed this run
    # An incremental run that links the big files into its generation trusts a file whose identity is
    # the one recorded when it was hashed (file_identity), as queries do: hashing 1.8 GB of unchanged
    # files took 2 s of a 6.5 s one-file run at a million chunks after a cold start. Full runs, and
    # the steps that write a new base from old files (compactions), hash every byte they copy.
    trust_recorded: bool = False


_run_checks: RunChecks | None = None  # set inside checksums_remembered()


@contextmanager
def checksums_remembered() -> Iterator[RunChecks]:
    """Within one index run each file is checksummed once, though the run reads a generation in more
    than one step (gigabytes at a million chunks). Keyed by the file's identity (file_identity):
    generation files are never modified in place, only written whole and renamed."""
    global _run_checks
    _run_checks = RunChecks()
    try:
        yield _run_checks
    finally:
        _run_checks = None


def file_checksum(path: Path) -> str:
    """xxh3-128 of a file's bytes, streamed (the manifest records one per generation file)."""
    memo = _run_checks.memo if _run_checks is not None else None
    key = None
    if memo is not None:
        key = (str(path), *file_identity(path))
        if key in memo:
            return memo[key]
    h = xxhash.xxh3_128()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    if memo is not None and key is not None:
        memo[key] = h.hexdigest()
    return h.hexdigest()


def damaged(folder: Path, checksums: dict[str, str] | None, names: tuple[str, ...] = FILES) -> list[str]:
    """Files of a generation whose bytes differ from the checksums recorded at commit.

    An index written before checksums were recorded (`checksums` None) has nothing to compare."""
    if not checksums:
        return []
    out = []
    for name in names:
        if name in OPTIONAL and name not in checksums and not (folder / name).exists():
            continue
        try:
            ok = name in checksums and file_checksum(folder / name) == checksums[name]
        except OSError:
            ok = False
        if not ok:
            out.append(name)
    return out


def verify(folder: Path, checksums: dict[str, str] | None, names: tuple[str, ...] = FILES, *,
           trust_unchanged: bool | None = None) -> None:
    """`trust_unchanged`: skip files unchanged since the writer hashed them (file_identity); True for
    queries, False to hash every byte, None for the index run's policy (RunChecks)."""
    if trust_unchanged is None:
        trust_unchanged = _run_checks is not None and _run_checks.trust_recorded
    if trust_unchanged and checksums:
        names = tuple(n for n in names if n not in unchanged(folder, checksums, names))
    bad = damaged(folder, checksums, names)
    if bad:
        raise CorruptIndexError(f"{', '.join(bad)} in {folder} fail their checksums (damaged): {HINT}")


def has_postings(manifest: dict) -> bool:
    """Whether the committed generation holds BM25 postings (an index from before them has an FTS5
    table instead, until its next index run)."""
    return LEXICON in (manifest.get("checksums") or {})
