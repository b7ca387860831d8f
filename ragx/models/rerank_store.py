"""The rerank-score cache's SQLite file: every SQL statement of that cache, and nothing else.

One file per cache folder (``<cache>/rerank/scores.sqlite`` for `ragx eval` and queries, beside the
pass caches for the lab). It is not the index store: it holds no corpus data, only
``(reranker, query, chunk-text key) -> score``, and deleting it loses nothing but time.

    rerankers(id, identity)        identity: name + hash of the weights files + max_length
    queries(id, text)              the query text itself (a key, so no hash collisions on queries)
    scores(reranker, query, text_key, score)   text_key: xxh3-64 of the chunk text, as a signed int64

WAL mode and a busy timeout let several processes (lab workers, an MCP server and `ragx eval`) read
and write one file at once; an insert of a pair another process already wrote is ignored (the first
score written for a pair is the one every reader gets, so re-scoring stays digit-exact).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np

__all__ = ["ScoreStore"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS rerankers (id INTEGER PRIMARY KEY, identity TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS queries (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS scores (
    reranker INTEGER NOT NULL,
    query INTEGER NOT NULL,
    text_key INTEGER NOT NULL,
    score REAL NOT NULL,
    PRIMARY KEY (reranker, query, text_key)
) WITHOUT ROWID;
"""
BUSY_MS = 30_000


class ScoreStore:
    """``(reranker id, query, text keys) -> scores`` in one SQLite file (thread-safe: one lock)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self.db = sqlite3.connect(path, timeout=BUSY_MS / 1000, check_same_thread=False, isolation_level=None)
        self.db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")  # a lost last write costs a recomputation, not data
        self.db.executescript(SCHEMA)

    def reranker_id(self, identity: str) -> int:
        with self._lock:
            self.db.execute("INSERT OR IGNORE INTO rerankers (identity) VALUES (?)", (identity,))
            return int(self.db.execute("SELECT id FROM rerankers WHERE identity = ?", (identity,)).fetchone()[0])

    def _query_id(self, text: str, create: bool) -> int | None:
        if create:
            self.db.execute("INSERT OR IGNORE INTO queries (text) VALUES (?)", (text,))
        row = self.db.execute("SELECT id FROM queries WHERE text = ?", (text,)).fetchone()
        return None if row is None else int(row[0])

    def lookup(self, reranker: int, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Every cached (text key, score) of this reranker and query: one indexed range read (the rows
        of one query are the chunks ever reranked for it, a few hundred at most)."""
        with self._lock:
            qid = self._query_id(query, create=False)
            if qid is None:
                return np.empty(0, np.int64), np.empty(0, np.float64)
            rows = self.db.execute(
                "SELECT text_key, score FROM scores WHERE reranker = ? AND query = ?", (reranker, qid)
            ).fetchall()
        keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        return keys, np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))

    def insert(self, reranker: int, query: str, keys: np.ndarray, scores: np.ndarray) -> None:
        """Add scores in one transaction; pairs already present keep their first score."""
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                qid = self._query_id(query, create=True)
                self.db.executemany(
                    "INSERT OR IGNORE INTO scores (reranker, query, text_key, score) VALUES (?, ?, ?, ?)",
                    zip([reranker] * len(keys), [qid] * len(keys), keys.tolist(), scores.tolist()),
                )
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def count(self) -> int:
        with self._lock:
            return int(self.db.execute("SELECT count(*) FROM scores").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self.db.close()
