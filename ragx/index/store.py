"""The SQLite side of an index: files, chunks, kNN edges, communities, the manifest.

One connection per process; WAL so a query can read while `ragx index` writes. Every write of an
index run happens in one transaction (`Store.transaction`), so a crash leaves the last commit intact.
Reads are set-based: callers pass arrays of ids, never loop over rows with one query each.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, NamedTuple, Sequence

from ..errors import REBUILD, CorruptIndexError, NoIndexError, sqlite_error
from ..lookup import find_sorted
from . import manifest_values
from .dates import DATE_RULES
from .fts_tokens import FTS_TOKENIZER

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .arrays import Arrays
    from .labels import CommunityLabel
    from .plan import ChangeSet
else:  # `ragx status` reads the store without numpy (lazy.py)
    from ..lazy import lazy_module

    np = lazy_module("numpy")

SCHEMA_VERSION = 1
# Anchor vectors are stored at the chunk vectors' precision (snapshot.VECTOR_DTYPE): half the bytes a
# query reads, and the same rounding as every other vector of the index.
ANCHOR_VECTOR_DTYPE = "float16"

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

_BM25_ROW = [("id", "int64"), ("score", "float64")]  # a structured dtype's fields
CHUNK_COLUMNS = ("id", "file_id", "ordinal", "byte_start", "byte_end", "line_start", "line_end", "n_tokens", "kind", "text")


def _int_list(joined: str | None) -> np.ndarray:
    """The integers of SQLite's group_concat (None when there were no rows), int64."""
    return np.fromstring(joined, dtype=np.int64, sep=",") if joined else np.empty(0, np.int64)


# An order-free fingerprint of the (chunk id, file id) pairs: count, both sums, and a sum of squared
# pair hashes (a swap of two chunks' files moves it, the plain sums do not). SQLite computes it over the
# (file_id, id) index; `chunk_fingerprint` computes the same numbers over a generation's arrays at
# commit, so `ragx status` checks that the store still lists the chunks its arrays hold without loading
# them or numpy. Every term stays below 2**32: the sums are exact int64 up to 2**31 chunks.
_PAIR_HASH = (1_000_003, 7_919, 2_147_483_647)  # h = (id * a + file_id * b) % p
_SQUARE_MOD = 4_294_967_291                    # the summed term: h * h % this
FINGERPRINT_SQL = (
    "SELECT count(*), coalesce(sum(id), 0), coalesce(sum(file_id), 0), coalesce(sum(h * h %% %d), 0)"
    " FROM (SELECT id, file_id, (id * %d + file_id * %d) %% %d AS h FROM chunks)" % (_SQUARE_MOD, *_PAIR_HASH)
)


def chunk_fingerprint(ids: np.ndarray, file_ids: np.ndarray) -> list[int]:
    """FINGERPRINT_SQL's four numbers for these chunks (ids and file ids are never negative)."""
    ids, file_ids = np.asarray(ids, dtype=np.int64), np.asarray(file_ids, dtype=np.int64)
    a, b, p = _PAIR_HASH
    h = (ids * a + file_ids * b) % p
    return [len(ids), int(ids.sum()), int(file_ids.sum()), int((h * h % _SQUARE_MOD).sum())]


def chunk_location(row: dict[str, Any]) -> dict[str, Any]:
    """Where a stored chunk is: the fields every result and inspect document carries."""
    loc = {
        "chunk_id": row["id"],
        "file": row["path"],
        "line_start": row["line_start"],
        "line_end": row["line_end"],
        "byte_start": row["byte_start"],
        "byte_end": row["byte_end"],
    }
    if str(row.get("kind", "")).startswith("pdf:"):  # a PDF chunk: lines and offsets are within this page's text
        loc["page"] = int(row["kind"][4:])
    return loc


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


@dataclass(frozen=True)
class RunExtras:
    """Inputs of the tables an index run derives in its transaction besides the ChangeSet's rows."""

    terms_cache: Path | None = None  # .ragx/label-terms.npz: chunk x term counts kept across runs (labels.py)
    git_dates: dict[str, float] = field(default_factory=dict)  # path -> last commit time, read before the transaction


class AnchorDocs(NamedTuple):
    """Anchor documents (sorted ids, their targets) and their anchors, one row each: the position of its
    document in `ids`, whether a wikilink wrote it, its vector."""

    ids: np.ndarray
    targets: list[str]
    row_doc: np.ndarray
    row_wiki: np.ndarray
    vectors: np.ndarray


class FileRow(NamedTuple):  # a tuple: a drift check may build one per file of the corpus
    id: int
    path: str
    size: int
    mtime_ns: int
    hash: str


