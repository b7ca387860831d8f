"""The index database's tables (one DDL script, applied by every writer), the constants that name its
layout, and StoreBase: the connection, its transactions and the manifest every other part builds on."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ...errors import NoIndexError, sqlite_error
from .. import manifest_values
from ..fts_tokens import FTS_TOKENIZER
from .anchors import write_anchor_blobs
from .temp import fill_temp_text
from .text_sums import add_text_sums, has_text_sums

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
    text TEXT NOT NULL,
    text_sum INTEGER                 -- its text's checksum (text_sums.py); NULL: written by an older ragx
);
CREATE INDEX IF NOT EXISTS chunks_by_file ON chunks(file_id);
-- BM25 reads the postings of each generation (lexicon.py). Indexes written before them also hold
-- an FTS5 table, chunks_fts, that BM25 reads until the next index run writes postings and drops it.
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
-- A label and keywords per community (ragx/index/labels.py), rewritten with the communities, and the
-- membership they were computed from (`basis`: the community's number in community_label_basis).
CREATE TABLE IF NOT EXISTS community_labels(
    community INTEGER PRIMARY KEY,
    basis INTEGER NOT NULL,
    label TEXT NOT NULL,
    keywords TEXT NOT NULL,          -- JSON list, best first
    weights TEXT NOT NULL,           -- JSON list of their class-based TF-IDF weights
    size INTEGER NOT NULL            -- chunks in the community
);
CREATE TABLE IF NOT EXISTS community_label_basis(
    chunk_id INTEGER PRIMARY KEY,
    community INTEGER NOT NULL
);
-- PDF pages without a text layer (ragx/ingest/pdf.py), by file; rewritten when the file is read again.
CREATE TABLE IF NOT EXISTS pdf_textless(
    path TEXT PRIMARY KEY,
    pages TEXT NOT NULL              -- JSON list of 1-based page numbers
);
-- Each file's date for --since/--until/--recent (ragx/index/dates.py): frontmatter, git or mtime.
CREATE TABLE IF NOT EXISTS file_dates(
    path TEXT PRIMARY KEY,
    date REAL NOT NULL,              -- seconds since the epoch, UTC
    source TEXT NOT NULL             -- "frontmatter", "git" or "mtime"
);
CREATE TABLE IF NOT EXISTS manifest(
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- What a note's frontmatter says about it (title, desc, aliases, tags as a sentence),
-- embedded and BM25-indexed in front of each of its chunks' text; never part of the chunk's slice.
CREATE TABLE IF NOT EXISTS chunk_headers(
    chunk_id INTEGER PRIMARY KEY,
    header TEXT NOT NULL
);
-- Links the author wrote (ragx/ingest/links.py): targets as written, resolved at query time.
CREATE TABLE IF NOT EXISTS links(
    file_id INTEGER NOT NULL,        -- the file the link is written in
    kind TEXT NOT NULL,              -- link | wikilink | embed | tag | alias
    target TEXT NOT NULL             -- a path from the root (link kinds), else the tag or alias
);
CREATE INDEX IF NOT EXISTS links_by_file ON links(file_id);
CREATE INDEX IF NOT EXISTS links_by_target ON links(kind, target);
-- Anchor texts (ragx/ingest/anchors.py): the line around each link, embedded, evidence for its target.
CREATE TABLE IF NOT EXISTS anchors(
    file_id INTEGER NOT NULL,        -- the file the link is written in
    kind TEXT NOT NULL,              -- link | wikilink
    target TEXT NOT NULL,            -- as in links, resolved at query time
    text TEXT NOT NULL,
    vector BLOB NOT NULL             -- float16 (ANCHOR_VECTOR_DTYPE), unit length, by the index's embedder
);
CREATE INDEX IF NOT EXISTS anchors_by_file ON anchors(file_id);
CREATE INDEX IF NOT EXISTS anchors_by_target ON anchors(target);
-- One document per anchor target: every anchor text written towards it (its BM25 text, anchor_fts
-- rowid = id), and its anchors' vectors and kinds as two blobs in one order, so a query reads one row
-- per candidate target, not one per anchor. The blobs are derived from `anchors` (the source of truth).
CREATE TABLE IF NOT EXISTS anchor_docs(
    id INTEGER PRIMARY KEY,
    target TEXT NOT NULL UNIQUE,
    wiki BLOB,                       -- uint8 per anchor: 1 if a wikilink wrote it
    vectors BLOB                     -- its anchors' vectors (ANCHOR_VECTOR_DTYPE), row after row
);
CREATE VIRTUAL TABLE IF NOT EXISTS anchor_fts USING fts5(text, tokenize='%s');
""" % FTS_TOKENIZER

# The text BM25 indexes and the embedder embeds for chunk `c`: its header (if any), a blank line, its
# text (the same string as Chunk.embed_text).
INDEXED_TEXT_SQL = "coalesce((SELECT h.header || char(10) || char(10) FROM chunk_headers h WHERE h.chunk_id = c.id), '') || c.text"

# Said by `ragx status` (a notice, not a fault: the index is consistent) and once by a query.
ANCHORS_OUTDATED = "anchor evidence is stored in an older layout and queries go without it until `ragx index` converts it"

