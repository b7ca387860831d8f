"""BM25's own index: each term's postings (chunk, term frequency) in arrays stored with the generation.

Why not FTS5's `bm25()` alone: it spends ~2 us on every matching row, so a 4-word query matching 9k of
a million chunks took 18-28 ms of a 30 ms budget, and a common word 1.7 s (docs/notes/lexical-at-scale.md).
Here a query reads its few terms' postings and scores them with numpy. The FTS5 table stays (a
generation written before the postings is searched through it); the terms are FTS5's own
(fts_tokens.py) and the score is FTS5's formula, so both paths rank alike, and k1, b and the variant
(scoring/bm25.py) become settings.

A generation holds a base part (lexicon.npz) and a delta part (lexicon-delta.npz) of the chunks added
since the base was written, like the vectors and the graph: an incremental run merges the previous
delta with the new chunks' postings and hard-links the base. Chunks deleted since are still in the
parts; a query drops them (they are not among the snapshot's live ids), so the document counts and
lengths BM25 uses are the live ones.

A part: `ids` (sorted chunk ids) and `length` (terms per chunk); the terms sorted by their UTF-8
bytes (`term_bytes`, `term_at` offsets); per term, `indptr` into `doc` (positions in `ids`) and `tf`.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import cached_property
from itertools import islice
from typing import TYPE_CHECKING, Iterable

import numpy as np

from ..lookup import find_sorted, unique_ids
from ..scoring import bm25
from ..scoring.bm25 import DEFAULT_VARIANT, K1, B, check_variant
from .fts_tokens import BREAK, shared

if TYPE_CHECKING:  # pragma: no cover
    from .snapshot import FileRows

PART_ARRAYS = ("ids", "length", "term_bytes", "term_at", "indptr", "doc", "tf")
POSTINGS = ("doc", "tf")  # read a term's run at a time (snapshot.FileRows), never mapped
BLOCK = 8_192      # texts counted at once (bounds the temporaries: ~100 terms a chunk)


@dataclass(frozen=True)
class LexiconPart:
    ids: np.ndarray         # int64, sorted chunk ids
    length: np.ndarray      # uint32 terms per chunk
    term_bytes: np.ndarray  # uint8, the terms' UTF-8 bytes, sorted terms one after the other
    term_at: np.ndarray     # int64, len(terms) + 1 offsets into term_bytes
    indptr: np.ndarray      # int64, len(terms) + 1 offsets into doc and tf
    doc: "np.ndarray | FileRows"  # int32 positions in ids, ascending within a term
    tf: "np.ndarray | FileRows"   # uint16 (uint32 if a count needs it) occurrences of the term in the chunk

    @classmethod
    def empty(cls) -> "LexiconPart":
        z = np.zeros(1, np.int64)
        return cls(np.empty(0, np.int64), np.empty(0, np.uint32), np.empty(0, np.uint8), z, z, np.empty(0, np.int32), np.empty(0, np.uint16))

    @classmethod
    def build(cls, ids: np.ndarray, texts: Iterable[str]) -> "LexiconPart":
        """The part of chunks `ids` (sorted) whose indexed texts are `texts`, in the same order."""
        counter, texts, start = _Counter(), iter(texts), 0
        while block := list(islice(texts, BLOCK)):  # a block at a time: the texts may stream from the store
            counter.add(block, start)
            start += len(block)
        if start != len(ids):
            raise ValueError(f"{len(ids)} chunk ids but {start} texts")
        return counter.part(np.asarray(ids, dtype=np.int64))

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in PART_ARRAYS}

    def terms(self) -> list[bytes]:
        return [bytes(self.term_bytes[a:b]) for a, b in zip(self.term_at[:-1].tolist(), self.term_at[1:].tolist())]

    def merged(self, keep: np.ndarray, newer: "LexiconPart") -> "LexiconPart":
        """This part's chunks where `keep` (a mask over ids), then `newer`'s (every id above ours): the
        next delta, from two small parts' arrays instead of their texts (O(postings), no tokenizer)."""
        doc, tf = np.asarray(self.doc), np.asarray(self.tf)
        kept = keep[doc]
        renumber = np.cumsum(keep) - 1  # old position -> position among the kept chunks
        our_terms, their_terms = self.terms(), newer.terms()
        names = sorted(set(our_terms) | set(their_terms))
        index = {t: i for i, t in enumerate(names)}
        ours = np.fromiter(map(index.__getitem__, our_terms), np.int64, len(our_terms))
        theirs = np.fromiter(map(index.__getitem__, their_terms), np.int64, len(their_terms))
        all_terms = np.concatenate([ours[self._posting_terms()[kept]], theirs[newer._posting_terms()]])
        all_docs = np.concatenate([renumber[doc[kept]], np.asarray(newer.doc) + int(keep.sum())])
        all_tf = np.concatenate([tf[kept].astype(np.uint32), np.asarray(newer.tf).astype(np.uint32)])
        order = np.argsort(all_terms, kind="stable")  # ours first within a term: positions stay ascending
        return _part(np.concatenate([np.asarray(self.ids)[keep], newer.ids]),
                     np.concatenate([np.asarray(self.length)[keep], newer.length]).astype(np.uint32),
                     names, np.bincount(all_terms, minlength=len(names)), all_docs[order].astype(np.int32), all_tf[order])

    def _posting_terms(self) -> np.ndarray:
        """The term index of each posting (the postings are grouped by term)."""
        return np.repeat(np.arange(len(self.indptr) - 1), np.diff(self.indptr))

    def check(self) -> bool:
        """Lengths agree (a damaged or foreign file is refused before any query reads it)."""
        n_terms = len(self.term_at) - 1
        return (len(self.length) == len(self.ids) and len(self.indptr) == n_terms + 1 and len(self.doc) == len(self.tf)
                and int(self.indptr[-1]) == len(self.doc) and int(self.term_at[-1]) == len(self.term_bytes))

    @cached_property
    def _terms(self) -> "_SortedTerms":
        return _SortedTerms(self.term_bytes, self.term_at)

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(positions in ids, term frequencies) of the chunks holding `term`."""
        key = term.encode()
        at = bisect.bisect_left(self._terms, key)
        if at == len(self._terms) or self._terms[at] != key:
            return np.empty(0, np.int32), np.empty(0, self.tf.dtype)
        lo, hi = int(self.indptr[at]), int(self.indptr[at + 1])
        return self.doc[lo:hi], self.tf[lo:hi]


class _SortedTerms:
    """The part's terms as a sequence of bytes (bisect's binary search reads ~20 of them per term)."""

    def __init__(self, term_bytes: np.ndarray, term_at: np.ndarray):
        self._bytes, self._at = np.ascontiguousarray(term_bytes).data, term_at

    def __len__(self) -> int:
        return len(self._at) - 1

    def __getitem__(self, i: int) -> bytes:
        return bytes(self._bytes[int(self._at[i]) : int(self._at[i + 1])])


class _Counter:
    """Term counts of blocks of texts. Each distinct piece is sent to FTS5's tokenizer once for the whole
    run; its terms are kept as ids (a CSR over pieces), so tokens are counted with numpy, never one by one."""

    def __init__(self) -> None:
        self.piece_id: dict[str, int] = {}
        self.term_id: dict[str, int] = {}
        self.piece_len = np.empty(0, np.int64)    # terms of each known piece
        self.piece_start = np.empty(0, np.int64)  # where they start in piece_terms
        self.piece_terms = np.empty(0, np.int64)
        self.docs: list[np.ndarray] = []
        self.terms: list[np.ndarray] = []
        self.tfs: list[np.ndarray] = []
        self.lengths: list[np.ndarray] = []

    def add(self, texts: list[str], first: int) -> None:
        """Count texts whose positions (in the part) start at `first`."""
        pid, doc = self._pieces(texts)
        n = self.piece_len[pid]
        at = np.repeat(self.piece_start[pid] - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
        term, term_doc = self.piece_terms[at], np.repeat(doc, n)
        self.lengths.append(np.bincount(term_doc, minlength=len(texts)).astype(np.uint32))
        keys = np.sort(term_doc << 32 | term)
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else np.empty(0, np.int64)
        # kept compact (int32 positions and term ids, uint32 counts): a million chunks hold ~80M postings
        self.tfs.append(np.diff(np.r_[starts, len(keys)]).astype(np.uint32))
        self.docs.append(((keys[starts] >> 32) + first).astype(np.int32))
        self.terms.append((keys[starts] & 0xFFFFFFFF).astype(np.int32))

    def _pieces(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(piece id, text index) of every white-space separated piece of `texts`, new pieces learnt."""
        joined = f" {BREAK} ".join(texts)
        per_text = joined.count(BREAK) != max(len(texts) - 1, 0)  # a text holds the break character itself
        split = [t.split() for t in texts] if per_text else [joined.split()]
        pieces = [p for one in split for p in one]
        self._learn([p for p in dict.fromkeys(pieces) if p not in self.piece_id])
        pid = np.fromiter(map(self.piece_id.__getitem__, pieces), np.int64, len(pieces))
        if per_text:
            return pid, np.repeat(np.arange(len(texts)), np.fromiter(map(len, split), np.int64, len(split)))
        return pid, np.cumsum(pid == self.piece_id.get(BREAK, -1))

    def _learn(self, new: list[str]) -> None:
        if not new:
            return
        first = len(self.piece_id)
        self.piece_id.update(zip(new, range(first, first + len(new))))
        piece, terms = shared().of(new)
        ids = self.term_id
        term_ids = np.fromiter((ids.setdefault(t, len(ids)) for t in terms), np.int64, len(terms))
        n = np.bincount(piece, minlength=len(new))
        self.piece_start = np.concatenate([self.piece_start, len(self.piece_terms) + np.cumsum(n) - n])
        self.piece_len = np.concatenate([self.piece_len, n])
        self.piece_terms = np.concatenate([self.piece_terms, term_ids])

    def part(self, ids: np.ndarray) -> LexiconPart:
        if not self.docs:
            return LexiconPart.empty()
        names = list(self.term_id)
        alphabetical = sorted(range(len(names)), key=names.__getitem__)  # code point order = UTF-8 byte order
        rank = np.empty(len(names), np.int64)
        rank[alphabetical] = np.arange(len(names))
        term = rank.astype(np.int32)[np.concatenate(self.terms)]
        self.terms.clear()
        order = np.argsort(term, kind="stable")  # docs stay ascending within a term
        counts = np.bincount(term, minlength=len(names))
        del term
        doc = np.concatenate(self.docs)[order]
        self.docs.clear()
        tf = np.concatenate(self.tfs)[order]
        self.tfs.clear()
        del order
        return _part(ids, np.concatenate(self.lengths), [names[i].encode() for i in alphabetical], counts, doc, tf)


