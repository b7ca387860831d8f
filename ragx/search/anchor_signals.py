"""Anchor evidence for a pass's candidates: what other notes say where they link to a candidate's file.

Anchors (ragx/ingest/anchors.py) are stored with their targets as written; every target has one anchor
document (`anchor_docs`, its BM25 text in `anchor_fts`). Here the targets are resolved for the
candidates' files only, by the link rules of ragx/search/link_edges.py: a target names a file by its
path from the root or, for a wikilink written by name, by the file name at the end of its path. At
most two indexed reads: the anchor documents those paths and names name (a row each, holding all its
anchors' vectors), and the query's BM25 over those documents (statistics over every anchor document
of the index); none when no target is among them. The paths and the set of targets come from the
searcher's GenerationFiles, read once per index generation.

Per candidate node, of its file: the best cosine of the query to an anchor (NaN: no anchor) and the
best BM25 of an anchor document (0: none, or no term matched). Scoring mixes them in
(ragx/scoring/score.py dense_signal / lexical_signal).
"""

from __future__ import annotations

import numpy as np

from ..index.store import Store
from ..lookup import unique_ids
from .generation_files import GenerationFiles
from .lexical import fts5_any, query_words


def _equal_pairs(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(value position, key position) for every pair with keys[k] == values[v] (keys may repeat: a value
    reaches each of its equals), by a sort and two binary searches."""
    if len(keys) == 0 or len(values) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    order = np.argsort(keys, kind="stable")
    lo = np.searchsorted(keys[order], values, "left")
    count = np.searchsorted(keys[order], values, "right") - lo
    offset = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    return np.repeat(np.arange(len(values)), count), order[np.repeat(lo, count) + offset]


def anchor_signals(store: Store, query: str, file_ids: np.ndarray, query_vec: np.ndarray,
                   known: GenerationFiles | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(anchor cosine, anchor BM25) per node whose file is `file_ids[i]`. `known`: the searcher's paths
    and anchor targets of this generation (default: read from the store for this call)."""
    sim = np.full(len(file_ids), np.nan, dtype=np.float32)
    lexical = np.zeros(len(file_ids))
    known = known or GenerationFiles(store)
    anchored = known.anchor_targets() if len(file_ids) else frozenset()
    if not anchored:
        return sim, lexical
    files = unique_ids(np.asarray(file_ids, dtype=np.int64))
    paths = known.paths(files.tolist())
    path = [paths[f] for f in files.tolist()]
    name = [p.rsplit("/", 1)[-1] for p in path]
    named = (set(path) | set(name)) & anchored  # only these can have an anchor document
    if not named:
        return sim, lexical
    docs = store.anchor_docs_named(sorted(named))
    if not len(docs.ids):
        return sim, lexical
    doc_ids, row_doc, row_wiki = docs.ids, docs.row_doc, docs.row_wiki  # sorted ids; rows' positions in them
    targets = np.array(docs.targets)
    # doc -> file pairs: by path for every link, by name for wikilinks only
    by_path_doc, by_path_file = _equal_pairs(np.array(path), targets)
    by_name_doc, by_name_file = _equal_pairs(np.array(name), targets)
    pair_doc = np.concatenate([by_path_doc, by_name_doc])
    pair_file = np.concatenate([by_path_file, by_name_file])
    pair_wiki_only = np.concatenate([np.zeros(len(by_path_doc), bool), np.ones(len(by_name_doc), bool)])

    # every (row, pair) with the same document, kept where the pair's rule admits the row's link kind
    rows, pairs = _equal_pairs(pair_doc, row_doc)
    keep = ~pair_wiki_only[pairs] | row_wiki[rows]
    rows, pairs = rows[keep], pairs[keep]
    # elementwise products summed per row (as retrieve.cosines): a row's cosine never depends on the others
    cos = (docs.vectors * query_vec.astype(np.float32)).sum(axis=1, dtype=np.float32)
    best = np.full(len(files), -np.inf, dtype=np.float32)
    np.maximum.at(best, pair_file[pairs], cos[rows])
    per_node = np.searchsorted(files, file_ids)
    sim[:] = np.where(np.isfinite(best), best, np.nan)[per_node]

    words = query_words(query)
    if words:
        matched, score = store.anchor_bm25(fts5_any(words), doc_ids)
        if len(matched):
            doc_score = np.zeros(len(doc_ids))
            doc_score[np.searchsorted(doc_ids, matched)] = score
            # a document reaches a file by name only if a wikilink wrote its target
            has_wiki = np.zeros(len(doc_ids), bool)
            has_wiki[row_doc[row_wiki]] = True
            ok = ~pair_wiki_only | has_wiki[pair_doc]
            per_file = np.zeros(len(files))
            np.maximum.at(per_file, pair_file[ok], doc_score[pair_doc[ok]])
            lexical[:] = per_file[per_node]
    return sim, lexical