class StoredFiles(Mapping[str, FileRow]):
    """The files table as path -> FileRow, with each file's (size, mtime_ns) at hand in `stats`.

    A drift check compares those pairs for every file (100,000 at a million chunks) and needs whole
    rows only for the few files that changed or went, so rows are made on demand."""

    def __init__(self, rows: Sequence[tuple[str, int, int, int, str]] = ()):  # (path, size, mtime_ns, id, hash)
        self._rows = {r[0]: r for r in rows}
        self.stats: dict[str, tuple[int, int]] = {r[0]: (r[1], r[2]) for r in rows}

    def __getitem__(self, path: str) -> FileRow:
        path, size, mtime_ns, file_id, digest = self._rows[path]
        return FileRow(file_id, path, size, mtime_ns, digest)

    def __contains__(self, path: object) -> bool:
        return path in self._rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


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
                self._convert_anchor_docs()
            self.db.execute("SELECT count(*) FROM manifest").fetchone()
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
            _fill_temp_text(db, "anchor_targets", [r[0] for r in db.execute("SELECT target FROM anchor_docs")])
            _write_anchor_blobs(db)

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
            Store.write_manifest(db, values)

    def scan_started_ns(self) -> int | None:
        """The manifest's `scan_started_ns` (see scan_started), without reading the rest of it."""
        row = self.db.execute("SELECT value FROM manifest WHERE key = ?", (SCAN_STARTED,)).fetchone()
        return scan_started({SCAN_STARTED: json.loads(row[0])}) if row else None

    # ---- files ----------------------------------------------------------------------------------
    def files(self) -> StoredFiles:
        return StoredFiles(self.db.execute("SELECT path, size, mtime_ns, id, hash FROM files").fetchall())

    # ---- chunks ---------------------------------------------------------------------------------
    def chunk_ids(self) -> np.ndarray:
        return self.chunk_files()[0]

    def chunk_files(self) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk id (sorted) and its file id, in one query.

        Read as two comma-joined strings that numpy parses, from the (file_id, id) index rather than
        the table with its texts, and sorted here: a Python tuple per chunk from an ordered table scan
        took 2.0 s at 1M chunks, this 0.36 s (status's quick check reads them all)."""
        ids, file_ids = self.db.execute("SELECT group_concat(id), group_concat(file_id) FROM chunks").fetchone()
        ids, file_ids = _int_list(ids), _int_list(file_ids)
        order = np.argsort(ids, kind="stable")  # one aggregate pass: the two lists are in the same row order
        return ids[order], file_ids[order]

    def chunks(self, ids: Sequence[int] | np.ndarray, columns: Sequence[str] = CHUNK_COLUMNS) -> list[dict[str, Any]]:
        """Rows for `ids`, in the order given (missing ids are left out), joined with their file path."""
        cols = ", ".join(f"c.{c}" for c in columns)
        ids = [int(i) for i in ids]
        if not ids:
            return []
        self._load_temp_ids(ids)
        rows = self.db.execute(
            f"SELECT {cols}, f.path FROM temp.wanted w CROSS JOIN chunks c ON c.id = w.id JOIN files f ON f.id = c.file_id"
        ).fetchall()
        by_id = {r[0]: dict(zip((*columns, "path"), r)) for r in rows} if columns[0] == "id" else None
        if by_id is None:  # pragma: no cover - callers always ask for id first
            raise ValueError("columns must start with 'id'")
        return [by_id[i] for i in ids if i in by_id]

    def chunk_rows(self, ids: Sequence[int] | np.ndarray, columns: Sequence[str] = CHUNK_COLUMNS) -> list[dict[str, Any]]:
        """Rows for `ids` in the order given, every one of them: a missing id is damage, not a gap.

        Result documents zip these rows with their scores; leaving one out would label a result
        with the row of the next chunk."""
        rows = self.chunks(ids, columns)
        if len(rows) != len(ids):
            missing = sorted(set(int(i) for i in ids) - {r["id"] for r in rows})
            raise CorruptIndexError(f"chunks {missing[:5]} are in the index arrays but not in the store: run `ragx index --full`")
        return rows

    def bm25(self, match: str) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, FTS5 bm25 scores: lower is better) of every chunk matching an FTS5 expression.

        Streamed from the cursor into one array: a common word matches most chunks, and a list of
        row tuples first held ~110 bytes a match (120 MB more peak memory at 1M chunks, and slower)."""
        rows = np.fromiter(self.db.execute("SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)),
                           dtype=_BM25_ROW)
        return rows["id"], rows["score"]

    def chunk_texts(self, ids: np.ndarray | None = None) -> tuple[np.ndarray, list[str]]:
        """Chunk ids (sorted: every one, or those of `ids`) and their indexed text (frontmatter header +
        text: what was embedded)."""
        if ids is None:
            rows = self.db.execute(f"SELECT c.id, {INDEXED_TEXT_SQL} FROM chunks c ORDER BY c.id").fetchall()
        else:
            _fill_temp(self.db, "text_ids", np.asarray(ids).tolist())
            rows = self.db.execute(
                f"SELECT c.id, {INDEXED_TEXT_SQL} FROM temp.text_ids t CROSS JOIN chunks c ON c.id = t.id ORDER BY c.id").fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)), [r[1] for r in rows]

    def every_chunk(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """Every chunk's id (sorted), file id, ordinal in its file and stored text, in one query (studies
        that read the whole table)."""
        rows = self.db.execute("SELECT id, file_id, ordinal, text FROM chunks ORDER BY id").fetchall()
        numbers = np.array([r[:3] for r in rows], dtype=np.int64).reshape(-1, 3)
        return numbers[:, 0], numbers[:, 1], numbers[:, 2], [r[3] for r in rows]

    def chunk_ids_of_files(self, file_ids: Sequence[int]) -> np.ndarray:
        if not file_ids:
            return np.empty(0, np.int64)
        _fill_temp(self.db, "lookup_files", file_ids)
        rows = self.db.execute("SELECT id FROM chunks WHERE file_id IN (SELECT id FROM temp.lookup_files) ORDER BY id").fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    def file_ids_of(self, paths: Sequence[str]) -> list[int]:
        """Ids of the indexed files among `paths` (one set-based read)."""
        if not paths:
            return []
        _fill_temp_text(self.db, "lookup_paths", paths)
        return [r[0] for r in self.db.execute("SELECT f.id FROM temp.lookup_paths t CROSS JOIN files f ON f.path = t.path ORDER BY f.id")]

    def next_file_id(self) -> int:
        return int(self.db.execute("SELECT coalesce(max(id), 0) + 1 FROM files").fetchone()[0])

    def file_paths(self) -> dict[int, str]:
        """File id -> path, for every indexed file."""
        return dict(self.db.execute("SELECT id, path FROM files").fetchall())

    def has_file(self, path: str) -> bool:
        return self.db.execute("SELECT 1 FROM files WHERE path = ?", (path,)).fetchone() is not None

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

    # ---- links and filters -----------------------------------------------------------------------
    def link_rows(self, file_ids: Sequence[int] | np.ndarray) -> tuple[list[tuple[int, str]], list[tuple[int, str, str]]]:
        """(id, path) of `file_ids` and the (file id, kind, target) links written in them: two indexed reads.
        An index written before the link table existed has no links (its next `ragx index` re-chunks it)."""
        _fill_temp(self.db, "link_files", file_ids)
        try:
            links = self.db.execute("SELECT l.file_id, l.kind, l.target FROM temp.link_files t CROSS JOIN links l ON l.file_id = t.id").fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return [], []
            raise
        if not links:
            return [], []
        files = self.db.execute("SELECT f.id, f.path FROM temp.link_files t CROSS JOIN files f ON f.id = t.id").fetchall()
        return files, links

    def file_paths_of(self, file_ids: Sequence[int]) -> dict[int, str]:
        """File id -> path for `file_ids`, missing ids left out (one indexed read)."""
        _fill_temp(self.db, "path_files", file_ids)
        return dict(self.db.execute("SELECT f.id, f.path FROM temp.path_files t CROSS JOIN files f ON f.id = t.id").fetchall())

    def has_anchors(self) -> bool:
        """Whether anchor evidence can be read: anchor documents with their vectors. An index from
        before the anchor table has none; one from before the per-document blobs has them in the old
        layout until the next index run converts it (`anchors_need_update`)."""
        try:
            return self.db.execute("SELECT 1 FROM anchor_docs WHERE vectors IS NOT NULL LIMIT 1").fetchone() is not None
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc) or "no such column" in str(exc):
                return False
            raise

    def anchors_need_update(self) -> bool:
        """Anchors are stored but their documents lack the per-document vectors (an older index that no
        run has opened for writing since): queries go without anchor evidence until `ragx index`."""
        try:
            stored = self.db.execute("SELECT 1 FROM anchors LIMIT 1").fetchone() is not None
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return False
            raise
        return stored and not self.has_anchors()

    def anchor_docs_named(self, targets: Sequence[str]) -> AnchorDocs:
        """The anchor documents whose target is one of `targets`, by id, with every anchor of theirs (its
        kind, its vector as a float32 row from the stored float16). One indexed read of a row per document."""
        _fill_temp_text(self.db, "anchor_wanted", targets)
        rows = self.db.execute(
            "SELECT d.id, d.target, d.wiki, d.vectors FROM temp.anchor_wanted t CROSS JOIN anchor_docs d ON d.target = t.path "
            "ORDER BY d.id").fetchall()
        if not rows:
            return AnchorDocs(np.empty(0, np.int64), [], np.empty(0, np.int64), np.empty(0, bool), np.empty((0, 0), np.float32))
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        counts = np.fromiter((len(r[2]) for r in rows), dtype=np.int64, count=len(rows))
        wiki = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.uint8).astype(bool)
        vectors = np.frombuffer(b"".join(r[3] for r in rows), dtype=ANCHOR_VECTOR_DTYPE).reshape(len(wiki), -1).astype(np.float32)
        return AnchorDocs(ids, [r[1] for r in rows], np.repeat(np.arange(len(rows)), counts), wiki, vectors)

    def anchor_bm25(self, match: str, doc_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(document ids, BM25 scores) of the anchor documents among `doc_ids` that match the FTS5
        expression (FTS5's bm25(), k1 = 1.2, b = 0.75, statistics over every anchor document; higher is better)."""
        # Every matching document, then the wanted ones: with `rowid IN (...)` in the statement SQLite
        # runs the full-text match once per wanted id (10x slower on dendron-vault's queries).
        rows = self.db.execute("SELECT rowid, bm25(anchor_fts) FROM anchor_fts WHERE anchor_fts MATCH ?", (match,)).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        scores = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
        _, found = find_sorted(np.asarray(doc_ids, dtype=np.int64), ids)
        return ids[found], -scores[found]

    def files_passing(self, path_glob: str | None, tags: Sequence[str], tag_kind: str) -> np.ndarray:
        """Sorted ids of the files whose path matches the glob (SQLite GLOB) and that carry every tag
        (normalised; tag `a` also matches the hierarchical `a/b` and `a.b`) as `tag_kind` links."""
        sql = ["SELECT id FROM files WHERE 1"]
        args: list[str] = []
        if path_glob is not None:
            sql.append("AND path GLOB ?")
            args.append(path_glob)
        for tag in tags:
            sql.append(
                "AND id IN (SELECT file_id FROM links WHERE kind = ? AND (target = ? "
                "OR substr(target, 1, length(?) + 1) IN (? || '/', ? || '.')))"
            )
            args += [tag_kind, tag, tag, tag, tag]
        rows = self.db.execute(" ".join(sql) + " ORDER BY id", args).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    # ---- graph ----------------------------------------------------------------------------------
    def knn_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every directed kNN row as arrays (src, dst, weight)."""
        return _knn_arrays(self.db.execute("SELECT src, dst, weight FROM knn ORDER BY src, dst").fetchall())

    def knn_sources_of(self, dst_ids: np.ndarray) -> np.ndarray:
        """Sorted distinct chunks whose kNN list names one of `dst_ids` (an indexed read by dst)."""
        if not len(dst_ids):
            return np.empty(0, np.int64)
        _fill_temp(self.db, "knn_ids", dst_ids.tolist())
        rows = self.db.execute("SELECT DISTINCT k.src FROM temp.knn_ids t CROSS JOIN knn k ON k.dst = t.id ORDER BY k.src").fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    def knn_rows_of(self, src_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The kNN rows (src, dst, weight) of `src_ids`, sorted by (src, dst)."""
        _fill_temp(self.db, "knn_ids", np.asarray(src_ids).tolist())
        return _knn_arrays(self.db.execute(
            "SELECT k.src, k.dst, k.weight FROM temp.knn_ids t CROSS JOIN knn k ON k.src = t.id ORDER BY k.src, k.dst").fetchall())

    def knn_rows_touching(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every kNN row whose src or dst is one of `ids`: all a chunk's undirected edges come from them."""
        _fill_temp(self.db, "knn_ids", np.asarray(ids).tolist())
        return _knn_arrays(self.db.execute(
            "SELECT k.src, k.dst, k.weight FROM temp.knn_ids t CROSS JOIN knn k ON k.src = t.id "
            "UNION SELECT k.src, k.dst, k.weight FROM temp.knn_ids t CROSS JOIN knn k ON k.dst = t.id").fetchall())

    # ---- communities ----------------------------------------------------------------------------
    def community_array(self, ids: np.ndarray) -> np.ndarray:
        """The community of each of `ids` (NO_COMMUNITY where it has none), in the order given."""
        from .communities import NO_COMMUNITY

        ids = np.asarray(ids, dtype=np.int64)
        out = np.full(len(ids), NO_COMMUNITY, dtype=np.int64)
        _fill_temp(self.db, "lookup_chunks", ids.tolist())
        rows = self.db.execute(
            "SELECT m.chunk_id, m.community FROM temp.lookup_chunks t CROSS JOIN communities m ON m.chunk_id = t.id ORDER BY m.chunk_id").fetchall()
        if rows:
            known = np.array(rows, dtype=np.int64)
            pos, found = find_sorted(known[:, 0], ids)
            out[found] = known[pos[found], 1]
        return out

    def communities_of(self, ids: Sequence[int]) -> dict[int, int]:
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        _fill_temp(self.db, "lookup_chunks", ids)
        return dict(self.db.execute("SELECT chunk_id, community FROM communities WHERE chunk_id IN (SELECT id FROM temp.lookup_chunks)").fetchall())

    def community_sizes(self) -> list[tuple[int, int, int]]:
        """(community, chunks, files) of every community, by number."""
        return self.db.execute(
            "SELECT m.community, count(*), count(DISTINCT c.file_id) FROM communities m JOIN chunks c ON c.id = m.chunk_id "
            "WHERE m.community >= 0 GROUP BY m.community ORDER BY m.community"
        ).fetchall()

    def community_files(self) -> list[tuple[int, str, int]]:
        """(community, file path, chunks) ordered by community, then most chunks first."""
        return self.db.execute(
            "SELECT m.community, f.path, count(*) n FROM communities m JOIN chunks c ON c.id = m.chunk_id "
            "JOIN files f ON f.id = c.file_id WHERE m.community >= 0 GROUP BY m.community, f.path ORDER BY m.community, n DESC, f.path"
        ).fetchall()

    def isolated_chunks(self) -> int:
        return self.db.execute("SELECT count(*) FROM communities WHERE community < 0").fetchone()[0]

    def community_members(self, number: int) -> list[int]:
        return [r[0] for r in self.db.execute("SELECT chunk_id FROM communities WHERE community = ? ORDER BY chunk_id", (number,))]

    # ---- integrity ------------------------------------------------------------------------------
    def fts_size(self) -> int:
        """Chunks the FTS5 table of an index from before the postings holds."""
        return self.db.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()[0]

    def live_fingerprint(self) -> list[int]:
        """The chunk table's fingerprint now (FINGERPRINT_SQL); the manifest's `chunk_fingerprint` is
        the one of the arrays the last commit wrote."""
        return list(self.db.execute(FINGERPRINT_SQL).fetchone())

    def orphan_chunks(self) -> int:
        """Chunks whose file row is missing."""
        return self.db.execute("SELECT count(*) FROM chunks WHERE file_id NOT IN (SELECT id FROM files)").fetchone()[0]

    # ---- writes of an index run -------------------------------------------------------------------
    def apply(self, change: "ChangeSet", arrays: "Arrays", manifest: dict[str, Any], extras: RunExtras | None = None) -> None:
        """The one transaction of an index run: files, chunks, frontmatter headers, links, lexical rows,
        knn, text-less PDF pages, communities and their labels, file dates, the undecodable list, manifest."""
        extras = extras or RunExtras()
        with self.transaction() as db:
            # The generation this run commits has BM25 postings: an older index's FTS5 table, a second
            # lexical index of every chunk (~300 MB at a million chunks), goes with the same commit.
            db.execute("DROP TABLE IF EXISTS chunks_fts")
            if change.full:
                for table in ("chunks", "files", "knn", "communities", "chunk_headers", "links", "anchors"):
                    db.execute(f"DELETE FROM {table}")
                anchor_targets: list[str] = []
            else:
                anchor_targets = _drop_gone(db, change, arrays)
            _insert_new(db, change)
            _write_anchor_docs(db, None if change.full else anchor_targets + [t for _, _, t, _ in change.anchors])
            db.executemany(
                "INSERT INTO knn(src, dst, weight) VALUES (?, ?, ?)",
                zip(arrays.knn_src.tolist(), arrays.knn_dst.tolist(), arrays.knn_weight.tolist()),
            )
            self._record_textless(change.pdfs_read, change.textless)
            rows = zip(arrays.community_ids.tolist(), arrays.community.tolist())
            if arrays.communities_whole:
                db.execute("DELETE FROM communities")
                db.executemany("INSERT INTO communities(chunk_id, community) VALUES (?, ?)", rows)
                self._write_labels(extras.terms_cache)
            else:
                self._update_communities(change.removed, arrays.community_ids, arrays.community)
            every = change.full or self.dates_stale()
            self._write_dates(extras.git_dates, None if every else [f.path for f, _ in change.files] + [f.path for f, _ in change.touched])
            Store.write_undecodable(db, change.undecodable)
            fingerprint = chunk_fingerprint(arrays.graph.ids, arrays.file_ids)  # what chunks.npz holds
            rules = {"date_rules": DATE_RULES} if every else {}
            Store.write_manifest(db, manifest | {"counts": self._counted(arrays), "chunk_fingerprint": fingerprint} | rules)

    def _update_communities(self, removed: np.ndarray, ids: np.ndarray, numbers: np.ndarray) -> None:
        """An incremental run that did not run Leiden: drop deleted chunks' rows, write `ids`' communities,
        and keep each label's size in step (a label is dropped with its community's last chunk)."""
        before = self.community_array(np.concatenate([removed, ids]))
        _fill_temp(self.db, "gone_chunks", removed.tolist())
        self.db.execute("DELETE FROM communities WHERE chunk_id IN (SELECT id FROM temp.gone_chunks)")
        self.db.executemany("INSERT OR REPLACE INTO communities(chunk_id, community) VALUES (?, ?)", zip(ids.tolist(), numbers.tolist()))
        change = np.concatenate([before, numbers])
        sign = np.concatenate([-np.ones(len(before), np.int64), np.ones(len(numbers), np.int64)])
        member = change >= 0
        touched, inverse = np.unique(change[member], return_inverse=True)
        delta = np.bincount(inverse.ravel(), weights=sign[member], minlength=len(touched)).astype(np.int64)
        self.db.executemany("UPDATE community_labels SET size = size + ? WHERE community = ?", zip(delta.tolist(), touched.tolist()))
        self.db.execute("DELETE FROM community_labels WHERE size <= 0")

    def _counted(self, arrays: "Arrays") -> dict[str, int]:
        """What `counts` reports, computed at commit from what the run already holds (counting edges in
        SQL reads every kNN row: seconds at a million chunks)."""
        if arrays.communities_whole:
            communities = len(np.unique(arrays.community[arrays.community >= 0]))
        else:
            communities = self.db.execute("SELECT count(*) FROM community_labels").fetchone()[0]
        return {
            "files": self.db.execute("SELECT count(*) FROM files").fetchone()[0],
            "chunks": len(arrays.live),
            "edges": arrays.graph.n_edges,
            "communities": int(communities),
        }

    def counts(self) -> dict[str, int]:
        """Files, chunks, undirected edges and communities: as the last commit recorded them, or
        counted in SQL for an index written before counts were recorded."""
        recorded = self.manifest().get("counts")
        if isinstance(recorded, dict) and {"files", "chunks", "edges", "communities"} <= recorded.keys():
            return {k: int(recorded[k]) for k in ("files", "chunks", "edges", "communities")}
        return self.counted_in_sql()

    def counted_in_sql(self) -> dict[str, int]:
        one = lambda sql: self.db.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "files": one("SELECT count(*) FROM files"),
            "chunks": one("SELECT count(*) FROM chunks"),
            # = count(*) FROM edges, without the view's GROUP BY over every kNN row (3x slower: `ragx status`).
            # A pair counts once: from its smaller end, or from its only stored direction.
            "edges": one("SELECT count(*) FROM knn AS k WHERE src <= dst"
                         " OR NOT EXISTS (SELECT 1 FROM knn AS r WHERE r.src = k.dst AND r.dst = k.src)"),
            "communities": one("SELECT count(DISTINCT community) FROM communities WHERE community >= 0"),
        }

    # ---- files that are not UTF-8 ----
    # Remembered with their size and mtime so that, until such a file changes, drift does not count it
    # as new and an index run neither reads it again nor writes a new generation for it.
    def undecodable(self) -> dict[str, tuple[int, int]]:
        """{path: (size, mtime_ns)} of the files the last runs could not decode (empty for older indexes)."""
        try:
            rows = self.db.execute("SELECT path, size, mtime_ns FROM undecodable").fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return {}
            raise
        return {path: (size, mtime_ns) for path, size, mtime_ns in rows}

    def record_undecodable(self, touched, rows: Sequence[tuple[str, int, int]]) -> None:
        """A run with nothing to index still records touched files' stats and the undecodable list."""
        with self.transaction() as db:
            _touch(db, touched)
            Store.write_undecodable(db, rows)

    @staticmethod
    def write_undecodable(db: sqlite3.Connection, rows: Sequence[tuple[str, int, int]]) -> None:
        """Replace the list of undecodable files (inside the caller's transaction)."""
        db.execute(
            "CREATE TABLE IF NOT EXISTS undecodable(path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL)"
        )
        db.execute("DELETE FROM undecodable")
        db.executemany("INSERT OR REPLACE INTO undecodable(path, size, mtime_ns) VALUES (?, ?, ?)", rows)

    # ---- community labels (ragx/index/labels.py computes them) -------------------------------------
    def memberships(self, members_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids sorted, community of each); `members_only` leaves out isolated chunks (community < 0)."""
        where = " WHERE community >= 0" if members_only else ""
        rows = self.db.execute(f"SELECT chunk_id, community FROM communities{where} ORDER BY chunk_id").fetchall()
        arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
        return arr[:, 0], arr[:, 1]

    def labels(self) -> dict[int, "CommunityLabel"]:
        """Stored labels by current community number ({} for an index built before labels existed)."""
        from .labels import from_row

        try:
            rows = self.db.execute("SELECT community, label, keywords, weights, size FROM community_labels").fetchall()
        except sqlite3.OperationalError:  # no such table: an older index opened read-only
            return {}
        return {r[0]: from_row(r) for r in rows}

    def labels_missing(self) -> bool:
        """True when communities exist but no labels do (an index built before labels existed)."""
        has_communities = self.db.execute("SELECT 1 FROM communities WHERE community >= 0 LIMIT 1").fetchone()
        return bool(has_communities) and not self.db.execute("SELECT 1 FROM community_labels LIMIT 1").fetchone()

    def _label_state(self):
        """The membership the stored labels were computed from, and those labels (labels.Membership)."""
        from .labels import membership

        basis = np.array(self.db.execute("SELECT chunk_id, community FROM community_label_basis ORDER BY chunk_id").fetchall(), dtype=np.int64).reshape(-1, 2)
        stored = self.db.execute("SELECT basis, label, keywords, weights, size FROM community_labels").fetchall()
        return membership(basis[:, 0], basis[:, 1], stored)

    def _community_texts(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT c.text FROM communities m JOIN chunks c ON c.id = m.chunk_id ORDER BY m.chunk_id")]

    def _write_labels(self, cache: Path | None) -> int:
        """Label the communities now stored (inside the caller's transaction); returns how many."""
        from .labels import label_row, plan_labels

        ids, community = self.memberships()
        rows, rebased = plan_labels(ids, community, self._label_state(), self._community_texts, cache)
        if rebased:
            self.db.execute("DELETE FROM community_label_basis")
            self.db.execute("INSERT INTO community_label_basis(chunk_id, community) SELECT chunk_id, community FROM communities")
        self.db.execute("DELETE FROM community_labels")
        self.db.executemany(
            "INSERT INTO community_labels(community, basis, label, keywords, weights, size) VALUES (?, ?, ?, ?, ?, ?)",
            [label_row(n, basis, c) for n, basis, c in rows],
        )
        return len(rows)

    # ---- file dates (ragx/index/dates.py) and what a query says about each result's file -------------
    def dates_missing(self) -> bool:
        has_files = self.db.execute("SELECT 1 FROM files LIMIT 1").fetchone()
        return bool(has_files) and not self.db.execute("SELECT 1 FROM file_dates LIMIT 1").fetchone()

    def dates_stale(self) -> bool:
        """Whether the files were dated under older date rules (ragx/index/dates.py DATE_RULES)."""
        return int(self.manifest().get("date_rules", 1)) < DATE_RULES

    def _write_dates(self, from_git: dict[str, float], paths: list[str] | None = None) -> None:
        """Recompute indexed files' dates inside the caller's transaction (set-based reads): every
        file's, or only those of `paths` when nothing else can have changed (no git dates involved)."""
        from .dates import date_rows, leading_text

        if paths is not None and not from_git and not self.db.execute("SELECT 1 FROM file_dates WHERE source = 'git' LIMIT 1").fetchone():
            _fill_temp_text(self.db, "date_paths", paths)
            self.db.execute("DELETE FROM file_dates WHERE path IN (SELECT path FROM temp.date_paths) OR path NOT IN (SELECT path FROM files)")
            scope = " WHERE f.path IN (SELECT path FROM temp.date_paths)"
        else:
            self.db.execute("DELETE FROM file_dates")
            scope = ""
        files = self.db.execute(f"SELECT f.id, f.path, f.mtime_ns FROM files f{scope}").fetchall()
        firsts = self.db.execute(
            f"SELECT c.file_id, f.path, c.byte_start, c.text FROM files f JOIN chunks c ON c.file_id = f.id AND c.ordinal = 0{scope}"
        ).fetchall()
        # A note's frontmatter is not chunked: what precedes its first chunk is read from the file itself.
        root = self.path.parent.parent  # <root>/.ragx/index.sqlite
        heads = {fid: text if start == 0 else leading_text(root / path, start) for fid, path, start, text in firsts}
        self.db.executemany("INSERT INTO file_dates(path, date, source) VALUES (?, ?, ?)", date_rows(files, heads, from_git))

    def backfill(self, terms_cache: Path | None, git_dates, chunk_files) -> None:
        """A run without a new generation still adds labels, dates and the arrays' fingerprint an older
        index lacks (`git_dates`, `chunk_files`: callables, run only when their part is missing;
        `chunk_files` gives the committed generation's (ids, file ids))."""
        if "chunk_fingerprint" not in self.manifest():
            fingerprint = chunk_fingerprint(*chunk_files())  # of the arrays, as a commit records it
            with self.transaction() as db:
                Store.write_manifest(db, {"chunk_fingerprint": fingerprint})
        if self.labels_missing():
            with self.transaction():
                self._write_labels(terms_cache)
        if self.dates_missing() or self.dates_stale():
            with self.transaction() as db:
                self._write_dates(git_dates())
                Store.write_manifest(db, {"date_rules": DATE_RULES})

    def file_info(self, paths: Sequence[str]) -> dict[str, tuple]:
        """path -> (size, mtime_ns, date, date source, content hash) as indexed; date and source None
        without a date."""
        if not paths:
            return {}
        marks = ",".join("?" * len(paths))
        try:
            rows = self.db.execute(
                f"SELECT f.path, f.size, f.mtime_ns, d.date, d.source, f.hash FROM files f LEFT JOIN file_dates d ON d.path = f.path "
                f"WHERE f.path IN ({marks})", list(paths)).fetchall()
        except sqlite3.OperationalError:  # an index from before file dates: no dates, staleness still known
            rows = [(p, size, mtime_ns, None, None, digest) for p, size, mtime_ns, digest in self.db.execute(
                f"SELECT path, size, mtime_ns, hash FROM files WHERE path IN ({marks})", list(paths))]
        return {r[0]: r[1:] for r in rows}

    # ---- PDF pages without text (ragx/ingest/pdf.py) --------------------------------------------------
    def _record_textless(self, read: list[str], textless: dict[str, list[int]]) -> None:
        """Keep the text-less pages of the PDFs read in this run and forget those of files no longer indexed."""
        self.db.executemany("DELETE FROM pdf_textless WHERE path = ?", [(p,) for p in read])
        self.db.executemany("INSERT INTO pdf_textless(path, pages) VALUES (?, ?)", [(p, json.dumps(n)) for p, n in textless.items()])
        self.db.execute("DELETE FROM pdf_textless WHERE path NOT IN (SELECT path FROM files)")

    # ---- export / import (ragx/index/transfer.py) -----------------------------------------------------
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
            Store.write_manifest(db, {"generation": generation})
            db.executemany("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", [(s, m, p) for p, s, m in touched])
            if scan_started_ns is None:
                db.execute("DELETE FROM manifest WHERE key = ?", (SCAN_STARTED,))
            else:
                Store.write_manifest(db, {SCAN_STARTED: scan_started_ns})

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

    def integrity_problems(self, limit: int = 3) -> list[str]:
        """SQLite's own check of every page of the database file (`status --deep`): [] when sound."""
        rows = [r[0] for r in self.db.execute(f"PRAGMA quick_check({int(limit)})").fetchall()]
        if rows == ["ok"]:
            return []
        lines = [line.strip() for row in rows for line in str(row).splitlines() if line.strip()]
        found = "; ".join(line for line in lines if not line.startswith("***")) or "; ".join(lines)  # drop SQLite's header
        return [f"the index database is damaged ({found}): {REBUILD}"]

def _fill_temp_text(db: sqlite3.Connection, name: str, values: Sequence[str]) -> None:
    db.execute(f"CREATE TEMP TABLE IF NOT EXISTS {name}(path TEXT PRIMARY KEY)")
    db.execute(f"DELETE FROM temp.{name}")
    db.executemany(f"INSERT OR IGNORE INTO temp.{name}(path) VALUES (?)", ((v,) for v in values))


def _knn_arrays(rows: list[tuple]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not rows:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64)
    ids = np.array([r[:2] for r in rows], dtype=np.int64)
    return ids[:, 0], ids[:, 1], np.array([r[2] for r in rows], dtype=np.float64)


def _fill_temp(db: sqlite3.Connection, name: str, ids) -> None:
    """A temp table of ids to join against. Joins write `temp.x t CROSS JOIN table`: SQLite has no
    statistics for a temp table and otherwise may scan the whole big table as the outer loop (27 s
    instead of 0.03 s for the kNN rows of 2,000 chunks at a million chunks)."""
    db.execute(f"CREATE TEMP TABLE IF NOT EXISTS {name}(id INTEGER PRIMARY KEY)")
    db.execute(f"DELETE FROM temp.{name}")
    db.executemany(f"INSERT OR IGNORE INTO temp.{name}(id) VALUES (?)", ((int(i),) for i in ids))


def _touch(db: sqlite3.Connection, touched) -> None:
    db.executemany("UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?", [(f.size, f.mtime_ns, row.id) for f, row in touched])


def _drop_gone(db: sqlite3.Connection, change: "ChangeSet", arrays: "Arrays") -> list[str]:
    """An incremental run: rows of deleted and changed files, and the kNN rows that are redone.
    Returns the targets of the anchors that went (their BM25 documents are rewritten)."""
    _fill_temp(db, "gone_files", change.gone_file_ids)
    # headers, links and anchors of the files that go (the headers before their chunks)
    db.execute("DELETE FROM chunk_headers WHERE chunk_id IN (SELECT id FROM chunks WHERE file_id IN (SELECT id FROM temp.gone_files))")
    db.execute("DELETE FROM links WHERE file_id IN (SELECT id FROM temp.gone_files)")
    gone_targets = [r[0] for r in db.execute(
        "SELECT DISTINCT a.target FROM temp.gone_files g CROSS JOIN anchors a ON a.file_id = g.id")]
    db.execute("DELETE FROM anchors WHERE file_id IN (SELECT id FROM temp.gone_files)")
    db.execute("DELETE FROM chunks WHERE file_id IN (SELECT id FROM temp.gone_files)")
    db.execute("DELETE FROM files WHERE id IN (SELECT id FROM temp.gone_files)")
    _fill_temp(db, "redo", arrays.redo.tolist())
    db.execute("DELETE FROM knn WHERE src IN (SELECT id FROM temp.redo)")
    _fill_temp(db, "gone_chunks", change.removed.tolist())
    db.execute("DELETE FROM knn WHERE dst IN (SELECT id FROM temp.gone_chunks)")
    _touch(db, change.touched)
    return gone_targets


def _insert_new(db: sqlite3.Connection, change: "ChangeSet") -> None:
    nf = change.next_file
    db.executemany(
        "INSERT INTO files(id, path, size, mtime_ns, hash) VALUES (?, ?, ?, ?, ?)",
        [(nf + i, f.path, f.size, f.mtime_ns, h) for i, (f, h) in enumerate(change.files)],
    )
    db.executemany(
        "INSERT INTO chunks(id, file_id, ordinal, byte_start, byte_end, line_start, line_end, n_tokens, kind, text) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (int(cid), nf + fi, c.ordinal, c.byte_start, c.byte_end, c.line_start, c.line_end, c.n_tokens, c.kind, c.text)
            for cid, (fi, c) in zip(change.new_ids.tolist(), change.chunks)
        ],
    )
    db.executemany(
        "INSERT INTO chunk_headers(chunk_id, header) VALUES (?, ?)",
        [(int(cid), c.header) for cid, (_, c) in zip(change.new_ids.tolist(), change.chunks) if c.header],
    )
    db.executemany("INSERT INTO links(file_id, kind, target) VALUES (?, ?, ?)", [(nf + fi, kind, target) for fi, kind, target in change.links])
    db.executemany(
        "INSERT INTO anchors(file_id, kind, target, text, vector) VALUES (?, ?, ?, ?, ?)",
        [(nf + fi, kind, target, text, vec.tobytes())
         for (fi, kind, target, text), vec in zip(change.anchors, np.asarray(change.anchor_vecs, dtype=ANCHOR_VECTOR_DTYPE))],
    )


