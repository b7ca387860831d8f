"""Words and word pairs of chunk texts, counted into a sparse chunk x term matrix (community labels).

Tokens: TOKEN_PATTERN (words of 2 to 32 characters that start with a letter) of the text as a reader
sees it (ragx/ingest/readable.py: links as their labels, no web addresses, no HTML/SVG tags; one call
per text), lower-cased, stop words dropped; word pairs are neighbours in what remains ("boundary of the
layer" gives "boundary layer"). No Python code runs per token: a block of texts is joined and split
at white space in one call, each DISTINCT piece is cut into words by the regex once, pieces and words
become integer ids through dicts mapped in C, and everything after that is numpy (pairs are int64
keys, counts come from scipy.sparse summing duplicate (chunk, term) entries).

Vocabulary: the terms found in at least `min_df` chunks of a fit sample, at most MAX_TERMS of them
(most chunks first, ties alphabetical). The sample is every chunk up to FIT_CHUNKS and an evenly
spread FIT_CHUNKS above, so fitting costs the same memory at 100k chunks as at 1M (a term rare in
the sample is then left out: at 1M chunks a term needs roughly min_df x 20 chunks to be a keyword).
Counting (transform) goes in blocks of BLOCK texts against the fixed vocabulary, so its temporaries
are bounded too; only the result (6 bytes per distinct term of each chunk) grows with N.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from ..ingest.readable import without_markup
from ..lookup import find_sorted
from .stop_words import STOP_WORDS

MAX_WORD = 32
TOKEN_PATTERN = r"(?u)\b[^\W\d_][\w\-']{0,%d}[^\W_]\b" % (MAX_WORD - 2)
_TOKEN = re.compile(TOKEN_PATTERN)
FIT_CHUNKS = 50_000   # chunks the vocabulary is fitted on at most (an evenly spread sample above)
MAX_TERMS = 200_000   # terms kept at most (by the number of chunks they occur in)
BLOCK = 8_192         # texts tokenised at once
COUNT_DTYPE = np.uint16  # a term's count in one chunk (chunks are a few hundred tokens)
_BREAK = "\x00"       # between two texts of a block (a text holding one is split on its own)


def _pieces(texts: list[str]) -> tuple[list[str], np.ndarray | None]:
    """The white-space separated pieces of `texts`, lower-cased, and the text index of each piece
    (None: the texts are joined by _BREAK pieces, which tell)."""
    texts = list(map(without_markup, texts))
    joined = f" {_BREAK} ".join(texts).lower()
    if joined.count(_BREAK) == max(len(texts) - 1, 0):
        return joined.split(), None
    split = [t.lower().split() for t in texts]  # a text holds the separator itself: one call per text
    lengths = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
    return [p for one in split for p in one], np.repeat(np.arange(len(texts), dtype=np.int64), lengths)


def tokens(texts: list[str], word_id) -> tuple[np.ndarray, np.ndarray]:
    """(id of each word, text index of each word) of `texts` in reading order, stop words dropped.

    `word_id(list of words) -> list of ids` names the words (-1: not in the vocabulary)."""
    pieces, doc = _pieces(texts)
    piece_id = {p: i for i, p in enumerate(dict.fromkeys(pieces))}
    pid = np.fromiter(map(piece_id.__getitem__, pieces), dtype=np.int64, count=len(pieces))
    if doc is None:
        doc = np.cumsum(pid == piece_id.get(_BREAK, -1))
    words_of = [[w for w in _TOKEN.findall(p) if w not in STOP_WORDS] for p in piece_id]  # once per distinct piece
    n_words = np.fromiter(map(len, words_of), dtype=np.int64, count=len(words_of))
    flat = np.asarray(word_id([w for ws in words_of for w in ws]), dtype=np.int64)
    count = n_words[pid]
    start = (np.cumsum(n_words) - n_words)[pid]
    offset = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    return flat[np.repeat(start, count) + offset], np.repeat(doc, count)


def _pairs(word_ids: np.ndarray, doc: np.ndarray, n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """(int64 key first * n_words + second, text index) of each pair of neighbouring known words."""
    ok = (doc[1:] == doc[:-1]) & (word_ids[1:] >= 0) & (word_ids[:-1] >= 0)
    return word_ids[:-1][ok] * n_words + word_ids[1:][ok], doc[1:][ok]


def _doc_freq(keys: np.ndarray, doc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys, the number of distinct texts each occurs in)."""
    if not len(keys):
        return keys, np.empty(0, np.int64)
    order = np.lexsort((doc, keys))
    k, d = keys[order], doc[order]
    first = np.r_[True, (k[1:] != k[:-1]) | (d[1:] != d[:-1])]
    return np.unique(k[first], return_counts=True)


def fit_sample(n: int) -> np.ndarray:
    """Indices of the texts the vocabulary is fitted on: all of them, or FIT_CHUNKS evenly spread."""
    if n <= FIT_CHUNKS:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, FIT_CHUNKS).astype(np.int64))


