"""The BM25 leg: every chunk matching a query's words, scored.

A query's words (letters and digits, lower-cased, function words dropped unless nothing else is left)
are OR-ed, with the added terms of the identifiers it names (index/identifiers.py), once each. A
generation with postings (index/lexicon.py) is scored from them, with FTS5's terms and formula (or
another BM25 variant: scoring/bm25.py); an older one asks the FTS5 table for the words (same ranking,
k1 = 1.2, b = 0.75 and FTS5's variant fixed there).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ManifestMismatchError
from ..index.fts_tokens import shared
from ..index.identifiers import identifier_parts, may_hold_identifiers
from ..scoring.bm25 import DEFAULT_VARIANT, K1, B

if TYPE_CHECKING:  # pragma: no cover
    from ..index.snapshot import Snapshot
    from ..index.store import Store

# Letters and digits only: an underscore splits words ("snake_case" is two), as FTS5's tokenizer does,
# so each word is one term and both BM25 paths read a query alike (an FTS5 phrase of two terms would
# ask for them side by side, the postings cannot).
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

# Function words carry no topic; dropping them keeps an OR query from matching every chunk.
STOPWORDS = frozenset(
    """a an and are as at be but by for from has have if in into is it its no not of on or such that the their then
    there these they this to was were will with what which who whom how why when where do does did can could
    should would may might than so very""".split()
)


def query_words(text: str) -> list[str]:
    """The words BM25 searches for, each once, in the order written: its function words dropped, unless
    it has nothing else."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    return [w for w in words if w not in STOPWORDS] or words


# An identifier as a query writes it (parse_args, parseArgs, click.core.Context.invoke): case kept.
_IDENTIFIER = re.compile(r"\w+(?:\.\w+)*", re.UNICODE)


def bm25_terms(text: str) -> list[str]:
    """The terms BM25 searches for: those of `query_words` (a stem two words share counts twice, as
    before), then each identifier's added terms (its camel parts, its joined form: index/identifiers.py),
    each once and only if not already there. Once, because a pasted issue repeats one name in many
    identifiers (admin_blueprint, register_blueprint, ...): counting `blueprint` for each would let one
    word outweigh the rest of the query (flask-5063 fell from rank 1 to 13 on the BM25 leg)."""
    tokens = shared()
    terms = tokens.of_words(query_words(text))
    if not may_hold_identifiers(text):  # plain prose (most queries): nothing to add, and no regex pass per name
        return terms
    names = dict.fromkeys(w for w in _IDENTIFIER.findall(text) if w.lower() not in STOPWORDS)
    have = set(terms)
    added = [t for t in dict.fromkeys(tokens.of_words([p for w in names for p in identifier_parts(w)])) if t not in have]
    return terms + added


def only_function_words(text: str) -> bool:
    """Whether every word of `text` is a function word ("is it"): BM25 still searches for them, but
    matching them is no evidence of a topic."""
    return all(w.lower() in STOPWORDS for w in _WORD.findall(text))


def fts5_any(words: list[str]) -> str:
    """An FTS5 expression matching any of `words`. Inside double quotes FTS5 reads a string (a phrase),
    never syntax; a word (letters and digits) holds no quote to escape."""
    return " OR ".join(f'"{w}"' for w in words)


def bm25_matches(snap: "Snapshot", store: "Store", text: str, k1: float = K1, b: float = B,
                 variant: str = DEFAULT_VARIANT) -> tuple[np.ndarray, np.ndarray]:
    """Every matching chunk with its BM25 score (higher is better), best first (ties: smaller id)."""
    ids, scores, _ = bm25_leg(snap, store, text, k1, b, variant)
    return ids, scores


def bm25_leg(snap: "Snapshot", store: "Store", text: str, k1: float = K1, b: float = B,
             variant: str = DEFAULT_VARIANT) -> tuple[np.ndarray, np.ndarray, float]:
    """`bm25_matches`, and the query's ceiling: the most BM25 could give one chunk on its words
    (index/lexicon.py `scored`); 0 for a generation without postings, whose FTS5 table does not tell
    its document frequencies."""
    words = query_words(text)
    if not words:
        return np.empty(0, np.int64), np.empty(0), 0.0
    if snap.lexicon is None and (k1, b, variant) != (K1, B, DEFAULT_VARIANT):
        raise ManifestMismatchError(f"bm25_k1 = {k1}, bm25_b = {b}, bm25_variant = {variant!r} need BM25 postings, "
                                    "which this index predates: run `ragx index`")
    if snap.lexicon is not None:
        ids, scores, ceiling = snap.lexicon.scored(bm25_terms(text), k1, b, variant)
    else:
        ids, fts5_scores = store.bm25(fts5_any(words))
        scores, ceiling = -fts5_scores, 0.0  # FTS5's bm25() is lower-is-better
    order = np.lexsort((ids, -scores))
    return ids[order], scores[order], ceiling
