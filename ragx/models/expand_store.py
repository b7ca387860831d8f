"""The expansion cache's SQLite file (``<cache dir>/expand/expand.sqlite3``); all of its SQL is here.

Two tables: ``answers`` holds each successful chat answer under its key (a hash of everything that
changes the answer, see ragx/models/expand_cache.py) with the parts of the key spelled out for
inspection; ``vectors`` holds float32 embeddings of the answers' texts per embedder identity. Lookups
take a whole batch of keys in one statement; inserts go through one ``executemany``.

Autocommit with WAL and a busy timeout: an interactive query, `ragx eval` and a lab sweep may share the
file from several processes, and every write is a single idempotent statement (INSERT OR REPLACE).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Iterable, Sequence

__all__ = ["ExpandStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    generator TEXT NOT NULL,
    base_url TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    settings TEXT NOT NULL,
    query TEXT NOT NULL,
    content TEXT NOT NULL,
    structured INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS vectors (
    embedder TEXT NOT NULL,
    key TEXT NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (embedder, key)
) WITHOUT ROWID;
"""

# SQLite's default bound on host parameters is 32766 (3.32+); stay far below it in one statement.
_MAX_KEYS = 900

AnswerRow = tuple[str, str, str, str, str, str, str, int, float]  # the answers columns, in order


class ExpandStore:
    """One connection, shared by the threads of one process (the MCP server answers concurrently)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=10.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.executescript(_SCHEMA)

    def answers(self, keys: Sequence[str]) -> dict[str, tuple[str, bool]]:
        """key -> (the answer's text, whether the server took the JSON schema), for the keys stored."""
        out: dict[str, tuple[str, bool]] = {}
        for part in _parts(keys):
            marks = ",".join("?" * len(part))
            with self._lock:
                rows = self._db.execute(f"SELECT key, content, structured FROM answers WHERE key IN ({marks})", part).fetchall()
            out.update((key, (content, bool(structured))) for key, content, structured in rows)
        return out

    def put_answers(self, rows: Iterable[AnswerRow]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", list(rows))

    def vectors(self, embedder: str, keys: Sequence[str]) -> dict[str, bytes]:
        """key -> the vector's float32 bytes, for the keys stored under this embedder."""
        out: dict[str, bytes] = {}
        for part in _parts(keys):
            marks = ",".join("?" * len(part))
            with self._lock:
                rows = self._db.execute(f"SELECT key, vec FROM vectors WHERE embedder = ? AND key IN ({marks})", [embedder, *part]).fetchall()
            out.update(rows)
        return out

    def put_vectors(self, embedder: str, rows: Iterable[tuple[str, bytes]]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", [(embedder, key, vec) for key, vec in rows])

    def counts(self) -> dict[str, int]:
        with self._lock:
            answers = self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
            vectors = self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
        return {"answers": int(answers), "vectors": int(vectors)}

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _parts(keys: Sequence[str]) -> list[list[str]]:
    unique = list(dict.fromkeys(keys))
    return [unique[i : i + _MAX_KEYS] for i in range(0, len(unique), _MAX_KEYS)]
