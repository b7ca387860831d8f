"""Files and chunks: the rows an index run writes for each file (its chunks, their headers, links and
anchors), the reads a query and a drift check make of them, and the files that could not be read."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence, ValuesView

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
else:  # `ragx status` reads the store without numpy (lazy.py)
    from ...lazy import lazy_module

    np = lazy_module("numpy")

from ...errors import CorruptIndexError
from ...lookup import find_sorted
from .anchors import ANCHOR_VECTOR_DTYPE, AnchorDocs
from .schema import CHUNK_COLUMNS, INDEXED_TEXT_SQL, StoreBase
from .temp import fill_temp, fill_temp_text, int_list
from .text_sums import COLUMN as TEXT_SUM
from .text_sums import check_rows, text_sums

if TYPE_CHECKING:  # pragma: no cover
    from ..arrays import Arrays
    from ..plan import ChangeSet

_FILE_ROW = "path, size, mtime_ns, id, hash"  # StoredFiles' rows
_BM25_ROW = [("id", "int64"), ("score", "float64")]  # a structured dtype's fields


class FileRow(NamedTuple):  # a tuple: a drift check may build one per file of the corpus
    id: int
    path: str
    size: int
    mtime_ns: int
    hash: str


# Whole file rows (path, size, mtime_ns, id, hash) of the given paths (None: all of them).
RowFetch = Callable[[Sequence[str] | None], list[tuple[str, int, int, int, str]]]


class StoredFiles(Mapping[str, FileRow]):
    """The files table as path -> FileRow, with each file's (size, mtime_ns) at hand in `stats`.

    A drift check compares those pairs for every file (100,000 at a million chunks) and needs whole
    rows only for the few files that changed or went, so rows are made on demand. Made with `fetch`
    (Store.files(rows_on_demand=True)), it holds only the pairs and reads whole rows, set-wise, the
    first time they are asked for (`prefetch`, or all of them through `values()`): a million-chunk
    index's 100,000 rows with their hashes cost more to read than the walk that needs none of them."""

    def __init__(self, rows: Sequence[tuple[str, int, int, int, str]] = (),  # (path, size, mtime_ns, id, hash)
                 stats: dict[str, tuple[int, int]] | None = None, fetch: RowFetch | None = None):
        self._rows = {r[0]: r for r in rows}
        self.stats: dict[str, tuple[int, int]] = {r[0]: (r[1], r[2]) for r in rows} if stats is None else stats
        self._fetch = fetch  # None: every row is in _rows already

    def prefetch(self, paths: Iterable[str] | None) -> None:
        """Read the whole rows of `paths` (None: all) in one statement, if not read already."""
        if self._fetch is None:
            return
        if paths is None:
            self._rows = {r[0]: r for r in self._fetch(None)}
            self._fetch = None
            return
        wanted = [path for path in paths if path not in self._rows and path in self.stats]
        if wanted:
            self._rows.update((r[0], r) for r in self._fetch(wanted))

    def __getitem__(self, path: str) -> FileRow:
        if path not in self._rows and path in self.stats:
            self.prefetch((path,))
        path, size, mtime_ns, file_id, digest = self._rows[path]
        return FileRow(file_id, path, size, mtime_ns, digest)

    def values(self) -> ValuesView[FileRow]:
        self.prefetch(None)  # one statement, not one a row
        return super().values()

    def __contains__(self, path: object) -> bool:
        return path in self.stats

    def __iter__(self) -> Iterator[str]:
        return iter(self.stats)

    def __len__(self) -> int:
        return len(self.stats)


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


def touch_files(db: sqlite3.Connection, touched) -> None:
    db.executemany("UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?", [(f.size, f.mtime_ns, row.id) for f, row in touched])


