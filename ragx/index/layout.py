"""Where an index lives on disk, and the lock that keeps one writer at a time.

`<root>/.ragx/index.sqlite` is the source of truth. Derived arrays (the HNSW file, the CSR graph, the
live chunk ids) live in a generation folder `gen-NNNNNN/` that is fully written and renamed into place
*before* the SQLite commit that names it in the manifest. A reader takes the generation from the
manifest inside a read transaction, so it always pairs rows and arrays of the same commit; a crash at
any point leaves at most an orphan folder, which the next run deletes.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..config import INDEX_DIR
from ..errors import IndexBusyError, StorageError


@contextmanager
def _flocked(fd: int, mode: int, busy: str) -> Iterator[None]:
    """`fd` locked in `mode` (without waiting: IndexBusyError(busy) when another process holds it)
    for the block, then closed (which releases the lock)."""
    try:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            raise IndexBusyError(busy) from None
        yield
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def dir(self) -> Path:
        return self.root / INDEX_DIR

    @property
    def db(self) -> Path:
        return self.dir / "index.sqlite"

    def gen(self, number: int) -> Path:
        return self.dir / f"gen-{number:06d}"

    def exists(self) -> bool:
        return self.db.exists()

    @contextmanager
    def writer_lock(self, writer: str = "ragx index") -> Iterator[None]:
        """Exclusive lock for an index run (or another `writer`); released by the OS if the process dies."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self.ignore_in_git()
            fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            raise StorageError(f"`{writer}` cannot write {self.dir} ({(exc.strerror or 'denied').lower()}): it needs that folder "
                               "writable; searching works without (query, status, MCP); nothing indexed was lost") from None
        with _flocked(fd, fcntl.LOCK_EX, f"another `ragx index` is running on {self.root}"):
            yield

    @contextmanager
    def reader_lock(self) -> Iterator[None]:
        """Shared lock for a reader that must see one generation's files throughout (export): no
        index run starts meanwhile. Taken on a read-only descriptor, so it works in a folder this
        process cannot write (where no index run can start either, and no lock file may exist)."""
        try:
            fd = os.open(self.dir / "lock", os.O_RDONLY)
        except FileNotFoundError:
            yield
            return
        with _flocked(fd, fcntl.LOCK_SH, f"`ragx index` is running on {self.root}: try again when it finishes"):
            yield

    def ignore_in_git(self) -> None:
        """A `.gitignore` of `*` inside the index folder: git leaves the folder out of `git status` and
        `git add -A` (megabytes of binary index an agent would otherwise commit) without ragx touching
        the project's own .gitignore. Written once; a user's edit of it is kept."""
        ignore = self.dir / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# ragx's index: rebuilt by `ragx index`, not for version control\n*\n", encoding="utf-8")

    def remove_stale(self, keep: set[int]) -> None:
        """Delete generation folders (and half-written ones) not in `keep`. Call with the lock held."""
        for entry in [*self.dir.glob("gen-*"), *self.dir.glob("tmp-gen-*")]:
            name = entry.name.removeprefix("gen-")
            if not (name.isdigit() and int(name) in keep):  # tmp-gen-* never is
                shutil.rmtree(entry, ignore_errors=True)

