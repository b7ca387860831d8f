"""The lexical twin of the file-centroid study (issue 13): BM25 of the query over the chunk's whole file.

The 2026-11-30 lexical study found chunk-level BM25 (a file scoring its best chunk) 0.011-0.012 nDCG@10
under file-level BM25 on SciFact: an abstract split into two chunks loses half its term statistics.
Here a candidate's lexical signal becomes (1 - a) * chunk BM25 / max + a * file BM25 / max (each scaled
by its largest value among the query's candidates), where the file's BM25 treats the whole file as one
document: term frequencies and length summed over its chunks (from the generation's postings, no new
index), document frequency and average length over files. Same k1, b as the chunk leg. Everything else
is the shipped defaults' scoring of the same cached pass (dense 100 + BM25 100 seeds, graph off), so
candidate budgets are equal by construction. Optionally with the file-centroid dense signal (a = 0.3,
research/2026-12-01-file-centroid.md) beside it.

    RAGX_CACHE_DIR=... python research/2026-12-01-file-bm25.py study dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-01-file-bm25.py study dendron-vault-test scifact-test ...   # once, after choosing on train
    RAGX_CACHE_DIR=... python research/2026-12-01-file-bm25.py compare l0.5 dendron-vault-test scifact-test
    RAGX_CACHE_DIR=... python research/2026-12-01-file-bm25.py pooled l0.5+c dendron-vault-test scifact-test cranfield-test musique-small-test

Per-query results go to $RAGX_CACHE_DIR/research-prf/file-bm25-results.json.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness
from lab.studies.harness import run_command, studied
from lab.studies.research_scripts import load_script

centroid = load_script("2026-12-01-file-centroid.py")

from ragx.index.fts_tokens import shared  # noqa: E402
from ragx.search.lexical import query_words  # noqa: E402

GRID = (0.25, 0.5, 0.75, 1.0)
CENTROID_A = 0.3  # the file-centroid study's choice on train
RESULTS = harness.OUT / "file-bm25-results.json"


class FileBM25:
    """BM25 over files, each the concatenation of its chunks, from a snapshot's chunk postings."""

    def __init__(self, snap, k1: float, b: float):
        lex = snap.lexicon
        ids, file_ids = np.asarray(snap.ids), np.asarray(snap.file_ids)
        self.parts = []
        self.files, per_chunk = np.unique(file_ids, return_inverse=True)
        length = np.zeros(len(self.files))
        for part in (lex.base, lex.delta):
            pids = np.asarray(part.ids)
            at = np.searchsorted(ids, pids)
            live = (at < len(ids)) & (ids[np.minimum(at, len(ids) - 1)] == pids)
            file_of = np.where(live, per_chunk[np.minimum(at, len(ids) - 1)], -1)  # -1: a dead chunk
            np.add.at(length, file_of[live], np.asarray(part.length, dtype=np.float64)[live])
            self.parts.append((part, file_of))
        self.length, self.avgdl, self.k1, self.b = length, length.mean(), k1, b

    def scores(self, text: str) -> np.ndarray:
        """BM25 per file (in self.files order) for the query's words, FTS5's idf floor included."""
        n = len(self.files)
        total = np.zeros(n)
        for term in shared().of_words(query_words(text)):
            tf = np.zeros(n)
            for part, file_of in self.parts:
                doc, counts = part.postings(term)
                f = file_of[np.asarray(doc)]
                keep = f >= 0
                tf += np.bincount(f[keep], np.asarray(counts, dtype=np.float64)[keep], n)
            df = int((tf > 0).sum())
            if not df:
                continue
            idf = np.log((n - df + 0.5) / (df + 0.5))
            idf = idf if idf > 0.0 else 1e-6
            total += idf * (tf * (self.k1 + 1.0)) / (tf + self.k1 * (1 - self.b + self.b * self.length / self.avgdl))
        return total

    def of_candidates(self, c) -> np.ndarray:
        return self.scores(c.query)[np.searchsorted(self.files, c.file_ids)]


def _scaled(x: np.ndarray) -> np.ndarray:
    top = float(np.max(x)) if len(x) else 0.0
    return x / top if top > 0 else np.zeros(len(x))


def study(specs: list[str]) -> None:
    for spec, (_coll, corpus, passes, meta, qv, p), base, results in studied(specs, RESULTS):
        corpus.searcher.refresh()
        fb = FileBM25(corpus.searcher.snapshot, p.bm25_k1, p.bm25_b)
        files = [fb.of_candidates(c) for c in passes]
        cents = centroid.centroid_cosines(corpus, passes, qv)
        for a in GRID:
            lexical = [replace(c, lexical=(1 - a) * _scaled(c.lexical) + a * _scaled(f)) for c, f in zip(passes, files)]
            mean, results[f"l{a}"] = harness.ndcg(lexical, p, meta)
            both = [replace(c, qsim=((1 - CENTROID_A) * c.qsim + CENTROID_A * d).astype(np.float32)) for c, d in zip(lexical, cents)]
            mean2, results[f"l{a}+c"] = harness.ndcg(both, p, meta)
            print(f"{spec} l{a} {mean:.4f} ({mean - base:+.4f})  with centroid {mean2:.4f} ({mean2 - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
