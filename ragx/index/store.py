"""The SQLite side of an index: files, chunks, the FTS5 table, kNN edges, communities, the manifest.

One connection per process; WAL so a query can read while `ragx index` writes. Every write of an
index run happens in one transaction (`Store.transaction`), so a crash leaves the last commit intact.
Reads are set-based: callers pass arrays of ids, never loop over rows with one query each.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ..errors import CorruptIndexError, NoIndexError

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY,          -- never reused; the HNSW label
    file_id INTEGER NOT NULL REFERENCES files(id),
    ordinal INTEGER NOT NULL,
    byte_start INTEGER NOT NULL,
    byte_end INTEGER NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    n_tokens INTEGER NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_file ON chunks(file_id);
-- BM25 over chunk text; external content, so the text is stored once (in chunks).
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, content='chunks', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
-- Each chunk's own top-k list (directed). The similarity graph is their undirected union: `edges`.
CREATE TABLE IF NOT EXISTS knn(
    src INTEGER NOT NULL,
    dst INTEGER NOT NULL,
    weight REAL NOT NULL,
    PRIMARY KEY (src, dst)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS knn_by_dst ON knn(dst);
CREATE VIEW IF NOT EXISTS edges(a, b, weight) AS
    SELECT min(src, dst), max(src, dst), max(weight) FROM knn GROUP BY min(src, dst), max(src, dst);
CREATE TABLE IF NOT EXISTS communities(
    chunk_id INTEGER PRIMARY KEY,
    community INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS manifest(
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- [ranking] What a note's frontmatter says about it (title, desc, aliases, tags as a sentence),
-- embedded and BM25-indexed in front of each of its chunks' text; never part of the chunk's slice.
CREATE TABLE IF NOT EXISTS chunk_headers(
    chunk_id INTEGER PRIMARY KEY,
    header TEXT NOT NULL
);
-- [ranking] Links the author wrote (ragx/ingest/links.py): targets as written, resolved at query time.
CREATE TABLE IF NOT EXISTS links(
    file_id INTEGER NOT NULL,        -- the file the link is written in
    kind TEXT NOT NULL,              -- link | wikilink | embed | tag | alias
    target TEXT NOT NULL             -- a path from the root (link kinds), else the tag or alias
);
CREATE INDEX IF NOT EXISTS links_by_file ON links(file_id);
CREATE INDEX IF NOT EXISTS links_by_target ON links(kind, target);
"""

# [ranking] The text BM25 indexes and the embedder embeds for chunk `c`: its header (if any), a blank
# line, its text (the same string as Chunk.embed_text). FTS5 deletes must pass exactly what was inserted.
INDEXED_TEXT_SQL = "coalesce((SELECT h.header || char(10) || char(10) FROM chunk_headers h WHERE h.chunk_id = c.id), '') || c.text"

CHUNK_COLUMNS = ("id", "file_id", "ordinal", "byte_start", "byte_end", "line_start", "line_end", "n_tokens", "kind", "text")


def chunk_location(row: dict[str, Any]) -> dict[str, Any]:
    """Where a stored chunk is: the fields every result and inspect document carries."""
    return {
        "chunk_id": row["id"],
        "file": row["path"],
        "line_start": row["line_start"],
        "line_end": row["line_end"],
        "byte_start": row["byte_start"],
        "byte_end": row["byte_end"],
    }


@dataclass(frozen=True)
class FileRow:
    id: int
    path: str
    size: int
    mtime_ns: int
    hash: str


class Store:
    def __init__(self, path: Path, *, create: bool = False, readonly: bool = False):
        self.path = path
        if not create and not path.exists():
            raise NoIndexError(f"no index at {path.parent}: run `ragx index`")
        uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
        try:
            self.db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA busy_timeout = 10000")
            if not readonly:
                self.db.execute("PRAGMA journal_mode = WAL")
                self.db.execute("PRAGMA synchronous = NORMAL")
                self.db.executescript(SCHEMA)
            self.db.execute("SELECT count(*) FROM manifest").fetchone()
        except sqlite3.DatabaseError as exc:
            raise CorruptIndexError(f"index database {path} is unreadable: {exc}") from None

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: everything read inside sees one commit."""
        self.db.execute("BEGIN")
        try:
            yield self.db
        finally:
            self.db.execute("COMMIT")

    # ---- manifest -------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self.db.execute("SELECT key, value FROM manifest")}

    @staticmethod
    def write_manifest(db: sqlite3.Connection, values: dict[str, Any]) -> None:
        db.executemany(
            "INSERT INTO manifest(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [(k, json.dumps(v, sort_keys=True)) for k, v in values.items()],
        )

    # ---- files ----------------------------------------------------------------------------------
    def files(self) -> dict[str, FileRow]:
        rows = self.db.execute("SELECT id, path, size, mtime_ns, hash FROM files")
        return {r[1]: FileRow(*r) for r in rows}

    # ---- chunks ---------------------------------------------------------------------------------
    def chunk_ids(self) -> np.ndarray:
        return self.chunk_files()[0]

    def chunk_files(self) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk id (sorted) and its file id, in one query."""
        rows = self.db.execute("SELECT id, file_id FROM chunks ORDER BY id").fetchall()
        arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
        return arr[:, 0], arr[:, 1]

    def chunks(self, ids: Sequence[int] | np.ndarray, columns: Sequence[str] = CHUNK_COLUMNS) -> list[dict[str, Any]]:
        """Rows for `ids`, in the order given (missing ids are left out), joined with their file path."""
        cols = ", ".join(f"c.{c}" for c in columns)
        ids = [int(i) for i in ids]
        if not ids:
            return []
        self._load_temp_ids(ids)
        rows = self.db.execute(
            f"SELECT {cols}, f.path FROM temp.wanted w JOIN chunks c ON c.id = w.id JOIN files f ON f.id = c.file_id"
        ).fetchall()
        by_id = {r[0]: dict(zip((*columns, "path"), r)) for r in rows} if columns[0] == "id" else None
        if by_id is None:  # pragma: no cover - callers always ask for id first
            raise ValueError("columns must start with 'id'")
        return [by_id[i] for i in ids if i in by_id]

    def file_chunks(self, path: str) -> list[dict[str, Any]]:
        rows = self.db.execute(
            f"SELECT {', '.join('c.' + c for c in CHUNK_COLUMNS)} FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.path = ? ORDER BY c.ordinal",
            (path,),
        ).fetchall()
        return [dict(zip(CHUNK_COLUMNS, r)) | {"path": path} for r in rows]

    def _load_temp_ids(self, ids: Sequence[int]) -> None:
        self.db.execute("CREATE TEMP TABLE IF NOT EXISTS wanted(pos INTEGER PRIMARY KEY, id INTEGER)")
        self.db.execute("DELETE FROM temp.wanted")
        self.db.executemany("INSERT INTO temp.wanted(id) VALUES (?)", ((i,) for i in ids))

    # ---- graph ----------------------------------------------------------------------------------
    def knn_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every directed kNN row as arrays (src, dst, weight)."""
        rows = self.db.execute("SELECT src, dst, weight FROM knn ORDER BY src, dst").fetchall()
        if not rows:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64)
        arr = np.array(rows, dtype=np.float64)
        return arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), arr[:, 2]

    def counts(self) -> dict[str, int]:
        one = lambda sql: self.db.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "files": one("SELECT count(*) FROM files"),
            "chunks": one("SELECT count(*) FROM chunks"),
            "edges": one("SELECT count(*) FROM edges"),
            "communities": one("SELECT count(DISTINCT community) FROM communities WHERE community >= 0"),
        }