def drop_gone(db: sqlite3.Connection, change: "ChangeSet", arrays: "Arrays") -> list[str]:
    """An incremental run: rows of deleted and changed files, and the kNN rows that are redone.
    Returns the targets of the anchors that went (their BM25 documents are rewritten)."""
    fill_temp(db, "gone_files", change.gone_file_ids)
    # headers, links and anchors of the files that go (the headers before their chunks)
    db.execute("DELETE FROM chunk_headers WHERE chunk_id IN (SELECT id FROM chunks WHERE file_id IN (SELECT id FROM temp.gone_files))")
    db.execute("DELETE FROM links WHERE file_id IN (SELECT id FROM temp.gone_files)")
    gone_targets = [r[0] for r in db.execute(
        "SELECT DISTINCT a.target FROM temp.gone_files g CROSS JOIN anchors a ON a.file_id = g.id")]
    db.execute("DELETE FROM anchors WHERE file_id IN (SELECT id FROM temp.gone_files)")
    db.execute("DELETE FROM chunks WHERE file_id IN (SELECT id FROM temp.gone_files)")
    # their dates too (a changed file's are written again): by these rows, not by a scan of every date
    db.execute("DELETE FROM file_dates WHERE path IN (SELECT f.path FROM temp.gone_files g CROSS JOIN files f ON f.id = g.id)")
    db.execute("DELETE FROM files WHERE id IN (SELECT id FROM temp.gone_files)")
    fill_temp(db, "redo", arrays.redo.tolist())
    db.execute("DELETE FROM knn WHERE src IN (SELECT id FROM temp.redo)")
    fill_temp(db, "gone_chunks", change.removed.tolist())
    db.execute("DELETE FROM knn WHERE dst IN (SELECT id FROM temp.gone_chunks)")
    touch_files(db, change.touched)
    return gone_targets


