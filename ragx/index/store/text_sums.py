"""Each chunk row's checksum of its own text (`chunks.text_sum`): written with the row, added to an older
index by the first writer that opens it, compared in full by `ragx status --deep` and, for the few rows
a query returns, by every query. A text edited or damaged inside index.sqlite (which SQLite's own page
check cannot see: the page is sound, only its bytes are not what ragx wrote) is then reported, never shown.

The checksum is the one text hasher's key (ragx/text_keys.py) as a signed 64-bit integer (SQLite's).
A row without one (NULL: inserted by an older ragx into an index a newer one had converted, as happens
when versions share an index) is not recorded, not damaged: it is skipped, and gets one when its file
is next re-read."""

from __future__ import annotations

import sqlite3
from typing import Any, Sequence

from ...errors import FULL_RUN, CorruptIndexError

COLUMN = "text_sum"
_SHOWN = 5  # chunk ids named in a message


def text_sums(texts: Sequence[str]) -> list[int]:
    """The checksum of each text, as SQLite stores it."""
    from ...text_keys import text_keys  # numpy: writers and queries have it, `ragx status` never needs it

    return text_keys(texts).view("int64").tolist()


def has_text_sums(db: sqlite3.Connection) -> bool:
    """Whether this database's chunk rows carry their checksum (an index from before them has none
    until its next index run adds them)."""
    return COLUMN in {r[1] for r in db.execute("PRAGMA table_info(chunks)")}


def add_text_sums(db: sqlite3.Connection) -> None:
    """An index from before the checksums gets them in one transaction of the first writer that opens
    it: the column added, every row's checksum computed from its text as it stands now (the rows are
    trusted once, as they were before: the run's own SQLite check and later `status --deep` see on)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        if not has_text_sums(db):  # another writer may have converted it while this one waited
            db.execute(f"ALTER TABLE chunks ADD COLUMN {COLUMN} INTEGER")
            ids, texts = _ids_and_texts(db)
            db.execute("CREATE TEMP TABLE IF NOT EXISTS new_sums(id INTEGER PRIMARY KEY, s INTEGER NOT NULL)")
            db.execute("DELETE FROM temp.new_sums")
            db.executemany("INSERT INTO temp.new_sums(id, s) VALUES (?, ?)", zip(ids, text_sums(texts)))
            db.execute(f"UPDATE chunks SET {COLUMN} = (SELECT t.s FROM temp.new_sums t WHERE t.id = chunks.id)")
            db.execute("DROP TABLE temp.new_sums")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _ids_and_texts(db: sqlite3.Connection) -> tuple[list[int], list[str]]:
    rows = db.execute("SELECT id, text FROM chunks").fetchall()
    return [r[0] for r in rows], [r[1] for r in rows]


def altered_chunks(db: sqlite3.Connection) -> list[int]:
    """Ids of the chunks whose text no longer matches its checksum (every row: `status --deep`), in order."""
    import numpy as np  # `status --deep` only

    from ...text_keys import text_keys

    rows = db.execute(f"SELECT id, text, {COLUMN} FROM chunks WHERE {COLUMN} IS NOT NULL ORDER BY id").fetchall()
    if not rows:
        return []
    ids, texts, stored = zip(*rows)
    differ = np.asarray(stored, dtype=np.int64) != text_keys(texts).view("int64")
    return np.asarray(ids, dtype=np.int64)[differ].tolist()


def altered_message(ids: Sequence[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:_SHOWN]) + (", ..." if len(ids) > _SHOWN else "")
    return (f"{len(ids)} chunk text{'s' if len(ids) != 1 else ''} in index.sqlite differ from their checksums "
            f"(chunks {shown}: edited or damaged): {FULL_RUN}")


def check_rows(rows: Sequence[dict[str, Any]]) -> None:
    """Refuse rows (each with `id`, `text` and COLUMN) whose text is not what was written: a query's
    results, the reranker's inputs. Costs one hash per row returned (microseconds for a top 10)."""
    sums = text_sums([r["text"] for r in rows])
    bad = [r["id"] for r, s in zip(rows, sums) if r[COLUMN] is not None and r[COLUMN] != s]
    if bad:
        raise CorruptIndexError(altered_message(bad))


__all__ = ["COLUMN", "add_text_sums", "altered_chunks", "altered_message", "check_rows", "has_text_sums", "text_sums"]
