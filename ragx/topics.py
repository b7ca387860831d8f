"""`ragx query --global`: corpus-level questions answered by ranking communities (topics), not chunks.

Each Leiden community is scored against the query by three signals, all in numpy over the index's
own vectors (nothing is re-embedded but the query):

- `centroid`: cosine of the query to the community's mean member vector (what the topic is about),
- `best`: cosine of the query to the community's closest member chunk (the topic holds a direct hit),
- `keywords`: the share of the community's keyword weight (class-based TF-IDF, ragx/index/labels.py)
  carried by keywords that share a word with the query.

score = (centroid + best) / 2 + KEYWORD_WEIGHT * keywords. These weights are reasoned defaults, not
tuned on any labelled set. Communities of fewer than MIN_TOPIC_CHUNKS chunks are not topics (a pair
of near-duplicate chunks forms one) and are ranked only when no community is that large. Each
returned community lists its best chunks (closest to the query).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import FULL_RUN
from .index.labels import query_words
from .index.snapshot import Snapshot
from .index.store import Store, chunk_location

KEYWORD_WEIGHT = 0.1
MIN_TOPIC_CHUNKS = 5
TOP_FILES = 3
TEXT_CHARS = 600


def rank_communities(store: Store, snap: Snapshot, qvec: np.ndarray, query: str, top: int, chunks_per: int) -> dict[str, Any]:
    """The payload of a ragx.global.v1 document (without `schema`). Call it inside the read transaction
    whose generation `snap` is (Searcher.reading), so rows and arrays come from one commit."""
    ids, comm = store.memberships(members_only=True)
    labels = store.labels()
    doc: dict[str, Any] = {
        "query": query,
        "weights": {"centroid": 0.5, "best": 0.5, "keywords": KEYWORD_WEIGHT},
        "min_chunks": MIN_TOPIC_CHUNKS,
        "communities": [],
    }
    if not len(ids):
        doc["reason"] = _why_no_community(store)
        return doc
    pos = snap.positions(ids)
    vecs = np.asarray(snap.vectors[pos], dtype=np.float32)
    sims = vecs @ np.asarray(qvec, dtype=np.float32)
    order = np.argsort(comm, kind="stable")
    numbers, starts = np.unique(comm[order], return_index=True)
    sums = np.add.reduceat(vecs[order], starts, axis=0)
    centroid = (sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)) @ qvec
    best = np.maximum.reduceat(sims[order], starts)
    keyword = _keyword_share(numbers, labels, query_words(query))
    score = 0.5 * centroid + 0.5 * best + KEYWORD_WEIGHT * keyword
    sizes = np.diff(np.r_[starts, len(order)])
    eligible = sizes >= MIN_TOPIC_CHUNKS if (sizes >= MIN_TOPIC_CHUNKS).any() else np.ones(len(sizes), dtype=bool)
    picked = np.lexsort((numbers, -score))
    picked = picked[eligible[picked]][:top]
    for rank, i in enumerate(picked.tolist(), 1):
        number = int(numbers[i])
        members = order[starts[i]: starts[i + 1] if i + 1 < len(starts) else len(order)]
        label = labels.get(number)
        doc["communities"].append({
            "rank": rank,
            "community": number,
            "label": label.label if label else None,
            "keywords": label.keywords if label else [],
            "size": int(len(members)),
            **_files_of(store, snap.file_ids[pos[members]]),
            "score": float(score[i]),
            "breakdown": {"centroid": float(centroid[i]), "best": float(best[i]), "keywords": float(keyword[i])},
            "chunks": _best_chunks(store, ids[members], sims[members], chunks_per),
        })
    return doc


def _why_no_community(store: Store) -> str:
    """Why the index has no community to rank (its chunks are all isolated), and what would change it.
    A later `ragx index` adds no edge at the same `graph.min_sim`: the threshold is what decides."""
    counts = store.counts()
    if not counts["chunks"]:
        return "the index holds no chunks"
    if counts["edges"]:  # edges, yet no community: an index whose communities were never computed
        return f"the index records no communities: {FULL_RUN}"
    graph = store.manifest().get("graph")
    min_sim = graph.get("min_sim") if isinstance(graph, dict) else None
    at = f" at graph.min_sim = {min_sim}" if min_sim is not None else ""
    return f"no chunk pair is similar enough to form communities{at}: lower graph.min_sim and {FULL_RUN}, or search without --global"


def _keyword_share(numbers: np.ndarray, labels: dict, words: set[str]) -> np.ndarray:
    """Per community: the share of its keyword weight on keywords that share a word with the query."""
    share = np.zeros(len(numbers))
    if not words:
        return share
    for i, number in enumerate(numbers.tolist()):  # one pass per community (hundreds), ten keywords each
        label = labels.get(number)
        if label is None or not label.weights:
            continue
        w = np.asarray(label.weights)
        hit = np.fromiter((bool(words & set(k.split())) for k in label.keywords), dtype=bool, count=len(w))
        share[i] = w[hit].sum() / w.sum()
    return share


def _files_of(store: Store, file_ids: np.ndarray) -> dict[str, Any]:
    """How many files the community spans and the ones holding most of its chunks."""
    uniq, counts = np.unique(file_ids, return_counts=True)
    top = uniq[np.lexsort((uniq, -counts))[:TOP_FILES]].tolist()
    paths = store.file_paths_of(top)
    return {"files": int(len(uniq)), "top_files": [paths[f] for f in top if f in paths]}


def _best_chunks(store: Store, ids: np.ndarray, sims: np.ndarray, n: int) -> list[dict[str, Any]]:
    picked = np.lexsort((ids, -sims))[:n]
    rows = store.chunks(ids[picked])
    out = []
    for row, sim in zip(rows, sims[picked].tolist()):
        text = row["text"]
        out.append({**chunk_location(row), "score": float(sim), "text": text[:TEXT_CHARS], "truncated": len(text) > TEXT_CHARS})
    return out
