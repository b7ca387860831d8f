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


def _calc(measures: dict, qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    by_name = {str(m): name for name, m in measures.items()}
    per_query: dict[str, dict[str, float]] = {qid: {name: 0.0 for name in measures} for qid in qrels}
    # trec_eval skips queries absent from the run; an empty ranking must still count as zero.
    for row in ir_measures.iter_calc(list(measures.values()), qrels, {q: r for q, r in run.items() if r}):
        per_query[row.query_id][by_name[str(row.measure)]] = float(row.value)
    return per_query


def evaluate(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
             metrics: str = "ir") -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """(mean per metric, per query per metric) of the metric set `metrics` ("ir" or "code"). A query with
    no results scores 0 on everything."""
    if metrics == "code":
        raw = _calc(CODE_MEASURES, qrels, run)
        per_query = {q: {name: (float(r[ACCURACY[name]] >= _ALL_IN) if name in ACCURACY else r[name]) for name in CODE_METRIC_NAMES}
                     for q, r in raw.items()}
    else:
        per_query = _calc(MEASURES, qrels, run)
    names = METRIC_SETS[metrics]
    n = len(per_query)
    means = {name: (sum(q[name] for q in per_query.values()) / n if n else 0.0) for name in names}
    return means, per_query
