"""Replacing a file in one step: write a temporary beside it, rename it over the file, sync the folder.

A leaf module (os and contextlib only): the config writer, the model cache and the index's small files
share it, so a reader always sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator


def fsync_dir(path: Path) -> None:
    """Make a rename in `path` durable (best effort: POSIX; unsupported on some platforms)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def replacing(path: Path, tmp: Path) -> Iterator[None]:
    """What the block writes to `tmp` replaces `path` in one step when the block ends (the directory
    synced after); a block that fails leaves `path` as it was and removes `tmp`."""
    try:
        yield
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)
