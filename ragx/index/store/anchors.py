"""Anchor documents: a link target's anchor texts (its BM25 document) and their vectors, one blob per document,
rewritten from the anchor rows of the files an index run touched."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
else:  # `ragx status` reads the store without numpy (lazy.py)
    from ...lazy import lazy_module

    np = lazy_module("numpy")

from .temp import fill_temp_text

# Anchor vectors are stored at the chunk vectors' precision (snapshot.VECTOR_DTYPE): half the bytes a
# query reads, and the same rounding as every other vector of the index.
ANCHOR_VECTOR_DTYPE = "float16"


class AnchorDocs(NamedTuple):
    """Anchor documents (sorted ids, their targets) and their anchors, one row each: the position of its
    document in `ids`, whether a wikilink wrote it, its vector."""

    ids: np.ndarray
    targets: list[str]
    row_doc: np.ndarray
    row_wiki: np.ndarray
    vectors: np.ndarray


def write_anchor_docs(db: sqlite3.Connection, targets: list[str] | None) -> None:
    """Rewrite the BM25 documents of `targets` (None: every target) from the anchor rows: a target's
    document is its anchor texts, one per line; a target nothing links to any more has none."""
    if targets is None:
        db.execute("DELETE FROM anchor_docs")
        db.execute("DELETE FROM anchor_fts")
        targets = [r[0] for r in db.execute("SELECT DISTINCT target FROM anchors")]
    if not targets:
        return
    fill_temp_text(db, "anchor_targets", targets)
    db.execute("DELETE FROM anchor_fts WHERE rowid IN "
               "(SELECT d.id FROM temp.anchor_targets t CROSS JOIN anchor_docs d ON d.target = t.path)")
    db.execute("DELETE FROM anchor_docs WHERE target IN (SELECT path FROM temp.anchor_targets)")
    db.execute("INSERT INTO anchor_docs(target) SELECT t.path FROM temp.anchor_targets t "
               "WHERE EXISTS (SELECT 1 FROM anchors a WHERE a.target = t.path) ORDER BY t.path")
    db.execute("INSERT INTO anchor_fts(rowid, text) SELECT d.id, group_concat(a.text, char(10)) "
               "FROM temp.anchor_targets t CROSS JOIN anchor_docs d ON d.target = t.path JOIN anchors a ON a.target = d.target "
               "GROUP BY d.id")
    write_anchor_blobs(db)


def write_anchor_blobs(db: sqlite3.Connection) -> None:
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