CHUNK_COLUMNS = ("id", "file_id", "ordinal", "byte_start", "byte_end", "line_start", "line_end", "n_tokens", "kind", "text")

# The manifest key of an index run's scan start: the wall clock (time.time_ns) before its walk began.
# ragx/index/diff.py compares files' inode change times with it.
SCAN_STARTED = "scan_started_ns"

# A file whose ctime is at or after (scan start - SCAN_MARGIN_NS) is compared by content. File timestamps
# come from the kernel's coarse clock (a tick behind time.time_ns()), some file systems keep whole
# seconds (or two), and NTP may step the clock back a little: a write after the scan began may carry a
# ctime a little before it. The cost of a wide margin: files written in the seconds before a run are
# hashed once more by the next (and by a query whose results name them, in between).
SCAN_MARGIN_NS = 2_000_000_000


def scan_started(manifest: dict[str, Any]) -> int | None:
    """The last index run's recorded scan start, None for an index from before it was recorded."""
    value = manifest.get(SCAN_STARTED)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def written_since(started: int | None) -> int | None:
    """The ctime from which a file whose size and mtime match its row is compared by content: the
    scan start less SCAN_MARGIN_NS (None: no recorded start, size and mtime alone decide)."""
    return None if started is None else started - SCAN_MARGIN_NS


def _reader_uri(path: Path) -> str:
    """Read-only; and immutable when this process cannot write the folder and no -wal file holds
    commits. A WAL database needs its -shm file even to be read, and SQLite cannot create one in a
    folder it cannot write (the normal state of a read-only copy: a clean run leaves no -wal or
    -shm); immutable tells it no writer can be changing the file, so it reads without one."""
    uri = f"{path.absolute().as_uri()}?mode=ro"
    wal = path.with_name(path.name + "-wal")
    if not os.access(path.parent, os.W_OK) and not (wal.exists() and wal.stat().st_size):
        uri += "&immutable=1"
    return uri


class StoreBase:
    """One connection per process (WAL: a query reads while `ragx index` writes); every write of an index
    run in one transaction, so a crash leaves the last commit intact. Read-only opens never write."""

    def __init__(self, path: Path, *, create: bool = False, readonly: bool = False):
        self.path = path
        if not create and not path.exists():
            raise NoIndexError(f"no index at {path.parent}: run `ragx index`")
        uri = _reader_uri(path) if readonly else f"file:{path}"
        try:
            self.db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA busy_timeout = 10000")
            if not readonly:
                self.db.execute("PRAGMA journal_mode = WAL")
                self.db.execute("PRAGMA synchronous = NORMAL")
                self.db.executescript(SCHEMA)
                self._convert_anchor_docs()
                if not has_text_sums(self.db):
                    add_text_sums(self.db)
            self.db.execute("SELECT count(*) FROM manifest").fetchone()
            # False for an index from before chunk checksums, read by a reader (none to check yet)
            self.has_text_sums = has_text_sums(self.db)
        except sqlite3.DatabaseError as exc:  # damaged, unwritable or full: one line with its remedy
            raise sqlite_error(exc, path) from None

    def _convert_anchor_docs(self) -> None:
        """An index from before the per-document anchor blobs gets them when a writer first opens it:
        the columns added and filled from the anchor rows, in one transaction (a crash leaves the old
        layout, which readers still handle)."""
        if "vectors" in {r[1] for r in self.db.execute("PRAGMA table_info(anchor_docs)")}:
            return
        with self.transaction() as db:
            db.execute("ALTER TABLE anchor_docs ADD COLUMN wiki BLOB")
            db.execute("ALTER TABLE anchor_docs ADD COLUMN vectors BLOB")
            fill_temp_text(db, "anchor_targets", [r[0] for r in db.execute("SELECT target FROM anchor_docs")])
            write_anchor_blobs(db)

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

    def manifest(self, *, repairing: bool = False) -> dict[str, Any]:
        """Every value checked (manifest_values.py): CorruptIndexError names a bad one; `repairing`
        (a full run) drops the bad ones instead."""
        rows = list(self.db.execute("SELECT key, value FROM manifest"))
        return manifest_values.parsed(rows)[0] if repairing else manifest_values.checked(rows)

    @staticmethod
    def write_manifest(db: sqlite3.Connection, values: dict[str, Any]) -> None:
        db.executemany(
            "INSERT INTO manifest(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [(k, json.dumps(v, sort_keys=True)) for k, v in values.items()],
        )

    def record_manifest(self, values: dict[str, Any]) -> None:
        """Set these manifest keys in a transaction of their own (a run that writes nothing else)."""
        with self.transaction() as db:
            self.write_manifest(db, values)

    def scan_started_ns(self) -> int | None:
        """The manifest's `scan_started_ns` (see scan_started), without reading the rest of it."""
        row = self.db.execute("SELECT value FROM manifest WHERE key = ?", (SCAN_STARTED,)).fetchone()
        return scan_started({SCAN_STARTED: json.loads(row[0])}) if row else None
