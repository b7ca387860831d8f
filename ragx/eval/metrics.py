"""IR metrics through ir-measures (trec_eval's definitions via pytrec_eval), never hand-rolled.

Two sets: `ir` (graded relevance over prose collections) and `code` (file localisation over repository
snapshots: Acc@k, the share of queries whose relevant files are ALL within the top k, beside Recall@k
and MRR). Acc@k is read off trec_eval's recall: all relevant files are in the top k exactly when R@k is 1.
"""

from __future__ import annotations

import ir_measures
from ir_measures import AP, RR, R, nDCG

MEASURES = {"nDCG@10": nDCG @ 10, "R@5": R @ 5, "R@10": R @ 10, "R@100": R @ 100, "MRR@10": RR @ 10, "MAP@100": AP @ 100}
METRIC_NAMES = tuple(MEASURES)
HEADLINE = ("nDCG@10", "R@10", "R@100", "MRR@10")  # the console's comparison table and summary

CODE_MEASURES = {"R@1": R @ 1, "R@5": R @ 5, "R@10": R @ 10, "MRR": RR}
ACCURACY = {"Acc@1": "R@1", "Acc@5": "R@5", "Acc@10": "R@10"}   # Acc@k from R@k
CODE_METRIC_NAMES = ("Acc@1", "Acc@5", "Acc@10", "R@5", "R@10", "MRR")
CODE_HEADLINE = ("Acc@1", "Acc@5", "Acc@10", "MRR")
METRIC_SETS = {"ir": METRIC_NAMES, "code": CODE_METRIC_NAMES}
_ALL_IN = 1 - 1e-9       # R@k at or above this: every relevant file is within the top k


def recall_depth(metric: str) -> int | None:
    """k of a recall or accuracy metric (R@k, Acc@k), else None: beyond a config's candidates it is capped by them."""
    for prefix in ("R@", "Acc@"):
        if metric.startswith(prefix):
            return int(metric[len(prefix):])
    return None


class Evaluator:
    """ir-measures' evaluator of one measure table against one set of labels, reused across runs: the
    labels are prepared once (the lab measures thousands of runs against the same labels)."""

    def __init__(self, qrels: dict[str, dict[str, int]], measures: dict | None = None) -> None:
        self.qrels, self.measures = qrels, MEASURES if measures is None else measures
        self._calc = ir_measures.evaluator(list(self.measures.values()), qrels)
        # rows carry the very measure objects asked for: naming them by identity saves ir_measures'
        # repr-based hashing on every row (by name when a provider hands back another object)
        self._by_id = {id(m): name for name, m in self.measures.items()}
        self._by_str = {str(m): name for name, m in self.measures.items()}

    def per_query(self, run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        per_query: dict[str, dict[str, float]] = {qid: dict.fromkeys(self.measures, 0.0) for qid in self.qrels}
        # trec_eval skips queries absent from the run; an empty ranking must still count as zero.
        for row in self._calc.iter_calc({q: r for q, r in run.items() if r}):
            per_query[row.query_id][self._by_id.get(id(row.measure)) or self._by_str[str(row.measure)]] = float(row.value)
        return per_query

    def __call__(self, run: dict[str, dict[str, float]]) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
        """`evaluate(qrels, run)` of the "ir" metric set: (mean per metric, per query per metric)."""
        per_query = self.per_query(run)
        return _means(per_query, METRIC_NAMES), per_query


def _means(per_query: dict[str, dict[str, float]], names) -> dict[str, float]:
    n = len(per_query)
    return {name: (sum(q[name] for q in per_query.values()) / n if n else 0.0) for name in names}


def evaluate(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
             metrics: str = "ir") -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """(mean per metric, per query per metric) of the metric set `metrics` ("ir" or "code"). A query with
    no results scores 0 on everything."""
    if metrics == "code":
        raw = Evaluator(qrels, CODE_MEASURES).per_query(run)
        per_query = {q: {name: (float(r[ACCURACY[name]] >= _ALL_IN) if name in ACCURACY else r[name]) for name in CODE_METRIC_NAMES}
                     for q, r in raw.items()}
        return _means(per_query, CODE_METRIC_NAMES), per_query
    return Evaluator(qrels)(run)
