"""BM25's variants: a term's idf, its score in each chunk holding it, and the most it can score.

The variants are those Kamphuis, de Vries, Boytsov and Lin (ECIR 2020) compared. Every one keeps
FTS5's scale, idf times (k1 + 1) at most per term, so the "nothing relevant" thresholds keep their
meaning across variants (they were calibrated on "fts5"; recalibrate with scripts/bench_no_match.py
before trusting them under another). With N live chunks, df chunks holding the term, tf its count in a
chunk of L terms, avgdl the mean L, and K = k1 * (1 - b + b * L / avgdl):

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

import numpy as np

VARIANTS = ("fts5", "lucene", "atire", "bm25l", "bm25+")
DEFAULT_VARIANT = "fts5"
DELTA = {"bm25l": 0.5, "bm25+": 1.0}
_FTS5_FLOOR = 1e-6


def check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"BM25 variant {variant!r} is not one of {', '.join(VARIANTS)}")
    return variant


def idf(variant: str, n: int, df: int) -> float:
    """The term's inverse document frequency under `variant`."""
    if variant == "fts5":
        value = math.log((n - df + 0.5) / (df + 0.5))
        return value if value > 0.0 else _FTS5_FLOOR
    if variant == "lucene":
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    if variant == "atire":
        return math.log(n / max(df, 0.5))
    if variant == "bm25l":
        return math.log((n + 1) / (df + 0.5))
    if variant == "bm25+":
        return math.log((n + 1) / max(df, 0.5))
    raise ValueError(check_variant(variant))  # pragma: no cover - check_variant raises


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
