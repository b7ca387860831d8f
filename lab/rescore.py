"""Offline re-scoring: the very functions `ragx eval` uses, applied to cached passes.

Nothing here re-implements scoring: `ragx.search.score.score` and `rank_files` rank, and
`ragx.eval.metrics.evaluate` measures, exactly as in a live run.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragx.eval.metrics import evaluate
from ragx.eval.runner import DEPTH
from ragx.search.candidates import Candidates
from ragx.search.params import Params
from ragx.search.score import rank_files, score


@dataclass
class Rescored:
    means: dict[str, float]
    per_query: dict[str, dict[str, float]]
    runs: dict[str, dict[str, float]]


def file_run(passes: list[Candidates], params: Params, paths: dict[int, str]) -> dict[str, dict[str, float]]:
    run = {}
    for c in passes:
        files, sums = rank_files(c, score(c, params), params)
        run[c.notes["qid"]] = {paths[f]: float(s) for f, s in zip(files[:DEPTH].tolist(), sums[:DEPTH].tolist())}
    return run


def rescore(passes: list[Candidates], params: Params, qrels: dict[str, dict[str, int]], paths: dict[int, str]) -> Rescored:
    run = file_run(passes, params, paths)
    means, per_query = evaluate(qrels, run)
    return Rescored(means, per_query, run)
