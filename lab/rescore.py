"""Offline re-scoring: the very functions `ragx eval` uses, applied to cached passes.

Nothing here re-implements scoring: `ragx.scoring.score.score` and `ragx.scoring.files.file_run` rank, and
`ragx.eval.metrics.evaluate` measures, exactly as in a live run. Rerank scores come from the rerank-score
cache through `lab.rerank.ShortlistScorer` (the same cached cross-encoder `ragx eval` uses).
"""

from __future__ import annotations

from dataclasses import dataclass

from ragx.eval.metrics import MEASURES, Evaluator, evaluate
from ragx.eval.runner import DEPTH
from ragx.scoring.candidates import Candidates
from ragx.scoring.files import file_run as query_file_run
from ragx.scoring.params import Params
from ragx.scoring.score import score

from .rerank import ShortlistScorer
from .vectorised import Layouts, vectorised_means, vectorised_runs


@dataclass
class Rescored:
    means: dict[str, float]
    per_query: dict[str, dict[str, float]]
    runs: dict[str, dict[str, float]]


def file_run(passes: list[Candidates], params: Params, paths: dict[int, str], scorer: ShortlistScorer | None = None) -> dict[str, dict[str, float]]:
    """Each pass ranked under `params`; with a reranked configuration (rerank_weight > 0) and a
    `scorer`, its shortlist first gets the cached cross-encoder scores (lab/rerank.py)."""
    if scorer is not None and params.rerank_weight > 0:
        passes = [scorer.reranked(c, params) for c in passes]
    return {c.qid: query_file_run(c, score(c, params), params, paths, DEPTH) for c in passes}


def rescore(passes: list[Candidates], params: Params, qrels: dict[str, dict[str, int]], paths: dict[int, str],
            scorer: ShortlistScorer | None = None) -> Rescored:
    run = file_run(passes, params, paths, scorer)
    means, per_query = evaluate(qrels, run)
    return Rescored(means, per_query, run)


def rescore_means(passes: list[Candidates], many: list[Params], evaluator: Evaluator, paths: dict[int, str],
                  scorer: ShortlistScorer | None = None, layouts: Layouts | None = None) -> list[dict[str, float]]:
    """The mean metrics of each of `many` configurations, measured by one `Evaluator` of the labels
    (prepared once for every batch): the same floats as `rescore(...).means`, digit for digit.

    Configurations that read no rerank scores are ranked together (lab/vectorised.py, with `layouts`
    kept by the caller across batches) and measured by lab/fast_metrics.py (ir-measures' figures to
    1e-12, without a dict per query); reranked ones one by one through `file_run` and `evaluator`."""
    layouts = layouts if layouts is not None else Layouts(passes, paths)
    plain = [k for k, p in enumerate(many) if scorer is None or p.rerank_weight <= 0]
    fast = vectorised_means(layouts, [many[k] for k in plain], evaluator.qrels) if evaluator.measures is MEASURES else {}
    done = {plain[j]: m for j, m in fast.items()}
    return [done[k] if k in done else evaluator(file_run(passes, p, paths, scorer))[0] for k, p in enumerate(many)]


def rescore_runs(passes: list[Candidates], many: list[Params], paths: dict[int, str], scorer: ShortlistScorer | None = None,
                 layouts: Layouts | None = None) -> list[dict[str, dict[str, float]]]:
    """The run of each of `many` configurations: the vectorised path where it applies, `file_run` elsewhere."""
    layouts = layouts if layouts is not None else Layouts(passes, paths)
    plain = [k for k, p in enumerate(many) if scorer is None or p.rerank_weight <= 0]
    runs = vectorised_runs(layouts, [many[k] for k in plain])
    done = {plain[j]: run for j, run in runs.items()}
    return [done[k] if k in done else file_run(passes, p, paths, scorer) for k, p in enumerate(many)]
