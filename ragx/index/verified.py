"""Generation files a query may trust without hashing them again.

The writer records, next to its checksums, each file's identity when it hashed it: device, inode,
size and modification time (`verified.json` in the generation folder). A program that writes into a
file moves its modification time (or its size, or, writing a new file in its place, its inode), so a
file whose identity still matches holds the bytes that were hashed; a query hashes only the files
that do not match (a file damaged by a program or a truncation among them). The change time is left
out on purpose: files are hard-linked between generations, and linking or deleting an older
generation's link moves the shared inode's change time without touching a byte, which would make
every query after an incremental run hash the whole index again. At 1M chunks this spares a cold query reading
1.6 GB (vectors.npy and vectors.hnsw) just to hash them. Incremental index runs trust the record the
same way (snapshot.RunChecks). `status --deep`, full index runs and the compactions that copy old
files into a new base still hash every file: damage below the file system (a failing disk) is found
there, and never copied into a file with a new checksum.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

RECORD = "verified.json"


def file_identity(path: Path) -> list[int]:
    """What changes whenever a file's bytes may have: device, inode, size, modification time (the one
    identity both this record and an index run's checksum memo, snapshot.checksums_remembered, key on)."""
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
