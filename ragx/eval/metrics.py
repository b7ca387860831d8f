"""IR metrics through ir-measures (trec_eval's definitions via pytrec_eval), never hand-rolled."""

from __future__ import annotations

import ir_measures
from ir_measures import AP, RR, R, nDCG

MEASURES = {"nDCG@10": nDCG @ 10, "R@5": R @ 5, "R@10": R @ 10, "R@100": R @ 100, "MRR@10": RR @ 10, "MAP@100": AP @ 100}
METRIC_NAMES = tuple(MEASURES)
HEADLINE = ("nDCG@10", "R@10", "R@100", "MRR@10")  # the console's comparison table and summary


def recall_depth(metric: str) -> int | None:
    """k of a recall metric (R@k), else None: R@k beyond a config's candidates is capped by them."""
    return int(metric[2:]) if metric.startswith("R@") else None


class Evaluator:
    """`evaluate` for one set of labels, reused across runs: ir_measures prepares the labels once (the lab
    measures thousands of runs against the same labels)."""

    def __init__(self, qrels: dict[str, dict[str, int]]) -> None:
        self.qrels = qrels
        self._calc = ir_measures.evaluator(list(MEASURES.values()), qrels)
        # rows carry the very measure objects asked for: naming them by identity saves ir_measures'
        # repr-based hashing on every row (by name when a provider hands back another object)
        self._by_id = {id(m): name for name, m in MEASURES.items()}
        self._by_str = {str(m): name for name, m in MEASURES.items()}

    def __call__(self, run: dict[str, dict[str, float]]) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
        per_query: dict[str, dict[str, float]] = {qid: dict.fromkeys(MEASURES, 0.0) for qid in self.qrels}
        # trec_eval skips queries absent from the run; an empty ranking must still count as zero.
        for row in self._calc.iter_calc({q: r for q, r in run.items() if r}):
            name = self._by_id.get(id(row.measure)) or self._by_str[str(row.measure)]
            per_query[row.query_id][name] = float(row.value)
        n = len(per_query)
        means = {name: (sum(q[name] for q in per_query.values()) / n if n else 0.0) for name in MEASURES}
        return means, per_query


def evaluate(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """(mean per metric, per query per metric). A query with no results scores 0 on everything."""
    return Evaluator(qrels)(run)
