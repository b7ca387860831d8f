"""The batch metrics kernel (lab/fast_metrics.py) against ir-measures (`ragx.eval.metrics.Evaluator`).

Random passes with tied scores (so the tools' tie-breaks by document id matter), paths whose byte
order differs from their ids, graded labels (0-3), queries with no relevant file, labelled queries no
pass holds and passes no label names: every trial's six means must equal ir-measures' to 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_lab_vectorised import random_case

from lab.rescore import file_run
from lab.vectorised import Layouts, vectorised_means
from ragx.eval.metrics import Evaluator


def labels_for(rng: np.random.Generator, qids: list[str], paths: dict[int, str]) -> dict[str, dict[str, int]]:
    files = list(paths.values())
    qrels: dict[str, dict[str, int]] = {}
    for q in qids[:-2]:  # the last two passes are not labelled
        chosen = rng.choice(len(files), size=int(rng.integers(1, 6)), replace=False)
        qrels[q] = {files[i]: int(rng.integers(0, 4)) for i in chosen}  # grade 0 = judged not relevant
    qrels["only-labelled"] = {files[0]: 2}  # a labelled query no pass holds: it counts, as 0
    return qrels


@pytest.mark.parametrize("seed", range(8))
def test_kernel_means_equal_ir_measures(seed):
    passes, many = random_case(seed, 30, 12)
    # names whose byte order is not the id order; upper and lower case mixed
    paths = {f: f"{'AbZa'[f % 4]}/{(f * 7919) % 101:03d}-{chr(97 + f % 26)}.md" for f in range(100)}
    qrels = labels_for(np.random.default_rng(seed + 1000), [c.qid for c in passes], paths)
    for c in passes:  # coarse scores: many files tie
        c.qsim = np.round(c.qsim, 0).astype(np.float32)
    got = vectorised_means(Layouts(passes, paths), many, qrels)
    evaluator = Evaluator(qrels)
    for k, p in enumerate(many):
        want = evaluator(file_run(passes, p, paths))[0]
        assert got[k].keys() == want.keys()
        assert all(abs(got[k][m] - want[m]) <= 1e-12 for m in want), (k, got[k], want)
    assert any(0 < got[k]["nDCG@10"] < 1 for k in got) and any(got[k]["MRR@10"] > 0 for k in got)
