"""Readable labels and keywords for the Leiden communities, without any language model.

Class-based TF-IDF: the chunks of one community form one "class document". A term's weight in a
community is its share of that community's term counts times log(1 + A / f), where A is the average
number of term occurrences per community and f the term's count over all communities; words frequent
in one community and rare elsewhere win. Terms are words and word pairs (scikit-learn's
CountVectorizer, English stop words removed); the matrices are sparse (one chunk x term matrix, one
community indicator matrix, one product).

Stability: Leiden renumbers communities on every run, and small edits shift c-TF-IDF weights a little.
A community whose members are nearly those of a previous community (Jaccard >= KEEP_JACCARD) keeps
that community's label as long as the label's terms are all still among its keywords, so labels do
not flicker across incremental runs when membership barely changes.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

import numpy as np

KEYWORDS = 10            # keywords kept per community, best first
LABEL_TERMS = 3          # terms joined into the label
KEEP_JACCARD = 0.8       # membership overlap above which a previous label is kept
MIN_CHUNKS_PER_TERM = 2  # a term must occur in at least this many chunks (drops typos and ids)
LABEL_SEPARATOR = ", "
# Words of two or more characters that start with a letter (no bare numbers, no underscores at the ends).
TOKEN_PATTERN = r"(?u)\b[^\W\d_][\w\-']*[^\W_]\b"
# Noise of notes and code corpora on top of scikit-learn's English list.
EXTRA_STOP_WORDS = {"http", "https", "www", "com", "org", "html", "md", "png", "jpg", "pdf", "et", "al", "eg", "ie"}


@dataclass(frozen=True)
class CommunityLabel:
    community: int
    label: str
    keywords: list[str]
    weights: list[float]
    size: int


@dataclass(frozen=True)
class Membership:
    """Which community each chunk was in, and the labels it had (the previous run's state)."""

    chunk_ids: np.ndarray
    community: np.ndarray
    labels: dict[int, CommunityLabel]


def label_communities(texts: list[str], community: np.ndarray) -> dict[int, CommunityLabel]:
    """Label and keywords of every community >= 0, from the texts of its chunks (`community[i]` is text i's)."""
    community = np.asarray(community, dtype=np.int64)
    member = community >= 0
    if not member.any():
        return {}
    from scipy import sparse

    numbers, row_of = np.unique(community[member], return_inverse=True)
    sizes = np.bincount(row_of, minlength=len(numbers))
    docs = [t for t, m in zip(texts, member.tolist()) if m]
    vectorizer = _vectorizer(min_df=min(MIN_CHUNKS_PER_TERM, len(docs)))
    try:
        counts = vectorizer.fit_transform(docs)  # chunks x terms
    except ValueError:  # no term survives (stop words only, or tiny corpora): labels stay empty
        return {int(c): CommunityLabel(int(c), "", [], [], int(s)) for c, s in zip(numbers, sizes)}
    terms = vectorizer.get_feature_names_out()
    indicator = sparse.csr_matrix((np.ones(len(docs)), (row_of, np.arange(len(docs)))), shape=(len(numbers), len(docs)))
    per_class = (indicator @ counts).tocsr()  # communities x terms
    totals = np.asarray(per_class.sum(axis=1)).ravel()
    overall = np.asarray(per_class.sum(axis=0)).ravel()
    idf = np.log1p(totals.mean() / np.maximum(overall, 1e-12))
    weights = sparse.diags(1.0 / np.maximum(totals, 1e-12)) @ per_class @ sparse.diags(idf)
    return {
        int(c): _one_label(int(c), int(s), weights.getrow(r), terms)
        for r, (c, s) in enumerate(zip(numbers.tolist(), sizes.tolist()))
    }


def _vectorizer(min_df: int = 1):
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

    return CountVectorizer(
        lowercase=True, token_pattern=TOKEN_PATTERN, ngram_range=(1, 2),
        stop_words=sorted(ENGLISH_STOP_WORDS | EXTRA_STOP_WORDS), min_df=min_df, dtype=np.float64,
    )


def query_terms(text: str) -> set[str]:
    """The words and word pairs of a query, cut the same way as community keywords."""
    return set(_vectorizer().build_analyzer()(text))


def _one_label(number: int, size: int, row, terms: np.ndarray) -> CommunityLabel:
    """The top keywords of one community row. Ties go to word pairs (a phrase says more than either of its
    words when it is as frequent as they are), then to the term itself, so results are stable."""
    idx, val = row.indices, row.data
    n_words = np.char.count(terms[idx].astype(str), " ") + 1
    order = np.lexsort((terms[idx], -n_words, -np.round(val, 12)))[:KEYWORDS]
    keywords = terms[idx[order]].tolist()
    return CommunityLabel(number, _label_from(keywords), keywords, [round(float(v), 6) for v in val[order]], size)


def _label_from(keywords: list[str]) -> str:
    """The first LABEL_TERMS keywords, skipping words already said by a chosen pair (and vice versa)."""
    chosen: list[str] = []
    for term in keywords:
        words = set(term.split())
        said = {w for t in chosen for w in t.split()}
        if words <= said or any(set(t.split()) <= words for t in chosen):
            continue
        chosen.append(term)
        if len(chosen) == LABEL_TERMS:
            break
    return LABEL_SEPARATOR.join(chosen)


def carry_over(new: dict[int, CommunityLabel], chunk_ids: np.ndarray, community: np.ndarray, old: Membership | None) -> dict[int, CommunityLabel]:
    """Keep a previous label for each new community that is nearly the same set of chunks."""
    if old is None or not old.labels or not new:
        return new
    common, in_new, in_old = np.intersect1d(chunk_ids, old.chunk_ids, assume_unique=True, return_indices=True)
    a, b = community[in_new], old.community[in_old]
    both = (a >= 0) & (b >= 0)
    if not both.any():
        return new
    pairs, inter = np.unique(np.stack([a[both], b[both]], axis=1), axis=0, return_counts=True)
    new_sizes = dict(zip(*np.unique(community[community >= 0], return_counts=True)))
    old_sizes = dict(zip(*np.unique(old.community[old.community >= 0], return_counts=True)))
    jaccard = inter / (np.array([new_sizes[n] + old_sizes[o] for n, o in pairs.tolist()], dtype=np.float64) - inter)
    out = dict(new)
    for (n, o), j in zip(pairs.tolist(), jaccard.tolist()):
        prev, cur = old.labels.get(o), out.get(n)
        if j < KEEP_JACCARD or prev is None or cur is None or not prev.label:
            continue
        if set(prev.label.split(LABEL_SEPARATOR)) <= set(cur.keywords):
            out[n] = CommunityLabel(n, prev.label, cur.keywords, cur.weights, cur.size)
    return out


# ---- storage (the table is declared in store.py's schema) ----------------------------------------

def previous_state(db: sqlite3.Connection) -> Membership | None:
    """The communities and labels as last committed (read before an index run replaces them)."""
    try:
        rows = db.execute("SELECT chunk_id, community FROM communities ORDER BY chunk_id").fetchall()
        stored = read_labels(db)
    except sqlite3.OperationalError:
        return None
    arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
    return Membership(arr[:, 0], arr[:, 1], stored)


def write_labels(db: sqlite3.Connection, previous: Membership | None) -> int:
    """Label the communities now in `db` (inside the caller's transaction); returns how many."""
    rows = db.execute(
        "SELECT c.id, m.community, c.text FROM chunks c JOIN communities m ON m.chunk_id = c.id ORDER BY c.id"
    ).fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    community = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    labels = carry_over(label_communities([r[2] for r in rows], community), ids, community, previous)
    db.execute("DELETE FROM community_labels")
    db.executemany(
        "INSERT INTO community_labels(community, label, keywords, weights, size) VALUES (?, ?, ?, ?, ?)",
        [(c.community, c.label, json.dumps(c.keywords), json.dumps(c.weights), c.size) for c in labels.values()],
    )
    return len(labels)


def read_labels(db: sqlite3.Connection) -> dict[int, CommunityLabel]:
    """Stored labels by community number ({} for an index built before labels existed)."""
    try:
        rows = db.execute("SELECT community, label, keywords, weights, size FROM community_labels").fetchall()
    except sqlite3.OperationalError:  # no such table: an older index opened read-only
        return {}
    return {r[0]: CommunityLabel(r[0], r[1], json.loads(r[2]), json.loads(r[3]), r[4]) for r in rows}


def labels_missing(db: sqlite3.Connection) -> bool:
    """True when communities exist but no labels do (an index built before labels existed)."""
    has_communities = db.execute("SELECT 1 FROM communities WHERE community >= 0 LIMIT 1").fetchone()
    return bool(has_communities) and not db.execute("SELECT 1 FROM community_labels LIMIT 1").fetchone()


def attach_labels(doc: dict, db: sqlite3.Connection) -> dict:
    """Add `label` and `keywords` to each community of an inspect document (None / [] when unlabelled)."""
    stored = read_labels(db)
    for c in doc.get("communities", []):
        label = stored.get(c["community"])
        c["label"] = label.label if label else None
        c["keywords"] = label.keywords if label else []
    return doc