def _write_anchor_docs(db: sqlite3.Connection, targets: list[str] | None) -> None:
    """Rewrite the BM25 documents of `targets` (None: every target) from the anchor rows: a target's
    document is its anchor texts, one per line; a target nothing links to any more has none."""
    if targets is None:
        db.execute("DELETE FROM anchor_docs")
        db.execute("DELETE FROM anchor_fts")
        targets = [r[0] for r in db.execute("SELECT DISTINCT target FROM anchors")]
    if not targets:
        return
    _fill_temp_text(db, "anchor_targets", targets)
    db.execute("DELETE FROM anchor_fts WHERE rowid IN "
               "(SELECT d.id FROM temp.anchor_targets t CROSS JOIN anchor_docs d ON d.target = t.path)")
    db.execute("DELETE FROM anchor_docs WHERE target IN (SELECT path FROM temp.anchor_targets)")
    db.execute("INSERT INTO anchor_docs(target) SELECT t.path FROM temp.anchor_targets t "
               "WHERE EXISTS (SELECT 1 FROM anchors a WHERE a.target = t.path) ORDER BY t.path")
    db.execute("INSERT INTO anchor_fts(rowid, text) SELECT d.id, group_concat(a.text, char(10)) "
               "FROM temp.anchor_targets t CROSS JOIN anchor_docs d ON d.target = t.path JOIN anchors a ON a.target = d.target "
               "GROUP BY d.id")
    _write_anchor_blobs(db)


def _write_anchor_blobs(db: sqlite3.Connection) -> None:
    """The vectors and kinds blobs of the anchor documents of temp.anchor_targets, from their anchor rows:
    one slice of the joined rows per document, in an order of content alone (kind, vector), so an
    incremental run writes the bytes a full one would."""
    rows = db.execute(
        "SELECT d.id, a.kind = 'wikilink', a.vector FROM temp.anchor_targets t CROSS JOIN anchor_docs d ON d.target = t.path "
        "JOIN anchors a ON a.target = d.target ORDER BY d.id, a.kind, a.vector").fetchall()
    if not rows:
        return
    doc = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    wiki = np.fromiter((r[1] for r in rows), dtype=np.uint8, count=len(rows)).tobytes()
    vectors = b"".join(r[2] for r in rows)
    width = len(rows[0][2])
    ids, starts = np.unique(doc, return_index=True)
    ends = np.append(starts[1:], len(doc))
    db.executemany("UPDATE anchor_docs SET wiki = ?, vectors = ? WHERE id = ?",
                   [(wiki[lo:hi], vectors[lo * width:hi * width], d)
                    for d, lo, hi in zip(ids.tolist(), starts.tolist(), ends.tolist())])
