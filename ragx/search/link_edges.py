"""Explicit links as a second edge type: the links authors wrote between the candidates' files.

The link table (ragx/ingest/links.py) holds targets as written; here they are resolved to the files
of one query's candidates only (two indexed reads, then numpy): a path target matches a file's path exactly or, like a
wikilink written by name, a path ending in `/<target>`; a wikilink also reaches a file that lists it
among its `aliases:`; files that share a frontmatter tag are linked too. Edges are file pairs
(undirected): the scoring hook `link_boost` gives each candidate a share of the best score among
the files linked to its own, weighted by `Params.link_weight` (0 = off, the default).
"""

from __future__ import annotations

import sqlite3

import numpy as np

from ..ingest.links import ALIAS, EMBED, LINK, TAG, WIKILINK

# kinds as small integers, so that masks are integer comparisons: 0-2 name a path, 3 tag, 4 alias
_KIND_CODE = (
    f"CASE l.kind WHEN '{LINK}' THEN 0 WHEN '{WIKILINK}' THEN 1 WHEN '{EMBED}' THEN 2 "
    f"WHEN '{TAG}' THEN 3 WHEN '{ALIAS}' THEN 4 ELSE 5 END"
)


def _match(keys: np.ndarray, ids: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions in `wanted`, ids) where `wanted[i]` equals one of `keys` (keys need not be unique:
    the first in sorted order wins), vectorised with a sort and a binary search."""
    if len(keys) == 0 or len(wanted) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    order = np.argsort(keys, kind="stable")
    keys, ids = keys[order], ids[order]
    pos = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    hit = np.flatnonzero(keys[pos] == wanted)
    return hit, ids[pos[hit]]


def _shared(file_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Pairs of files that share a value (a tag), as (m, 2)."""
    if len(values) < 2:
        return np.empty((0, 2), np.int64)
    _, group = np.unique(values, return_inverse=True)
    a, b = np.triu_indices(len(values), k=1)
    same = group[a] == group[b]
    return np.stack([file_ids[a[same]], file_ids[b[same]]], axis=1)


def file_link_pairs(db: sqlite3.Connection, file_ids: np.ndarray) -> np.ndarray:
    """(m, 2) int64 pairs of linked files among `file_ids`, each unordered pair once (a < b).

    Two reads (the candidates' paths and links), then matching in numpy: a path target matches a
    path exactly, else (a wikilink by name) a file's name; a wikilink also matches a file's alias;
    files that share a tag are linked."""
    ids = np.unique(np.asarray(file_ids, dtype=np.int64))
    if len(ids) < 2:
        return np.empty((0, 2), np.int64)
    db.execute("CREATE TEMP TABLE IF NOT EXISTS link_files(id INTEGER PRIMARY KEY)")
    db.execute("DELETE FROM temp.link_files")
    db.executemany("INSERT INTO temp.link_files(id) VALUES (?)", ((int(i),) for i in ids))
    files = db.execute("SELECT f.id, f.path FROM temp.link_files t JOIN files f ON f.id = t.id").fetchall()
    links = db.execute(f"SELECT l.file_id, {_KIND_CODE}, l.target FROM temp.link_files t JOIN links l ON l.file_id = t.id").fetchall()
    if not links:
        return np.empty((0, 2), np.int64)
    fid = np.array([f[0] for f in files], dtype=np.int64)
    path = np.array([f[1] for f in files])
    src = np.array([r[0] for r in links], dtype=np.int64)
    kind = np.array([r[1] for r in links], dtype=np.int64)
    target = np.array([r[2] for r in links])
    pairs = [np.empty((0, 2), np.int64)]
    linked = kind <= 2
    by_name = (kind == 1) | (kind == 2)
    rows, dst = _match(path, fid, target[linked])
    pairs.append(np.stack([src[linked][rows], dst], axis=1))
    names = np.char.rpartition(path, "/")[:, 2]
    rows, dst = _match(names, fid, target[by_name])
    pairs.append(np.stack([src[by_name][rows], dst], axis=1))
    alias = kind == 4
    if alias.any():
        rows, dst = _match(np.char.add(target[alias], ".md"), src[alias], np.char.lower(target[by_name]))
        pairs.append(np.stack([src[by_name][rows], dst], axis=1))
    tag = kind == 3
    pairs.append(_shared(src[tag], target[tag]))
    out = np.sort(np.concatenate(pairs), axis=1)
    out = out[out[:, 0] != out[:, 1]]
    return np.unique(out, axis=0) if len(out) else np.empty((0, 2), np.int64)


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
