"""Export and import (ragx/index/transfer.py): a digest of the indexed files, a consistent copy of the
whole database, its replacement in one step, and the stamp an unpacked export gets before it is installed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Sequence

from ..feed import CURSOR_KEY
from .schema import SCAN_STARTED, StoreBase


class Transfer(StoreBase):
    """The whole database as one unit: digest, backup, replace, stamp."""

    def files_digest(self) -> str:
        """One digest of every indexed file's path and content hash (order-free)."""
        import xxhash

        h = xxhash.xxh3_128()
        for path, digest in self.db.execute("SELECT path, hash FROM files ORDER BY path"):
            h.update(f"{path}\t{digest}\n".encode("utf-8"))
        return h.hexdigest()

    def row_counts(self, tables: Sequence[str] = ("files", "chunks")) -> dict[str, int]:
        return {t: self.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}

    def backup_to(self, target: Path) -> None:
        """A consistent copy of the whole database in the file `target` (SQLite's backup API)."""
        dst = sqlite3.connect(target)
        try:
            self.db.backup(dst)
        finally:
            dst.close()

    def replace_with(self, source: Path) -> None:
        """Replace this database by the one in `source`, in one backup step (readers see old or new)."""
        src = sqlite3.connect(source)
        try:
            src.backup(self.db)
        finally:
            src.close()

    def stamp_import(self, generation: int, touched: Sequence[tuple[str, int, int]], scan_started_ns: int | None = None) -> None:
        """An unpacked export before it is installed: the generation it will name, this machine's stat
        for files whose content matches it ((path, size, mtime_ns)), and the start of the scan that
        compared them (ragx/index/diff.py), in place of the exporter's (None: no start recorded)."""
        with self.transaction() as db:
            self.write_manifest(db, {"generation": generation})
            db.executemany("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", [(s, m, p) for p, s, m in touched])
            # The exporter's `ragx watch` cursor names its own watcher's log: never this one's.
            db.execute("DELETE FROM manifest WHERE key = ?", (CURSOR_KEY,))
            if scan_started_ns is None:
                db.execute("DELETE FROM manifest WHERE key = ?", (SCAN_STARTED,))
            else:
                self.write_manifest(db, {SCAN_STARTED: scan_started_ns})

    @staticmethod
    def committed_generation(path: Path) -> int | None:
        """The generation the database at `path` names, None when no run finished there.
        Raises sqlite3.DatabaseError when the file is unreadable (callers decide what that means)."""
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM manifest WHERE key = 'generation'").fetchone()
        finally:
            db.close()
        return int(json.loads(row[0])) if row else None
