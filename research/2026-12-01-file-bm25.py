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

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np


def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(file))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


prf_study = _load("prf_study", "2026-12-01-prf-and-sentences.py")
centroid = _load("centroid_study", "2026-12-01-file-centroid.py")

from ragx.index.fts_tokens import shared  # noqa: E402
from ragx.search.lexical import query_words  # noqa: E402

GRID = (0.25, 0.5, 0.75, 1.0)
CENTROID_A = 0.3  # the file-centroid study's choice on train
RESULTS = prf_study.OUT / "file-bm25-results.json"


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
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    for spec in specs:
        _coll, corpus, passes, meta, qv, p = prf_study.load(spec)
        base, per = prf_study.ndcg(passes, p, meta)
        results[spec] = {"base": per}
        print(f"{spec} default {base:.4f}", flush=True)
        corpus.searcher.refresh()
        fb = FileBM25(corpus.searcher.snapshot, p.bm25_k1, p.bm25_b)
        files = [fb.of_candidates(c) for c in passes]
        cents = centroid.centroid_cosines(corpus, passes, qv)
        for a in GRID:
            lexical = [replace(c, lexical=(1 - a) * _scaled(c.lexical) + a * _scaled(f)) for c, f in zip(passes, files)]
            mean, results[spec][f"l{a}"] = prf_study.ndcg(lexical, p, meta)
            both = [replace(c, qsim=((1 - CENTROID_A) * c.qsim + CENTROID_A * d).astype(np.float32)) for c, d in zip(lexical, cents)]
            mean2, results[spec][f"l{a}+c"] = prf_study.ndcg(both, p, meta)
            print(f"{spec} l{a} {mean:.4f} ({mean - base:+.4f})  with centroid {mean2:.4f} ({mean2 - base:+.4f})", flush=True)
    RESULTS.write_text(json.dumps(results))


def pooled(key: str, specs: list[str], resamples: int = 20_000) -> None:
    """The mean over `specs` of each set's mean nDCG@10 difference, and its two-sided p-value from a
    stratified sign-flip test (each query's difference flips sign at random, within its own set): the
    statistic the issue's "mean over the four collections" asks about, every set weighted alike."""
    results = json.loads(RESULTS.read_text())
    diffs = [np.array([results[s][key][q] - results[s]["base"][q] for q in sorted(results[s]["base"])]) for s in specs]
    observed = np.mean([d.mean() for d in diffs])
    rng = np.random.default_rng(0)
    null = np.mean([(rng.choice([-1.0, 1.0], (resamples, len(d))) * d).mean(axis=1) for d in diffs], axis=0)
    p = (1 + np.sum(np.abs(null) >= abs(observed) - 1e-12)) / (1 + resamples)
    print(f"{key}: mean over {len(specs)} sets {observed:+.4f}, stratified sign-flip p = {p:.4f} ({resamples} resamples)")


if __name__ == "__main__":
    if sys.argv[1] == "pooled":
        pooled(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "compare":
        prf_study.compare(sys.argv[2], sys.argv[3:], RESULTS)
    else:
        study(sys.argv[2:])