def _part(ids: np.ndarray, length: np.ndarray, terms: list[bytes], counts: np.ndarray, doc: np.ndarray, tf: np.ndarray) -> LexiconPart:
    """A part from its sorted terms, each term's posting count, and the postings in term order."""
    term_at = np.zeros(len(terms) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, terms), np.int64, len(terms)), out=term_at[1:])
    indptr = np.zeros(len(terms) + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    tf_type = np.uint16 if tf.max(initial=0) <= np.iinfo(np.uint16).max else np.uint32
    return LexiconPart(ids, length, np.frombuffer(b"".join(terms), np.uint8), term_at, indptr, doc, tf.astype(tf_type))


@dataclass
class Lexicon:
    """A generation's postings (base and delta parts) seen through its live chunk ids."""

    base: LexiconPart
    delta: LexiconPart
    live: np.ndarray  # sorted live chunk ids of the snapshot

    @cached_property
    def _alive(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Per part, which of its chunks are live (None: all of them, the common case)."""
        if len(self.base.ids) + len(self.delta.ids) == len(self.live):
            return None, None
        return find_sorted(self.live, self.base.ids)[1], find_sorted(self.live, self.delta.ids)[1]

    @cached_property
    def avgdl(self) -> float:
        """Mean terms per live chunk (FTS5: total terms over rows)."""
        total = 0
        for part, alive in zip((self.base, self.delta), self._alive):
            lengths = part.length if alive is None else part.length[alive]
            total += int(lengths.sum(dtype=np.int64))
        return total / len(self.live) if len(self.live) else 0.0

    def check(self) -> bool:
        """The parts are whole and hold at least the live chunks' count (an O(1) test: a query's load
        must not search a million ids; a live chunk missing from both parts is damage the checksums catch)."""
        return self.base.check() and self.delta.check() and len(self.base.ids) + len(self.delta.ids) >= len(self.live)

    def covers_live(self) -> bool:
        """Every live chunk is in a part (O(chunks): `ragx status --deep`, not a query's load)."""
        stored = np.concatenate([np.asarray(self.base.ids), np.asarray(self.delta.ids)])  # delta ids follow the base's
        return bool(find_sorted(stored, self.live)[1].all())

    def matches(self, terms: list[str], k1: float = K1, b: float = B, variant: str = DEFAULT_VARIANT) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, BM25 scores, higher is better) of every live chunk holding one of `terms`, in id
        order (the delta's chunks are newer than the base's). A term listed twice counts twice, as a
        phrase repeated in an FTS5 query does."""
        ids, scores, _ = self.scored(terms, k1, b, variant)
        return ids, scores

    def scored(self, terms: list[str], k1: float = K1, b: float = B, variant: str = DEFAULT_VARIANT) -> tuple[np.ndarray, np.ndarray, float]:
        """`matches`, and the ceiling from the same postings lookups: the most BM25 could give one chunk
        on `terms`, the sum of each term's limit as its count in a chunk grows (bm25.term_ceiling). A
        term no live chunk holds counts at df = 0 (the most it would be worth), so a query whose words
        the corpus lacks has a high ceiling it cannot reach. `variant`: one of bm25.VARIANTS."""
        check_variant(variant)
        parts = (self.base, self.delta)
        found = []  # per term, per part: (positions in the part, the term's score there)
        ceiling = 0.0
        for term in terms:
            runs = [self._live_postings(part, alive, term) for part, alive in zip(parts, self._alive)]
            df = sum(len(doc) for doc, _ in runs)
            term_idf = bm25.idf(variant, len(self.live), df)
            ceiling += bm25.term_ceiling(variant, term_idf, k1)
            if df:
                found.append([(doc, bm25.term_scores(variant, term_idf, tf, part.length[doc], self.avgdl, k1, b))
                              for (doc, tf), part in zip(runs, parts)])
        ids, scores = [], []
        for i, part in enumerate(parts):
            ids_i, scores_i = _summed([term[i] for term in found], len(part.ids))
            ids.append(part.ids[ids_i])
            scores.append(scores_i)
        return np.concatenate(ids), np.concatenate(scores), ceiling

    @staticmethod
    def _live_postings(part: LexiconPart, alive: np.ndarray | None, term: str) -> tuple[np.ndarray, np.ndarray]:
        doc, tf = part.postings(term)
        if alive is not None and len(doc):
            keep = alive[doc]
            doc, tf = doc[keep], tf[keep]
        return doc, tf


DENSE_SHARE = 8  # a query whose postings exceed a part's chunks / this is summed in one array per part


def _summed(runs: list[tuple[np.ndarray, np.ndarray]], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(positions, summed scores) of the positions in `runs`, ascending. Either way a chunk's terms
    are added in query order starting from 0.0, as FTS5 adds its phrases."""
    total = sum(len(doc) for doc, _ in runs)
    if total == 0:
        return np.empty(0, np.int64), np.empty(0)
    if total > n // DENSE_SHARE:  # a common word: one array over the part, no sort of a million matches
        score, hit = np.zeros(n), np.zeros(n, bool)
        for doc, contribution in runs:
            score += np.bincount(doc, contribution, n)
            hit[doc] = True
        positions = np.flatnonzero(hit)
        return positions, score[positions]
    every = np.concatenate([doc for doc, _ in runs])
    positions = unique_ids(every)
    return positions, np.bincount(np.searchsorted(positions, every), np.concatenate([c for _, c in runs]), len(positions))
