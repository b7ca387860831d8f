"""Term proximity and query-term coverage as lexical evidence (issue 13).

BM25 scores each query term on its own: a chunk holding "vitamin" in one paragraph and "deficiency" in
another scores like one that says "vitamin D deficiency". Term-dependence models (ordered and unordered
windows over pairs of query terms, as in the sequential dependence model) and query-term coverage are
the classic lexical evidence that BM25 does not hold. Here each becomes a per-candidate feature mixed
into the BM25 signal of the shipped defaults' cached pass (dense 100 + BM25 100 seeds, graph off):

    lexical' = (1 - a) * BM25 / max + a * feature / max        (each scaled by its best candidate)

Features, over the chunk's FTS5 terms (the BM25 leg's own tokenizer: porter unicode61) in reading order;
query pairs are neighbours among the query's terms after stop words are dropped:
    od3    sum over pairs of (idf1 + idf2) * sat(#times term 2 follows term 1 within 3 positions)
    uw8    the same for the two terms within 8 positions of each other, either order
    cover  idf-weighted share of the query's distinct terms the chunk holds
sat(tf) = tf (k1 + 1) / (tf + k1 (1 - b + b len / avglen)), k1 = 1.2, b = 0.75, idf as the BM25 leg's
(chunk document frequencies). Everything else is the defaults' scoring (anchors included), so the
candidates are equal by construction.

Grid fixed before running: feature in {od3, uw8, cover} x a in {0.15, 0.3, 0.5}. Chosen on TRAIN by
the mean gain over dendron-vault train and SciFact train; the four test sets run once with the choice.

    RAGX_CACHE_DIR=... python research/2026-12-02-term-proximity.py study dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-02-term-proximity.py study dendron-vault-test scifact-test cranfield-test musique-small-test
    RAGX_CACHE_DIR=... python research/2026-12-02-term-proximity.py compare od3a0.3 dendron-vault-test scifact-test ...
    RAGX_CACHE_DIR=... python research/2026-12-02-term-proximity.py pooled od3a0.3 dendron-vault-test scifact-test cranfield-test musique-small-test

Per-query results go to $RAGX_CACHE_DIR/research-prf/term-proximity-results.json.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness
from lab.studies.harness import run_command, studied
from ragx.index.fts_tokens import shared
from ragx.index.stop_words import STOP_WORDS
from ragx.search.lexical import query_words

FEATURES = ("od3", "uw8", "cover")
GRID = (0.15, 0.3, 0.5)
K1, B = 1.2, 0.75
RESULTS = harness.OUT / "term-proximity-results.json"


class ChunkTerms:
    """Every chunk's FTS5 terms in reading order (as term ids), their document frequencies and lengths."""

    def __init__(self, store):
        ids, _, _, texts = store.every_chunk()
        self.ids = np.asarray(ids, dtype=np.int64)
        split = [t.split() for t in texts]
        pieces = list(dict.fromkeys(p for ps in split for p in ps))
        piece_of, terms = shared().of(pieces)
        self.vocab: dict[str, int] = {}
        term_ids = np.fromiter((self.vocab.setdefault(t, len(self.vocab)) for t in terms), np.int64, len(terms))
        # the terms of each piece: a slice of term_ids
        starts = np.searchsorted(piece_of, np.arange(len(pieces) + 1))
        where = {p: i for i, p in enumerate(pieces)}
        self.seqs = []
        for ps in split:
            rows = [where[p] for p in ps]
            parts = [term_ids[starts[r]:starts[r + 1]] for r in rows]
            self.seqs.append(np.concatenate(parts) if parts else np.empty(0, np.int64))
        n = len(self.seqs)
        df = np.zeros(len(self.vocab))
        for s in self.seqs:
            df[np.unique(s)] += 1
        idf = np.log((n - df + 0.5) / (df + 0.5))
        self.idf = np.where(idf > 0, idf, 1e-6)
        self.length = np.array([len(s) for s in self.seqs], dtype=np.float64)
        self.avglen = float(self.length.mean())
        self._positions: dict[int, dict[int, np.ndarray]] = {}

    def positions(self, row: int) -> dict[int, np.ndarray]:
        """term id -> sorted positions in chunk `row` (cached)."""
        got = self._positions.get(row)
        if got is None:
            s = self.seqs[row]
            order = np.argsort(s, kind="stable")
            terms, first = np.unique(s[order], return_index=True)
            bounds = np.append(first, len(s))
            got = {int(t): order[bounds[i]:bounds[i + 1]] for i, t in enumerate(terms)}
            self._positions[row] = got
        return got

    def query_terms(self, query: str) -> list[int]:
        words = [w for w in query_words(query) if w.lower() not in STOP_WORDS]
        return [self.vocab[t] for t in shared().of_words(words) if t in self.vocab]

    def features(self, query: str, nodes: np.ndarray) -> dict[str, np.ndarray]:
        q = self.query_terms(query)
        pairs = [(a, b) for a, b in zip(q, q[1:]) if a != b]
        distinct = list(dict.fromkeys(q))
        rows = np.searchsorted(self.ids, nodes)
        out = {f: np.zeros(len(nodes)) for f in FEATURES}
        total_idf = float(self.idf[distinct].sum()) if distinct else 0.0
        for i, row in enumerate(rows.tolist()):
            pos = self.positions(row)
            norm = K1 * (1 - B + B * self.length[row] / self.avglen)
            for a, b in pairs:
                pa, pb = pos.get(a), pos.get(b)
                if pa is None or pb is None:
                    continue
                w = self.idf[a] + self.idf[b]
                od = int((np.searchsorted(pb, pa + 3, "right") - np.searchsorted(pb, pa + 1, "left")).sum())
                uw = int((np.searchsorted(pb, pa + 8, "right") - np.searchsorted(pb, pa - 8, "left")).sum())
                out["od3"][i] += w * od * (K1 + 1) / (od + norm) if od else 0.0
                out["uw8"][i] += w * uw * (K1 + 1) / (uw + norm) if uw else 0.0
            if total_idf > 0:
                out["cover"][i] = sum(self.idf[t] for t in distinct if t in pos) / total_idf
        return out


def _scaled(x: np.ndarray) -> np.ndarray:
    top = float(np.max(x)) if len(x) else 0.0
    return x / top if top > 0 else np.zeros(len(x))


def study(specs: list[str]) -> None:
    for spec, (_coll, corpus, passes, meta, _qv, p), base, results in studied(specs, RESULTS):
        terms = ChunkTerms(corpus.searcher.store)
        feats = [terms.features(c.query, c.nodes) for c in passes]
        for f in FEATURES:
            for a in GRID:
                variant = [replace(c, lexical=(1 - a) * _scaled(c.lexical) + a * _scaled(x[f])) for c, x in zip(passes, feats)]
                mean, results[f"{f}a{a}"] = harness.ndcg(variant, p, meta)
                print(f"{spec} {f}a{a} {mean:.4f} ({mean - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