@dataclass(frozen=True)
class Vocabulary:
    terms: np.ndarray          # sorted term strings: the matrix's columns
    index: dict[str, int]      # word -> word id, for every word occurring in a term
    word_col: np.ndarray       # column of each word id as a term of its own, -1 if it is only part of pairs
    pair_keys: np.ndarray      # sorted int64 keys (first * len(index) + second) of the pair terms
    pair_col: np.ndarray       # their columns

    @classmethod
    def fit(cls, texts: list[str], min_df: int, max_terms: int = MAX_TERMS) -> "Vocabulary | None":
        """The vocabulary of `texts` (a sample: fit_sample); None when no term reaches min_df."""
        names: dict[str, int] = {}

        def grow(words: list[str]) -> list[int]:  # called once per distinct piece of a block, not per token
            return [names.setdefault(w, len(names)) for w in words]

        blocks = [tokens(texts[i : i + BLOCK], grow) for i in range(0, len(texts), BLOCK)]
        ids = np.concatenate([w for w, _ in blocks]) if blocks else np.empty(0, np.int64)
        doc = np.concatenate([d + i * BLOCK for i, (_, d) in enumerate(blocks)]) if blocks else np.empty(0, np.int64)
        words = np.array(list(names), dtype=str)
        uni, uni_df = _doc_freq(ids, doc)
        frequent = np.full(len(words), -1, np.int64)
        frequent[uni[uni_df >= min_df]] = uni[uni_df >= min_df]
        pair, pair_df = _doc_freq(*_pairs(frequent[ids], doc, len(words)))  # a frequent pair has frequent words
        uni, uni_df = uni[uni_df >= min_df], uni_df[uni_df >= min_df]
        pair, pair_df = pair[pair_df >= min_df], pair_df[pair_df >= min_df]
        if not len(uni) + len(pair):
            return None
        firsts, seconds = words[pair // len(words)], words[pair % len(words)]
        names_of = np.concatenate([words[uni], np.char.add(np.char.add(firsts, " "), seconds)]) if len(pair) else words[uni]
        df = np.concatenate([uni_df, pair_df])
        return cls.from_terms(np.sort(names_of[np.lexsort((names_of, -df))[:max_terms]]))

    @classmethod
    def from_terms(cls, terms: np.ndarray) -> "Vocabulary":
        """The vocabulary whose columns are `terms` (sorted strings; a pair holds one space)."""
        terms = np.asarray(terms).astype(str)
        first, _, second = np.char.partition(terms, " ").T if len(terms) else (terms, terms, terms)
        is_pair = np.char.str_len(second) > 0
        words = np.unique(np.concatenate([first, second[is_pair]]))
        word_col = np.full(len(words), -1, np.int64)
        word_col[np.searchsorted(words, first[~is_pair])] = np.flatnonzero(~is_pair)
        keys = np.searchsorted(words, first[is_pair]) * len(words) + np.searchsorted(words, second[is_pair])
        order = np.argsort(keys)
        index = dict(zip(words.tolist(), range(len(words))))
        return cls(terms, index, word_col, keys[order], np.flatnonzero(is_pair)[order])

    def transform(self, texts: list[str]):
        """The chunk x term count matrix of `texts` (CSR, COUNT_DTYPE counts, int32 columns)."""
        from scipy import sparse

        parts = [self._block(texts[i : i + BLOCK]) for i in range(0, len(texts), BLOCK)]
        if not parts:
            return sparse.csr_matrix((0, len(self.terms)), dtype=COUNT_DTYPE)
        return sparse.vstack(parts, format="csr", dtype=COUNT_DTYPE)

    def _known(self, words: list[str]) -> list[int]:
        return list(map(self.index.get, words, repeat(-1)))

    def _block(self, texts: list[str]):
        from scipy import sparse

        ids, doc = tokens(texts, self._known)
        uni_col = np.where(ids >= 0, self.word_col[np.maximum(ids, 0)], -1)
        keys, pair_doc = _pairs(ids, doc, len(self.index))
        pos = _lookup(keys, self.pair_keys)
        rows = np.concatenate([doc[uni_col >= 0], pair_doc[pos >= 0]])
        cols = np.concatenate([uni_col[uni_col >= 0], self.pair_col[pos[pos >= 0]]])
        counts = sparse.csr_matrix((np.ones(len(rows), np.int32), (rows, cols)), shape=(len(texts), len(self.terms)))
        counts.sum_duplicates()
        return counts.astype(COUNT_DTYPE)


def _lookup(values: np.ndarray, sorted_table: np.ndarray) -> np.ndarray:
    """Position of each value in a sorted table, -1 where absent."""
    pos, found = find_sorted(sorted_table, values)
    return np.where(found, pos, -1)
