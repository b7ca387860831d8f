"""Anchor evidence for a pass's candidates: what other notes say where they link to a candidate's file.

Anchors (ragx/ingest/anchors.py) are stored with their targets as written and resolved here, for the
candidates' files only, by the link rules of ragx/search/link_edges.py: a target names a file by its
path from the root or, for a wikilink written by name, by the file name at the end of its path. Two
indexed reads: the anchor rows towards those targets (vectors) and the BM25 of the query over their
anchor documents (one per target; statistics over every anchor document of the index).

Per candidate node, of its file: the best cosine of the query to an anchor (NaN: no anchor) and the
best anchor-document BM25 (0: none, or no term matched). Scoring mixes them in (ragx/scoring/score.py).
"""

from __future__ import annotations

import numpy as np

from ..index.store import Store
from ..ingest.link_kinds import WIKILINK
from ..lookup import unique_ids
from .lexical import query_words


def _file_rows(store: Store, file_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted unique file ids, their paths, their file names)."""
    files = unique_ids(np.asarray(file_ids, dtype=np.int64))
    paths = store.file_paths_of(files.tolist())
    path = np.array([paths[int(f)] for f in files.tolist()], dtype=str)
    return files, path, np.char.rpartition(path, "/")[:, 2] if len(path) else path


def _resolve(targets: np.ndarray, by_name_ok: np.ndarray, path: np.ndarray, name: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(target row, file position) pairs: each target that names a file by its path, or by its file name
    where `by_name_ok` (a name shared by several files reaches each of them). Unique pairs."""
    rows, where = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    for keys, allowed in ((path, np.ones(len(targets), bool)), (name, by_name_ok)):
        order = np.argsort(keys, kind="stable")
        lo = np.searchsorted(keys[order], targets, "left")
        hi = np.searchsorted(keys[order], targets, "right")
        count = np.where(allowed, hi - lo, 0)
        first = np.repeat(lo, count)
        offset = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        rows.append(np.repeat(np.arange(len(targets)), count))
        where.append(order[first + offset])
    # unique pairs through one int64 key
    key = unique_ids(np.concatenate(rows) * len(path) + np.concatenate(where))
    return key // max(len(path), 1), key % max(len(path), 1)


def anchor_signals(store: Store, query: str, file_ids: np.ndarray, query_vec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(anchor cosine, anchor BM25) per node whose file is `file_ids[i]`."""
    sim = np.full(len(file_ids), np.nan, dtype=np.float32)
    lexical = np.zeros(len(file_ids))
    if len(file_ids) == 0:
        return sim, lexical
    files, path, name = _file_rows(store, file_ids)
    wanted = sorted(set(path.tolist()) | set(name.tolist()))
    rows = store.anchor_rows(wanted)
    if not rows:
        return sim, lexical
    kind = np.array([r[0] for r in rows], dtype=str)
    target = np.array([r[1] for r in rows], dtype=str)
    vectors = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    row, at = _resolve(target, kind == WIKILINK, path, name)
    best = np.full(len(files), -np.inf, dtype=np.float32)
    # elementwise products summed per row (as retrieve.cosines): a row's cosine never depends on the others
    cos = (vectors[row] * query_vec.astype(np.float32)).sum(axis=1, dtype=np.float32)
    np.maximum.at(best, at, cos)
    per_node = np.searchsorted(files, file_ids)
    sim[:] = np.where(np.isfinite(best), best, np.nan)[per_node]

    words = query_words(query)
    if words:
        scored = store.anchor_bm25(" OR ".join(f'"{w}"' for w in words), sorted(set(target.tolist())))
        if scored:
            doc_target = np.array([t for t, _ in scored], dtype=str)
            doc_score = np.array([v for _, v in scored])
            # a document's target is resolved like an anchor's: by path, or by name if any wikilink wrote it
            by_name = np.isin(doc_target, target[kind == WIKILINK])
            drow, dat = _resolve(doc_target, by_name, path, name)
            per_file = np.zeros(len(files))
            np.maximum.at(per_file, dat, doc_score[drow])
            lexical[:] = per_file[per_node]
    return sim, lexical
