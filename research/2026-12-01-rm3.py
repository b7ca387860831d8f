"""Lexical pseudo-relevance feedback (RM3) at equal candidates (issue 13): the lexical twin of the
dense Rocchio feedback in research/2026-12-01-prf-and-sentences.py, which lost on the vault's train
queries. Everything is the shipped defaults' scoring of the same cached pass (dense 100 + BM25 100
seeds, graph off); only the BM25 signal of the pass's candidates changes:

    feedback  = the top-k chunks of the defaults' ranking, each weighted by its final score
    P(w | R)  = sum over feedback chunks of score * tf(w, chunk) / len(chunk), over the chunk's indexed
                terms (FTS5's terms: what BM25 searches), stopwords excluded; the m best, normalised
    lexical' = lam * BM25(query) / max + (1 - lam) * sum_w P(w | R) * BM25(w) / max   (per candidate)

    RAGX_CACHE_DIR=... python research/2026-12-01-rm3.py study dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-01-rm3.py study <key> dendron-vault-test scifact-test cranfield-test musique-small-test  # once, the train choice
    RAGX_CACHE_DIR=... python research/2026-12-01-rm3.py compare <key> dendron-vault-test ...
    RAGX_CACHE_DIR=... python research/2026-12-01-rm3.py pooled <key> dendron-vault-test scifact-test cranfield-test musique-small-test

Per-query results go to $RAGX_CACHE_DIR/research-prf/rm3-results.json.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness
from lab.studies.harness import run_command, studied
from lab.studies.research_scripts import load_script

file_bm25 = load_script("2026-12-01-file-bm25.py")

from ragx.index.fts_tokens import shared  # noqa: E402
from ragx.scoring.score import score  # noqa: E402
from ragx.search.lexical import STOPWORDS  # noqa: E402

GRID = list(itertools.product((3, 10), (10, 20), (0.5, 0.7)))  # (k, m, lam), fixed before running
RESULTS = harness.OUT / "rm3-results.json"


def key_of(k: int, m: int, lam: float) -> str:
    return f"k{k}m{m}l{lam}"


class Feedback:
    def __init__(self, corpus, p):
        corpus.searcher.refresh()
        self.snap, self.store, self.p = corpus.searcher.snapshot, corpus.searcher.store, p
        self.stop = set(shared().of_words(sorted(STOPWORDS)))
        self._terms: dict[int, tuple[list[str], np.ndarray]] = {}  # chunk id -> (distinct terms, counts)
        self._bm25: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def terms_of(self, ids: np.ndarray) -> list[tuple[list[str], np.ndarray]]:
        new = [int(i) for i in ids if int(i) not in self._terms]
        if new:
            got, texts = self.store.chunk_texts(np.array(new, np.int64))
            doc, terms = shared().of(texts)
            for j, cid in enumerate(got.tolist()):
                mine = [terms[t] for t in np.flatnonzero(doc == j)]
                names, counts = np.unique(np.array(mine, dtype=object), return_counts=True) if mine else ([], np.empty(0))
                self._terms[cid] = (list(names), counts.astype(np.float64))
        return [self._terms[int(i)] for i in ids]

    def bm25_of(self, term: str, nodes: np.ndarray) -> np.ndarray:
        if term not in self._bm25:
            self._bm25[term] = self.snap.lexicon.matches([term], self.p.bm25_k1, self.p.bm25_b)
        ids, scores = self._bm25[term]
        out = np.zeros(len(nodes))
        if len(ids):
            at = np.minimum(np.searchsorted(ids, nodes), len(ids) - 1)  # matches() returns ids in id order
            hit = ids[at] == nodes
            out[hit] = scores[at[hit]]
        return out

    def expanded(self, c, k: int, m: int, lam: float):
        ranking = score(c, self.p)
        top = ranking.order[:k]
        weights: dict[str, float] = {}
        for (names, counts), s in zip(self.terms_of(c.nodes[top]), ranking.score[top]):
            total = counts.sum()
            for name, n in zip(names, counts):
                if name not in self.stop:
                    weights[name] = weights.get(name, 0.0) + float(s) * n / total
        best = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[:m]
        norm = sum(w for _, w in best) or 1.0
        extra = sum((w / norm) * self.bm25_of(t, c.nodes) for t, w in best) if best else np.zeros(len(c.nodes))
        return replace(c, lexical=lam * file_bm25._scaled(c.lexical) + (1 - lam) * file_bm25._scaled(np.asarray(extra, float)))


def study(specs: list[str], keys: list[str] | None) -> None:
    for spec, (_coll, corpus, passes, meta, _qv, p), base, results in studied(specs, RESULTS):
        fb = Feedback(corpus, p)
        for k, m, lam in GRID:
            key = key_of(k, m, lam)
            if keys and key not in keys:
                continue
            mean, results[key] = harness.ndcg([fb.expanded(c, k, m, lam) for c in passes], p, meta)
            print(f"{spec} {key} {mean:.4f} ({mean - base:+.4f})", flush=True)


def _study_command(argv: list[str]) -> None:
    """`study [KEY] SPEC...`: KEY ("k10m10l0.7") runs that grid point only."""
    chosen = [argv[1]] if argv[1].startswith("k") else None
    study(argv[2:] if chosen else argv[1:], chosen)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, _study_command)
