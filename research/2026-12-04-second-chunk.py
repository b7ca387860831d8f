"""A file's second-best chunk as evidence (issue 13): best chunk + lambda × the second best.

ragx ranks a file by its best chunk (`search.file_chunks = 1`; 2 would add the second best at full
weight, which lifts long many-topic notes). Passage-to-document aggregation in the literature often
does best between the two: the best passage decides, a second matching passage breaks near-ties. Here
a file scores

    s_1 + lambda × s_2     (s_1 >= s_2: the final scores of its two best candidate chunks; s_2 = 0 if it has one)

over the chunks the shipped defaults score in the same cached pass (dense 100 + BM25 100 seeds, graph
off): equal candidates by construction; only the file aggregation changes. Grid fixed before the
first run: lambda in (0.1, 0.2, 0.3, 0.5). Chosen on TRAIN (dendron-vault train, SciFact train) by the
mean gain, only if positive; then the four test splits once with the choice.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-second-chunk.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-second-chunk.py study <four test specs> --only KEY
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-second-chunk.py compare KEY <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-second-chunk.py pooled KEY <four test specs>

Per-query results go to $RAGX_CACHE_DIR/research-prf/second-chunk-results.json.
"""

from __future__ import annotations

import sys

import numpy as np

from lab.studies import harness
from lab.studies.harness import run_command, studied, train_or_choice
from ragx.eval.metrics import evaluate
from ragx.eval.runner import DEPTH
from ragx.scoring.score import score

GRID = (0.1, 0.2, 0.3, 0.5)
RESULTS = harness.OUT / "second-chunk-results.json"


def key(lam: float) -> str:
    return f"lambda{lam}"


def two_best(c, p) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(file ids, best, second best chunk score per file; 0 where a file has one candidate chunk)."""
    r = score(c, p)
    order = r.order
    files, values = c.file_ids[order], r.score[order]
    by_file = np.argsort(files, kind="stable")  # `order` is best-first, so each file's chunks stay best-first
    f_sorted, v_sorted = files[by_file], values[by_file]
    starts = np.flatnonzero(np.r_[True, f_sorted[1:] != f_sorted[:-1]])
    ends = np.r_[starts[1:], len(f_sorted)]
    second = np.where(ends - starts > 1, v_sorted[np.minimum(starts + 1, len(v_sorted) - 1)], 0.0)
    return f_sorted[starts], v_sorted[starts], second


def ndcg(prepared, lam: float, meta) -> tuple[float, dict[str, float]]:
    run = {}
    for qid, (files, best, second) in prepared.items():
        total = best + lam * second
        top = np.lexsort((-best, -total))[:DEPTH]  # ties: the better best chunk first
        run[qid] = {meta["paths"][f]: float(s) for f, s in zip(files[top].tolist(), total[top].tolist())}
    means, per = evaluate(meta["labels"], run)
    return means["nDCG@10"], {q: v["nDCG@10"] for q, v in per.items()}


def study(argv: list[str]) -> None:
    specs, only = train_or_choice(argv)
    grid = [g for g in GRID if only is None or key(g) == only]
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        _coll, _corpus, passes, meta, _qv, p = loaded
        prepared = {c.qid: two_best(c, p) for c in passes}
        same, _ = ndcg(prepared, 0.0, meta)
        assert abs(same - base) < 1e-9, f"lambda 0 must reproduce the defaults: {same} vs {base}"
        for lam in grid:
            mean, per_variant[key(lam)] = ndcg(prepared, lam, meta)
            print(f"{spec} {key(lam)} {mean:.4f} ({mean - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
