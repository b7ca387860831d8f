"""Readable labels and keywords for the Leiden communities, without any language model.

Class-based TF-IDF: the chunks of one community form one "class document". A term's weight in a
community is its share of that community's term counts times log(1 + A / f), where A is the average
number of term occurrences per community and f the term's count over all communities; words frequent
in one community and rare elsewhere win. Terms are words and word pairs (terms.py: stop words
removed, a vocabulary of bounded size); the matrices are sparse (one chunk x term matrix, one
community indicator matrix, one product).

Stability: Leiden renumbers communities on every run, and small edits shift c-TF-IDF weights a little.
The index keeps the membership the labels were computed from (community_label_basis). When every
community is nearly one of those (Jaccard >= KEEP_JACCARD, one to one), the stored labels and keywords
are kept as they are and no text is read. Otherwise all are computed anew, and a community that is
nearly a previous one keeps that one's label as long as the label's terms are all still among its
keywords, so labels do not flicker when membership barely changes. Term counts per chunk are cached
across runs (label_terms.py), so a run counts only its new chunks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..lookup import unique_ids

TERMS_CACHE = "label-terms.npz"  # in .ragx/: the chunk x term counts, kept across runs (label_terms.py)
KEYWORDS = 10            # keywords kept per community, best first
LABEL_TERMS = 3          # terms joined into the label
KEEP_JACCARD = 0.8       # membership overlap above which a previous label is kept
MIN_CHUNKS_PER_TERM = 2  # a term must occur in at least this many chunks (drops typos and ids)
LABEL_SEPARATOR = ", "


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


def label_communities(texts: list[str], community: np.ndarray, ids: np.ndarray | None = None, cache: Path | None = None) -> dict[int, CommunityLabel]:
    """Label and keywords of every community >= 0, from the texts of its chunks (`community[i]` is text i's).

    With `ids` (the chunks' ids) and `cache` (a file), the term counts are kept across runs (label_terms.py)."""
    community = np.asarray(community, dtype=np.int64)
    member = community >= 0
    if not member.any():
        return {}
    from scipy import sparse

    from .label_terms import term_counts

    numbers, row_of = np.unique(community[member], return_inverse=True)
    sizes = np.bincount(row_of, minlength=len(numbers))
    keyed = ids is not None  # the cache is keyed by chunk id: without ids, count afresh
    ids = np.asarray(ids, dtype=np.int64) if keyed else np.arange(len(texts), dtype=np.int64)
    counted = term_counts(list(texts), ids, cache if keyed else None, MIN_CHUNKS_PER_TERM)
    if counted is None:  # no term survives (stop words only, or tiny corpora): labels stay empty
        return {int(c): CommunityLabel(int(c), "", [], [], int(s)) for c, s in zip(numbers, sizes)}
    counts, terms = counted
    counts = counts[np.flatnonzero(member)]
    indicator = sparse.csr_matrix((np.ones(counts.shape[0]), (row_of, np.arange(counts.shape[0]))), shape=(len(numbers), counts.shape[0]))
    per_class = (indicator @ counts).tocsr()  # communities x terms
    totals = np.asarray(per_class.sum(axis=1)).ravel()
    overall = np.asarray(per_class.sum(axis=0)).ravel()
    idf = np.log1p(totals.mean() / np.maximum(overall, 1e-12))
    weights = (sparse.diags(1.0 / np.maximum(totals, 1e-12)) @ per_class @ sparse.diags(idf)).tocsr()
    return {
        int(c): _one_label(int(c), int(s), weights.getrow(r), terms)
        for r, (c, s) in enumerate(zip(numbers.tolist(), sizes.tolist()))
    }


def query_words(text: str) -> set[str]:
    """The words of a query, cut as keywords are (stop words need no removal: no keyword holds one)."""
    import re

    from .terms import TOKEN_PATTERN

    return set(re.findall(TOKEN_PATTERN, text.lower()))


def _one_label(number: int, size: int, row, terms: np.ndarray) -> CommunityLabel:
    """The top keywords of one community row. Ties go to word pairs (a phrase says more than either of its
    words when it is as frequent as they are), then to the term itself, so results are stable."""
    idx, val = row.indices, row.data
    n_words = np.char.count(terms[idx].astype(str), " ") + 1
    order = np.lexsort((terms[idx], -n_words, -np.round(val, 12)))[:KEYWORDS]
    keywords = terms[idx[order]].tolist()
    weights = [round(float(v), 6) for v in val[order]]
    return CommunityLabel(number, _label_from(keywords, weights), keywords, weights, size)


def _label_from(keywords: list[str], weights: list[float]) -> str:
    """LABEL_TERMS keywords, a word pair counting for both its words (so "boundary layer" beats
    "boundary" when it carries at least half its weight), never repeating a word already said."""
    order = sorted(range(len(keywords)), key=lambda i: (-weights[i] * len(keywords[i].split()), i))
    chosen: list[str] = []
    for term in (keywords[i] for i in order):
        words = {_singular(w) for w in term.split()}
        said = {_singular(w) for t in chosen for w in t.split()}
        if words & said:
            continue
        chosen.append(term)
        if len(chosen) == LABEL_TERMS:
            break
    return LABEL_SEPARATOR.join(chosen)


def _singular(word: str) -> str:
    """A crude plural fold, only to keep "wing" and "wings" from both entering one label."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def best_match(chunk_ids: np.ndarray, community: np.ndarray, old: Membership) -> dict[int, tuple[int, float]]:
    """For each community >= 0: the old community sharing most of its chunks, and their Jaccard overlap."""
    _, in_new, in_old = np.intersect1d(chunk_ids, old.chunk_ids, assume_unique=True, return_indices=True)
    a, b = community[in_new], old.community[in_old]
    both = (a >= 0) & (b >= 0)
    if not both.any():
        return {}
    pairs, inter = np.unique(np.stack([a[both], b[both]], axis=1), axis=0, return_counts=True)
    new_numbers, new_sizes = np.unique(community[community >= 0], return_counts=True)
    old_numbers, old_sizes = np.unique(old.community[old.community >= 0], return_counts=True)
    union = new_sizes[np.searchsorted(new_numbers, pairs[:, 0])] + old_sizes[np.searchsorted(old_numbers, pairs[:, 1])] - inter
    jaccard = inter / union
    order = np.lexsort((pairs[:, 1], -jaccard, pairs[:, 0]))  # per new community: best overlap first
    pairs, jaccard = pairs[order], jaccard[order]
    first = np.r_[True, pairs[1:, 0] != pairs[:-1, 0]]
    return {int(n): (int(o), float(j)) for (n, o), j in zip(pairs[first].tolist(), jaccard[first].tolist())}


def carry_over(new: dict[int, CommunityLabel], chunk_ids: np.ndarray, community: np.ndarray, old: Membership | None) -> dict[int, CommunityLabel]:
    """Keep a previous label for each new community that is nearly the same set of chunks."""
    if old is None or not old.labels or not new:
        return new
    out = dict(new)
    for n, (o, j) in best_match(chunk_ids, community, old).items():
        prev, cur = old.labels.get(o), out.get(n)
        if j < KEEP_JACCARD or prev is None or cur is None or not prev.label:
            continue
        if set(prev.label.split(LABEL_SEPARATOR)) <= set(cur.keywords):
            out[n] = CommunityLabel(n, prev.label, cur.keywords, cur.weights, cur.size)
    return out


def reuse(chunk_ids: np.ndarray, community: np.ndarray, old: Membership | None) -> dict[int, tuple[int, CommunityLabel]] | None:
    """The labels to keep as they are, when EVERY community is nearly (Jaccard >= KEEP_JACCARD) one of
    those the stored labels were computed from, one to one; else None (compute them anew). Comparing
    with that basis, not with the previous run, keeps slow drift from going unnoticed."""
    if old is None or not old.labels:
        return None
    numbers = unique_ids(community[community >= 0]).tolist()
    match = best_match(chunk_ids, community, old)
    picked = [match.get(n) for n in numbers]
    if any(m is None or m[1] < KEEP_JACCARD or m[0] not in old.labels for m in picked):
        return None
    matched = [m for m in picked if m is not None]  # all of them, after the check above
    if len({m[0] for m in matched}) != len(matched):
        return None
    sizes = dict(zip(*np.unique(community[community >= 0], return_counts=True)))
    out = {}
    for n, (o, _) in zip(numbers, matched):
        prev = old.labels[o]
        out[n] = (o, CommunityLabel(n, prev.label, prev.keywords, prev.weights, int(sizes[n])))
    return out


# ---- what an index run stores (the SQL is Store's: ragx/index/store.py) ----------------------------

def membership(chunk_ids: np.ndarray, community: np.ndarray, stored: list[tuple]) -> Membership | None:
    """The previous run's state from the stored basis rows and label rows (basis, label, keywords,
    weights, size); None when no labels were computed yet."""
    if not len(chunk_ids):
        return None
    labels = {r[0]: from_row(r) for r in stored}
    return Membership(np.asarray(chunk_ids, dtype=np.int64), np.asarray(community, dtype=np.int64), labels)


def plan_labels(ids: np.ndarray, community: np.ndarray, previous: Membership | None, texts_of, cache: Path | None = None):
    """(rows, rebased) for the communities now stored: rows (community, basis, CommunityLabel) to store.

    When every community is nearly one the stored labels were computed from, those labels and keywords
    are kept (no text is read: `texts_of()` is not called) and the basis stays; otherwise all are
    computed anew from the chunks' text and the current membership becomes the basis (`rebased`)."""
    kept = reuse(ids, community, previous)
    if kept is not None:
        return [(n, basis, lab) for n, (basis, lab) in kept.items()], False
    labels = carry_over(label_communities(texts_of(), community, ids, cache), ids, community, previous)
    return [(n, n, lab) for n, lab in labels.items()], True


def label_row(number: int, basis: int, c: CommunityLabel) -> tuple:
    return (number, basis, c.label, json.dumps(c.keywords), json.dumps(c.weights), c.size)


def from_row(row: tuple) -> CommunityLabel:
    """A stored (community, label, keywords, weights, size) row."""
    return CommunityLabel(row[0], row[1], json.loads(row[2]), json.loads(row[3]), row[4])


def attach_labels(doc: dict, stored: dict[int, CommunityLabel]) -> dict:
    """Add `label` and `keywords` to each community of an inspect document (None / [] when unlabelled)."""
    for c in doc.get("communities", []):
        label = stored.get(c["community"])
        c["label"] = label.label if label else None
        c["keywords"] = label.keywords if label else []
    return doc
