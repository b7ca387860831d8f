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


def evaluate(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """(mean per metric, per query per metric). A query with no results scores 0 on everything."""
    by_name = {str(m): name for name, m in MEASURES.items()}
    per_query: dict[str, dict[str, float]] = {qid: {name: 0.0 for name in MEASURES} for qid in qrels}
    # trec_eval skips queries absent from the run; an empty ranking must still count as zero.
    for row in ir_measures.iter_calc(list(MEASURES.values()), qrels, {q: r for q, r in run.items() if r}):
        per_query[row.query_id][by_name[str(row.measure)]] = float(row.value)
    n = len(per_query)
    means = {name: (sum(q[name] for q in per_query.values()) / n if n else 0.0) for name in MEASURES}
    return means, per_query
