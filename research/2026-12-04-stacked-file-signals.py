"""The three whole-file signals that were positive held out but not significant, stacked (issue 13).

Each of these gained on both training sets and kept a small, non-significant gain on the four-set mean
held out (research/README.md's ledger, +0.0031 / +0.0031 / +0.0032): the file centroid's cosine
(research/2026-12-01-file-centroid.md, a 0.3), the file's BM25 (research/2026-12-01-file-bm25.md,
l 0.5) and the title's own vector (research/2026-12-02-title-vector.md, a 0.1). They read different
evidence (the file's mean meaning, the file's words, its title), so their small gains may add up where
none is enough alone. The variant applies all three at the weights each study chose on train, in the
order the studies applied them to the defaults:

    lexical = (1 - 0.5) * chunk BM25 / max + 0.5 * file BM25 / max
    dense   = (1 - 0.3) * chunk cosine + 0.3 * file centroid cosine
    dense   = (1 - 0.1) * dense + 0.1 * title cosine               (a file without a title: its chunk cosine)

No new grid: the one variant is fixed before running, against today's defaults (anchor text included,
which the centroid and file-BM25 studies predate). Everything else is the defaults' scoring of the same
cached pass (dense 100 + BM25 100 seeds, graph off): equal candidates by construction. Train first;
the four test splits once, only if the train mean gain is positive.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-stacked-file-signals.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-stacked-file-signals.py study <four test specs>   # once
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-stacked-file-signals.py compare stack <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-stacked-file-signals.py pooled stack <four test specs>

Per-query results go to $RAGX_CACHE_DIR/research-prf/stacked-file-signals-results.json.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness
from lab.studies.harness import run_command, studied
from lab.studies.research_scripts import load_script

centroid = load_script("2026-12-01-file-centroid.py")
file_bm25 = load_script("2026-12-01-file-bm25.py")
title_vector = load_script("2026-12-02-title-vector.py")

FILE_BM25_L, CENTROID_A, TITLE_A = 0.5, 0.3, 0.1  # each study's own choice on train
RESULTS = harness.OUT / "stacked-file-signals-results.json"


def study(specs: list[str]) -> None:
    for spec, loaded, base, results in studied(specs, RESULTS):
        _coll, corpus, passes, meta, qv, p = loaded
        corpus.searcher.refresh()
        fb = file_bm25.FileBM25(corpus.searcher.snapshot, p.bm25_k1, p.bm25_b)
        cents = centroid.centroid_cosines(corpus, passes, qv)
        titles = title_vector.title_cosines(corpus, passes, qv)
        stacked = []
        for c, cent, title in zip(passes, cents, titles):
            lexical = (1 - FILE_BM25_L) * file_bm25._scaled(c.lexical) + FILE_BM25_L * file_bm25._scaled(fb.of_candidates(c))
            dense = (1 - CENTROID_A) * c.qsim.astype(np.float64) + CENTROID_A * cent
            dense = (1 - TITLE_A) * dense + TITLE_A * title
            stacked.append(replace(c, lexical=lexical, qsim=dense.astype(np.float32)))
        mean, results["stack"] = harness.ndcg(stacked, p, meta)
        print(f"{spec} stack {mean:.4f} ({mean - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
