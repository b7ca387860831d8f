"""Explicit links as a second edge type: the links authors wrote between the candidates' files.

The link table (ragx/ingest/links.py) holds targets as written; here they are resolved to the files
of one query's candidates only (two indexed reads by `Store.link_rows`, then numpy): a path target
matches a file's path exactly or, like a wikilink written by name, a path ending in `/<target>`; a
wikilink also reaches a file that lists it among its `aliases:`; files that share a frontmatter tag
are linked too. Edges are file pairs (undirected); scoring's `link_boost` (ragx/scoring/score.py)
gives each candidate a share of the best score among the files linked to its own.
"""

from __future__ import annotations

import numpy as np

from ..index.store import Store
from ..ingest.link_kinds import ALIAS, EMBED, LINK, TAG, WIKILINK
from ..lookup import find_sorted, unique_ids

# kinds as small integers, so that masks are integer comparisons: 0-2 name a path, 3 tag, 4 alias
_KIND_CODES = {LINK: 0, WIKILINK: 1, EMBED: 2, TAG: 3, ALIAS: 4}
NO_PAIRS = np.empty((0, 2), np.int64)


def _match(keys: np.ndarray, ids: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions in `wanted`, ids) where `wanted[i]` equals one of `keys` (keys need not be unique:
    the first in sorted order wins), vectorised with a sort and a binary search."""
    if len(keys) == 0 or len(wanted) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    order = np.argsort(keys, kind="stable")
    keys, ids = keys[order], ids[order]
    pos, found = find_sorted(keys, wanted)
    hit = np.flatnonzero(found)
    return hit, ids[pos[hit]]


def _shared(file_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Pairs of files that share a value (a tag), as (m, 2)."""
    if len(values) < 2:
        return NO_PAIRS
    _, group = np.unique(values, return_inverse=True)
    a, b = np.triu_indices(len(values), k=1)
    same = group[a] == group[b]
    return np.stack([file_ids[a[same]], file_ids[b[same]]], axis=1)


def file_link_pairs(store: Store, file_ids: np.ndarray) -> np.ndarray:
    """(m, 2) int64 pairs of linked files among `file_ids`, each unordered pair once (a < b)."""
    ids = unique_ids(np.asarray(file_ids, dtype=np.int64))
    if len(ids) < 2:
        return NO_PAIRS
    files, links = store.link_rows(ids.tolist())
    if not links:
        return NO_PAIRS
    fid = np.array([f[0] for f in files], dtype=np.int64)
    path = np.array([f[1] for f in files])
    src = np.array([r[0] for r in links], dtype=np.int64)
    kind = np.array([_KIND_CODES.get(r[1], 5) for r in links], dtype=np.int64)
    target = np.array([r[2] for r in links])
    return _pairs(fid, path, src, kind, target)


def _pairs(fid: np.ndarray, path: np.ndarray, src: np.ndarray, kind: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Path links by exact path, wikilinks by file name or alias, shared tags: unique sorted pairs."""
    pairs = [NO_PAIRS]
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
    return np.unique(out, axis=0) if len(out) else NO_PAIRS
