"""How far can re-weighting the two legs go on the candidates the defaults already hold? (issue 13)

Not a tuning run: a ceiling, computed on each split's own labels, so that nothing is chosen from it.
The shipped defaults fuse the min-max-normalised dense and BM25 signals (anchor texts mixed in) with
fixed weights; the lexical share s = lexical_weight / (dense_weight + lexical_weight) is 0.42. Over the
same cached pass (dense 100 + BM25 100 seeds, graph off: equal candidates by construction) this script
scores every s on a fixed grid (0, 0.02, ..., 1, the weights' sum kept) and reports per split:

    shipped   nDCG@10 at the shipped weights;
    global    the best single s for the whole split, picked with that split's labels: the ceiling of
              any fixed-weight fusion of these two legs (what a perfect tuner could reach);
    per-query the best s for each query, picked with its labels: the ceiling of any query-adaptive
              weighting (what a perfect per-query predictor could reach);
    any order the best order of the candidates (relevant files first): the ceiling of any re-scoring
              of this candidate set, a reranker's included.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-fusion-ceiling.py \
        scifact-test cranfield-test musique-small-test dendron-vault-test scifact-train dendron-vault-train
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness
from ragx.eval.metrics import evaluate

GRID = np.round(np.linspace(0.0, 1.0, 51), 2)


def perfect(passes, meta) -> float:
    """nDCG@10 with each query's candidate files ordered by their labels (the candidate set's ceiling)."""
    run = {}
    for c in passes:
        labels = meta["labels"].get(c.qid, {})
        files = {meta["paths"][int(f)] for f in np.unique(c.file_ids)}
        run[c.qid] = {f: float(labels.get(f, 0)) + 1.0 for f in files}
    means, _ = evaluate(meta["labels"], run)
    return means["nDCG@10"]


def ceiling(spec: str) -> None:
    _coll, _corpus, passes, meta, _qv, p = harness.load(spec)
    total = p.dense_weight + p.lexical_weight
    shipped_share = p.lexical_weight / total
    base, _ = harness.ndcg(passes, p, meta)
    per_share = {}
    for s in GRID:
        mean, per = harness.ndcg(passes, replace(p, dense_weight=(1 - s) * total, lexical_weight=s * total), meta)
        per_share[float(s)] = (mean, per)
    best_s = max(per_share, key=lambda s: per_share[s][0])
    qids = sorted(per_share[best_s][1])
    table = np.array([[per_share[float(s)][1][q] for q in qids] for s in GRID])
    print(f"{spec}: shipped (s {shipped_share:.2f}) {base:.4f} | global s {best_s:.2f} {per_share[best_s][0]:.4f} "
          f"| per-query {table.max(axis=0).mean():.4f} | any order {perfect(passes, meta):.4f} | s 0 {per_share[0.0][0]:.4f} s 1 {per_share[1.0][0]:.4f}",
          flush=True)


if __name__ == "__main__":
    for spec in sys.argv[1:]:
        ceiling(spec)
