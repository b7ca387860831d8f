"""BM25's variants: a term's idf, its score in each chunk holding it, and the most it can score.

The variants are those Kamphuis, de Vries, Boytsov and Lin (ECIR 2020) compared, each with FTS5's
(k1 + 1) factor kept (bm25s leaves it out of Robertson's and Lucene's; rankings are the same). The
"nothing relevant" thresholds were calibrated under "fts5" and do not carry to every other formula
(under bm25+ far more off-topic queries pass: research/2026-12-04-bm25-variants.md); recalibrate
with scripts/bench/bench_no_match.py --bm25-variant. With N live chunks, df chunks holding the term, tf its
count in a chunk of L terms, avgdl the mean L, and K = k1 * (1 - b + b * L / avgdl):

    fts5    SQLite FTS5's bm25(), the default: log((N - df + 0.5) / (df + 0.5)), floored at 1e-6
            (a term in more than half the chunks) * tf (k1 + 1) / (tf + K)
    lucene  Lucene's idf, never negative: log(1 + (N - df + 0.5) / (df + 0.5)) * tf (k1 + 1) / (tf + K)
    atire   log(N / df) * tf (k1 + 1) / (tf + K)
    bm25l   log((N + 1) / (df + 0.5)) * (k1 + 1) (c + delta) / (k1 + c + delta),
            c = tf / (1 - b + b * L / avgdl), delta = 0.5: long chunks are not pushed below short ones
    bm25+   log((N + 1) / df) * (tf (k1 + 1) / (tf + K) + delta), delta = 1: any chunk holding the term
            gains at least delta * idf, however long

A chunk holding none of a query's terms scores 0 under every variant (Lv and Zhai's lower bounds apply
to a term present; BM25 is a sum over the terms a chunk holds). A term no live chunk holds counts in
the ceiling at df = 0, or 0.5 where the formula divides by df.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

DELTA = {"bm25l": 0.5, "bm25+": 1.0}
_FTS5_FLOOR = 1e-6  # FTS5's idf for a term in more than half the chunks

# Each variant's idf of a term held by df of n chunks; the table names the variants.
_IDF: dict[str, Callable[[int, int], float]] = {
    "fts5": lambda n, df: max(math.log((n - df + 0.5) / (df + 0.5)), 0.0) or _FTS5_FLOOR,
    "lucene": lambda n, df: math.log(1.0 + (n - df + 0.5) / (df + 0.5)),
    "atire": lambda n, df: math.log(n / max(df, 0.5)),
    "bm25l": lambda n, df: math.log((n + 1) / (df + 0.5)),
    "bm25+": lambda n, df: math.log((n + 1) / max(df, 0.5)),
}
VARIANTS = tuple(_IDF)
DEFAULT_VARIANT = "fts5"
K1, B = 1.2, 0.75  # FTS5's bm25() constants: the defaults, so both paths (lexicon, FTS5 table) score alike


def check_variant(variant: str) -> str:
    if variant not in _IDF:
        raise ValueError(f"BM25 variant {variant!r} is not one of {', '.join(VARIANTS)}")
    return variant


def idf(variant: str, n: int, df: int) -> float:
    """The term's inverse document frequency under `variant`."""
    return _IDF[check_variant(variant)](n, df)


def term_scores(variant: str, term_idf: float, tf: np.ndarray, length: np.ndarray, avgdl: float, k1: float, b: float) -> np.ndarray:
    """The term's score in each chunk holding it (`tf` > 0, the chunk's `length` in terms)."""
    tf, length = tf.astype(np.float64), length.astype(np.float64)
    if variant == "bm25l":
        c = tf / (1 - b + b * length / avgdl) + DELTA[variant]
        return term_idf * ((k1 + 1.0) * c / (k1 + c))
    # FTS5's expression in its order of operations: the same doubles, the same ranking as its bm25()
    saturated = (tf * (k1 + 1.0)) / (tf + k1 * (1 - b + b * length / avgdl))
    if variant == "bm25+":
        return term_idf * (saturated + DELTA[variant])
    return term_idf * saturated


def term_ceiling(variant: str, term_idf: float, k1: float) -> float:
    """The most the term can give one chunk, its limit as its count in a chunk grows."""
    floor = DELTA[variant] if variant == "bm25+" else 0.0  # bm25+ adds delta to every present term
    return term_idf * (k1 + 1.0 + floor)