def insert_new(db: sqlite3.Connection, change: "ChangeSet") -> None:
    nf = change.next_file
    db.executemany(
        "INSERT INTO files(id, path, size, mtime_ns, hash) VALUES (?, ?, ?, ?, ?)",
        [(nf + i, f.path, f.size, f.mtime_ns, h) for i, (f, h) in enumerate(change.files)],
    )
    sums = text_sums([c.text for _, c in change.chunks])
    db.executemany(
        "INSERT INTO chunks(id, file_id, ordinal, byte_start, byte_end, line_start, line_end, n_tokens, kind, text, text_sum) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (int(cid), nf + fi, c.ordinal, c.byte_start, c.byte_end, c.line_start, c.line_end, c.n_tokens, c.kind, c.text, s)
            for cid, (fi, c), s in zip(change.new_ids.tolist(), change.chunks, sums)
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


class FilesAndChunks(StoreBase):
    """Reads of files, chunks, links and anchor documents (set-based: arrays of ids in, arrays out)."""

    def files(self, rows_on_demand: bool = False) -> StoredFiles:
        """The files table. `rows_on_demand`: read only each path's (size, mtime_ns) now, and whole rows
        when asked for, through this connection (so only while it is open, in the same snapshot or
        under the writer lock: an index run, a status inside its snapshot)."""
        if not rows_on_demand:
            return StoredFiles(self.db.execute(f"SELECT {_FILE_ROW} FROM files").fetchall())
        # Three comma- (and NUL-, which no path holds) joined strings: no Python tuple per row. The
        # aggregates of one statement visit the rows in the same order (as chunk_files relies on).
        paths, sizes, mtimes = self.db.execute(
            "SELECT group_concat(path, char(0)), group_concat(size), group_concat(mtime_ns) FROM files").fetchone()
        if paths is None:
            return StoredFiles()
        stats = dict(zip(paths.split("\0"), zip(map(int, sizes.split(",")), map(int, mtimes.split(",")))))
        return StoredFiles(stats=stats, fetch=self._file_rows)

    def files_within(self, deep: Sequence[str], shallow: Sequence[str]) -> tuple[StoredFiles, int]:
        """The files at or below the folders of `deep` and directly in those of `shallow` ("" = the root),
        rows on demand as in `files`, and how many files the table holds in all. A range of the path
        index per folder ("a/" <= path < "a0": every path that starts "a/"), not a read of every row;
        only the root's own files need a pass over the table."""
        clauses: list[str] = []
        params: list[object] = []
        for folder in deep:
            if not folder:
                return self.files(rows_on_demand=True), self.file_count()
            clauses.append("SELECT path, size, mtime_ns FROM files WHERE path >= ? AND path < ?")
            params += [folder + "/", folder + "0"]
        for folder in shallow:
            if not folder:
                clauses.append("SELECT path, size, mtime_ns FROM files WHERE instr(path, '/') = 0")
                continue
            clauses.append("SELECT path, size, mtime_ns FROM files WHERE path >= ? AND path < ? AND instr(substr(path, ?), '/') = 0")
            params += [folder + "/", folder + "0", len(folder) + 2]
        rows = self.db.execute(" UNION ALL ".join(clauses), params).fetchall() if clauses else []
        return StoredFiles(stats={path: (size, mtime) for path, size, mtime in rows}, fetch=self._file_rows), self.file_count()

    def file_count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM files").fetchone()[0])

    def _file_rows(self, paths: Sequence[str] | None) -> list[tuple[str, int, int, int, str]]:
        if paths is None:
            return self.db.execute(f"SELECT {_FILE_ROW} FROM files").fetchall()
        fill_temp_text(self.db, "wanted_paths", paths)
        return self.db.execute("SELECT f.path, f.size, f.mtime_ns, f.id, f.hash FROM temp.wanted_paths w CROSS JOIN files f ON f.path = w.path").fetchall()

    def chunk_ids(self) -> np.ndarray:
        return self.chunk_files()[0]

    def chunk_files(self) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk id (sorted) and its file id, in one query.

        Read as two comma-joined strings that numpy parses, from the (file_id, id) index rather than
        the table with its texts, and sorted here: a Python tuple per chunk from an ordered table scan
        took 2.0 s at 1M chunks, this 0.36 s (status's quick check reads them all)."""
        ids, file_ids = self.db.execute("SELECT group_concat(id), group_concat(file_id) FROM chunks").fetchone()
        ids, file_ids = int_list(ids), int_list(file_ids)
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
        with the row of the next chunk. Rows read with their text are checked against their checksums."""
        checked = "text" in columns and self.has_text_sums
        rows = self.chunks(ids, (*columns, TEXT_SUM) if checked else columns)
        if checked:  # a text edited inside the database is refused, never shown (text_sums.py)
            check_rows(rows)
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
            fill_temp(self.db, "text_ids", np.asarray(ids).tolist())
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
        fill_temp(self.db, "lookup_files", file_ids)
        rows = self.db.execute("SELECT id FROM chunks WHERE file_id IN (SELECT id FROM temp.lookup_files) ORDER BY id").fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    def file_ids_of(self, paths: Sequence[str]) -> list[int]:
        """Ids of the indexed files among `paths` (one set-based read)."""
        if not paths:
            return []
        fill_temp_text(self.db, "lookup_paths", paths)
        return [r[0] for r in self.db.execute("SELECT f.id FROM temp.lookup_paths t CROSS JOIN files f ON f.path = t.path ORDER BY f.id")]

    def max_chunk_id(self) -> int:
        """The largest chunk id the store holds (0 when none; the primary key's last entry)."""
        return int(self.db.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0])

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

    def link_rows(self, file_ids: Sequence[int] | np.ndarray) -> tuple[list[tuple[int, str]], list[tuple[int, str, str]]]:
        """(id, path) of `file_ids` and the (file id, kind, target) links written in them: two indexed reads.
        An index written before the link table existed has no links (its next `ragx index` re-chunks it)."""
        fill_temp(self.db, "link_files", file_ids)
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
        fill_temp(self.db, "path_files", file_ids)
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
        fill_temp_text(self.db, "anchor_wanted", targets)
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

    def anchor_targets(self) -> set[str]:
        """Every target an anchor document is kept for (one scan of the target index)."""
        return {r[0] for r in self.db.execute("SELECT target FROM anchor_docs")}

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
            touch_files(db, touched)
            self.write_undecodable(db, rows)

    @staticmethod
    def write_undecodable(db: sqlite3.Connection, rows: Sequence[tuple[str, int, int]]) -> None:
        """Replace the list of undecodable files (inside the caller's transaction)."""
        db.execute(
            "CREATE TABLE IF NOT EXISTS undecodable(path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL)"
        )
        db.execute("DELETE FROM undecodable")
        db.executemany("INSERT OR REPLACE INTO undecodable(path, size, mtime_ns) VALUES (?, ?, ?)", rows)

    def _record_textless(self, read: list[str], textless: dict[str, list[int]]) -> None:
        """Keep the text-less pages of the PDFs read in this run and forget those of files no longer indexed."""
        self.db.executemany("DELETE FROM pdf_textless WHERE path = ?", [(p,) for p in read])
        self.db.executemany("INSERT INTO pdf_textless(path, pages) VALUES (?, ?)", [(p, json.dumps(n)) for p, n in textless.items()])
        self.db.execute("DELETE FROM pdf_textless WHERE path NOT IN (SELECT path FROM files)")
