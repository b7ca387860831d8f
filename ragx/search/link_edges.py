"""Explicit links as a second edge type: the links authors wrote between the candidates' files.

The link table (ragx/ingest/links.py) holds targets as written; here they are resolved, in SQL, to
the files of one query's candidates only: a path target matches a file's path exactly or, like a
wikilink written by name, a path ending in `/<target>`; a wikilink also reaches a file that lists it
among its `aliases:`; files that share a frontmatter tag are linked too. Edges are file pairs
(undirected): the scoring hook `link_boost` gives each candidate a share of the best score among
the files linked to its own, weighted by `Params.link_weight` (0 = off, the default).
"""

from __future__ import annotations

import sqlite3

import numpy as np

from ..ingest.links import ALIAS, EMBED, LINK, TAG, WIKILINK

_PAIRS_SQL = f"""
SELECT l.file_id, f.id FROM links l JOIN files f ON f.path = l.target
WHERE l.kind IN ('{LINK}', '{WIKILINK}', '{EMBED}')
  AND l.file_id IN (SELECT id FROM temp.link_files) AND f.id IN (SELECT id FROM temp.link_files)
UNION
SELECT l.file_id, f.id FROM links l JOIN temp.link_files s ON s.id = l.file_id
  JOIN temp.link_files t JOIN files f ON f.id = t.id
WHERE l.kind IN ('{WIKILINK}', '{EMBED}') AND instr(l.target, '/') = 0
  AND substr(f.path, -length(l.target) - 1) = '/' || l.target
UNION
SELECT l.file_id, a.file_id FROM links l JOIN links a
  ON a.kind = '{ALIAS}' AND lower(l.target) = a.target || '.md'
WHERE l.kind IN ('{WIKILINK}', '{EMBED}')
  AND l.file_id IN (SELECT id FROM temp.link_files) AND a.file_id IN (SELECT id FROM temp.link_files)
UNION
SELECT a.file_id, b.file_id FROM links a JOIN links b ON b.kind = '{TAG}' AND b.target = a.target
WHERE a.kind = '{TAG}' AND a.file_id <> b.file_id
  AND a.file_id IN (SELECT id FROM temp.link_files) AND b.file_id IN (SELECT id FROM temp.link_files)
"""


def file_link_pairs(db: sqlite3.Connection, file_ids: np.ndarray) -> np.ndarray:
    """(m, 2) int64 pairs of linked files among `file_ids`, each unordered pair once (a < b)."""
    ids = np.unique(np.asarray(file_ids, dtype=np.int64))
    if len(ids) < 2:
        return np.empty((0, 2), np.int64)
    db.execute("CREATE TEMP TABLE IF NOT EXISTS link_files(id INTEGER PRIMARY KEY)")
    db.execute("DELETE FROM temp.link_files")
    db.executemany("INSERT INTO temp.link_files(id) VALUES (?)", ((int(i),) for i in ids))
    rows = db.execute(_PAIRS_SQL).fetchall()
    if not rows:
        return np.empty((0, 2), np.int64)
    pairs = np.sort(np.array(rows, dtype=np.int64), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return np.unique(pairs, axis=0) if len(pairs) else np.empty((0, 2), np.int64)


def link_boost(file_ids: np.ndarray, values: np.ndarray, pairs: np.ndarray | None, weight: float) -> np.ndarray:
    """`values` (one per candidate, files in `file_ids`) plus `weight` x the best value among the
    files linked to each candidate's file. Unchanged when the weight is 0 or there are no links."""
    if weight <= 0 or pairs is None or len(pairs) == 0 or len(values) == 0:
        return values
    files, inv = np.unique(file_ids, return_inverse=True)
    best = np.full(len(files), -np.inf)
    np.maximum.at(best, inv, values)
    a, b = np.searchsorted(files, pairs[:, 0]), np.searchsorted(files, pairs[:, 1])
    a, b = np.minimum(a, len(files) - 1), np.minimum(b, len(files) - 1)
    present = (files[a] == pairs[:, 0]) & (files[b] == pairs[:, 1])
    a, b = a[present], b[present]
    neighbour = np.zeros(len(files))
    np.maximum.at(neighbour, a, np.maximum(best[b], 0.0))
    np.maximum.at(neighbour, b, np.maximum(best[a], 0.0))
    return values + weight * neighbour[inv]
