"""Replacing several files as one step: what `lab promote` writes (defaults, baselines, reports) goes in
together or not at all.

Every new file is first written into a staging folder. The swap then writes a journal (each staged
file, its destination, and where the destination's old content is kept), flushes it, keeps each old
file by a hard link, renames each staged file over its destination, and finally deletes the journal:
that deletion is the commit. A process killed at any point before it leaves the journal behind, and
`recover` (run first by every `python -m lab` command) puts every old file back and drops the staging
folder. Killed before the journal exists, nothing outside the staging folder was touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

JOURNAL = "journal.json"


def staging_root(repo: Path) -> Path:
    """Inside the repository (so the renames stay on one file system), in a folder git ignores."""
    return repo / "lab" / "cache" / "promote-staging"


@contextlib.contextmanager
def exclusive(staging: Path) -> Iterator[bool]:
    """Whether this process holds the promotion lock (an flock beside the staging folder, dropped by the
    kernel if the holder dies) for the block: a promotion holds it from start to end, and `recover`
    runs only under it, so it never rolls back a swap that a live promotion is making."""
    staging.parent.mkdir(parents=True, exist_ok=True)
    with open(staging.parent / "promote.lock", "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def swap(staging: Path, pairs: list[tuple[Path, Path]], hold=lambda step: None) -> None:
    """Move each staged file (first) over its destination (second), all or nothing (see the module docstring)."""
    kept = staging / "old"
    kept.mkdir(parents=True, exist_ok=True)
    entries: list[dict[str, Any]] = [{"staged": str(s), "final": str(f), "old": str(kept / str(k)) if f.exists() else None}
                                     for k, (s, f) in enumerate(pairs)]
    for s, _ in pairs:
        _fsync(s)
    journal = staging / JOURNAL
    tmp = journal.with_suffix(".tmp")
    tmp.write_text(json.dumps(entries), encoding="utf-8")
    _fsync(tmp)
    os.replace(tmp, journal)
    _fsync(staging)
    hold("journal")
    for e in entries:
        if e["old"] is not None:
            os.link(e["final"], e["old"])
    for k, e in enumerate(entries):
        Path(e["final"]).parent.mkdir(parents=True, exist_ok=True)
        os.replace(e["staged"], e["final"])
        if k == 0:
            hold("swap")
    for folder in {Path(e["final"]).parent for e in entries}:
        _fsync(folder)
    journal.unlink()  # the commit
    _fsync(staging)
    shutil.rmtree(staging, ignore_errors=True)


def recover(staging: Path) -> list[str]:
    """Undo a swap that did not commit (its journal is still there) and drop the staging folder.
    Returns the destinations put back."""
    journal = staging / JOURNAL
    restored = []
    if journal.exists():
        for e in json.loads(journal.read_text(encoding="utf-8")):
            final = Path(e["final"])
            if e["old"] is None:
                final.unlink(missing_ok=True)  # it did not exist before the swap
            elif Path(e["old"]).exists():
                os.replace(e["old"], final)
            restored.append(str(final))
        journal.unlink()
    if staging.exists():
        shutil.rmtree(staging, ignore_errors=True)
    return restored
