"""BM25 over the FTS5 table. Any user text becomes a valid FTS5 query: bare words OR-ed, each quoted."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from ..index.store import Store

_WORD = re.compile(r"\w+", re.UNICODE)

# Function words carry no topic; dropping them keeps an OR query from matching every chunk.
STOPWORDS = frozenset(
    """a an and are as at be but by for from has have if in into is it its no not of on or such that the their then
    there these they this to was were will with what which who whom how why when where do does did can could
    should would may might than so very""".split()
)


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression for free text, or None when it has no words at all."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    kept = [w for w in words if w not in STOPWORDS] or words
    if not kept:
        return None
    # Inside double quotes FTS5 reads a string (a phrase), never syntax; \w+ holds no quote to escape.
    return " OR ".join(f'"{w}"' for w in kept)


def bm25_matches(store: "Store", text: str) -> tuple[np.ndarray, np.ndarray]:
    """Every matching chunk with its BM25 score (higher is better), best first (ties: smaller id)."""
    query = fts_query(text)
    if query is None:
        return np.empty(0, np.int64), np.empty(0)
    ids, fts5_scores = store.bm25(query)
    scores = -fts5_scores  # FTS5's bm25() is lower-is-better
    order = np.lexsort((ids, -scores))
    return ids[order], scores[order]
