"""Fusing each leg's best chunk per file (issue 13): a file's dense and lexical evidence may sit in
different chunks.

Today the fusion is per chunk, and a file is its best fused chunk (`search.file_chunks` = 1): an
abstract whose second half matches the claim's meaning and whose first half holds its rare words
scores by whichever half has both. Fusing at the file level instead takes each leg's best normalised
value among the file's candidate chunks and weighs those:

    file_pre(f) = pre-score formula over (max heat, max dense, max lexical) of f's candidate chunks
    chunk value = (1 - b) * its own pre-score + b * file_pre(its file)

b = 1 is pure file-level fusion (every chunk of a file scores alike; the file's rank is file_pre). The
normalisation, weights, anchors and candidates are the shipped defaults' over the same cached pass
(dense 100 + BM25 100 seeds, graph off): the candidate budget is equal by construction. Grid fixed
before the first run: b in (0.25, 0.5, 1.0). Chosen on TRAIN (dendron-vault train, SciFact train) by
the mean gain, only if positive; then the four test splits once with the choice.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-file-fusion.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-file-fusion.py study <four test specs>   # once, after choosing
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-file-fusion.py compare b0.5 <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-file-fusion.py pooled b0.5 <four test specs>

Per-query results go to $RAGX_CACHE_DIR/research-prf/file-fusion-results.json.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness
from lab.studies.harness import run_command, studied
from ragx.eval.metrics import evaluate
from ragx.eval.runner import DEPTH
from ragx.scoring.files import file_run
from ragx.scoring.score import combine, prepare, score

GRID = (0.25, 0.5, 1.0)
RESULTS = harness.OUT / "file-fusion-results.json"


def file_fused(c, p, b: float):
    """The shipped ranking of pass `c` with each chunk's pre-score moved `b` of the way to its file's."""
    pr = prepare(c, p)
    cand = pr.trace.admitted
    _files, inv = np.unique(c.file_ids[cand], return_inverse=True)
    best = []
    for leg in (pr.heat, pr.dense, pr.lexical):
        top = np.full(inv.max() + 1 if len(inv) else 0, -np.inf)
        np.maximum.at(top, inv, leg)
        best.append(top[inv])
    values = (1 - b) * pr.pre + b * combine(p, *best)
    out = np.full(len(c.nodes), np.nan)
    out[cand] = values
    return replace(score(c, p, pr), order=cand[np.lexsort((c.nodes[cand], -values))], score=out)


def study(specs: list[str]) -> None:
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        _coll, _corpus, passes, meta, _qv, p = loaded
        for b in (0.0, *GRID):  # b = 0 must give the defaults' own figures back: a check of file_fused
            run = {c.qid: file_run(c, file_fused(c, p, b), p, meta["paths"], DEPTH) for c in passes}
            means, per = evaluate(meta["labels"], run)
            values = {q: v["nDCG@10"] for q, v in per.items()}
            if b == 0.0:
                assert values == per_variant["base"], "file_fused(b=0) differs from the shipped scoring"
                continue
            per_variant[f"b{b}"] = values
            print(f"{spec} b{b} {means['nDCG@10']:.4f} ({means['nDCG@10'] - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
