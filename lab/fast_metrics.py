"""The sweep's metrics for a whole batch of vectorised trials at once, held to ir-measures.

`ragx.eval.metrics.Evaluator` (ir-measures: trec_eval through pytrec_eval, MS MARCO's RR) needs one
dict per query per trial and spends most of a re-scored trial's time converting and hashing them. The
vectorised path (lab/vectorised.py) already holds each query's top files as arrays, so this kernel reads
the same six measures off them in numpy, with each tool's own rules:

- trec_eval (nDCG@10, R@5/10/100, MAP@100) orders a query's results by score, ties by document id
  descending; gains are the relevance grades (> 0), the ideal ranking every judged document's grade;
  recall and AP divide by the number of documents graded >= 1; a query with none scores 0.
- MS MARCO's RR@10 orders by score, ties by document id ascending; 1 / the rank of the first document
  graded >= 1 within the top 10.

A query without results, or absent from the run, scores 0; the mean is over every labelled query.
`tests/test_lab_fast_metrics.py` holds the kernel to `Evaluator` on random runs full of ties and on a
real set's labels (to 1e-12). The product's figures (`ragx eval`, `lab promote`) still come from
ir-measures; this kernel only ranks a sweep's trials.
"""

from __future__ import annotations

import numpy as np

from ragx.eval.metrics import MEASURES

NAMES = ("nDCG@10", "R@5", "R@10", "R@100", "MRR@10", "MAP@100")
assert set(NAMES) == set(MEASURES), "the kernel must cover exactly ragx.eval.metrics.MEASURES"


class Judged:
    """One set's labels arranged for the files of its passes: every (query, file) a pass holds gets its
    grade, every file id its place in the byte order of the paths (the tools' tie-breaks)."""

    def __init__(self, qids: list[str], keys: np.ndarray, width: int, paths: np.ndarray, qrels: dict[str, dict[str, int]]) -> None:
        self.keys, self.width, self.queries = keys, width, len(qrels)
        self.labelled = np.array([q in qrels for q in qids], dtype=bool)
        self.grade = np.array([qrels.get(qids[int(k) // width], {}).get(paths[int(k) % width], 0) for k in keys], dtype=np.int64)
        names = [p if isinstance(p, str) else "" for p in paths]
        self.byte_rank = np.empty(len(names), dtype=np.int64)
        self.byte_rank[sorted(range(len(names)), key=lambda i: names[i].encode())] = np.arange(len(names))
        relevant = [sum(1 for g in qrels.get(q, {}).values() if g >= 1) for q in qids]
        self.relevant = np.array(relevant, dtype=np.float64)
        ideal = [sorted((g for g in qrels.get(q, {}).values() if g > 0), reverse=True)[:10] for q in qids]
        self.ideal = np.array([sum(g / np.log2(i + 2) for i, g in enumerate(row)) for row in ideal], dtype=np.float64)


def means(judged: Judged, gkeys: np.ndarray, counts: np.ndarray, picked: np.ndarray, scores: np.ndarray) -> list[dict[str, float]]:
    """Each trial's mean metrics from its top files: `picked` (T x K indexes into `gkeys`, the layout's
    (query, file) keys), `scores` beside them, query q holding counts[q] places (at most 100)."""
    t, k = picked.shape
    q = len(counts)
    depth = int(counts.max(initial=0)) or 1
    qpos = np.repeat(np.arange(q), counts)
    jpos = np.arange(k) - np.repeat(np.r_[0, np.cumsum(counts)[:-1]], counts)
    # grades and byte ranks looked up once per (query, file) of the layout, not once per trial's place
    grade = judged.grade[np.searchsorted(judged.keys, gkeys)][picked]
    rank = judged.byte_rank[gkeys % judged.width][picked]
    s = np.full((t, q, depth), -np.inf)
    g = np.zeros((t, q, depth), dtype=np.int64)
    r = np.zeros((t, q, depth), dtype=np.int64)
    s[:, qpos, jpos], g[:, qpos, jpos], r[:, qpos, jpos] = scores, grade, rank
    trec = np.take_along_axis(g, _order(s, r, len(judged.byte_rank), descending_id=True), -1)   # score down, id down
    marco = np.take_along_axis(g, _order(s, r, len(judged.byte_rank), descending_id=False), -1)  # score down, id up
    hit = trec >= 1
    rel = np.where(judged.relevant > 0, judged.relevant, 1.0)
    found = np.cumsum(hit, axis=-1)
    at = np.arange(1, depth + 1)
    values = {
        "nDCG@10": _ratio((np.where(trec > 0, trec, 0)[..., :10] / np.log2(at[:10] + 1)).sum(-1), judged.ideal),
        "R@5": found[..., min(5, depth) - 1] / rel, "R@10": found[..., min(10, depth) - 1] / rel,
        "R@100": found[..., min(100, depth) - 1] / rel,
        "MAP@100": (found / at * hit)[..., :100].sum(-1) / rel,
        "MRR@10": _first(marco[..., :10] >= 1),
    }
    keep = judged.labelled & (judged.relevant > 0)
    return [{name: float(values[name][row][keep].sum() / judged.queries) for name in NAMES} for row in range(t)]


def _order(s: np.ndarray, r: np.ndarray, ids: int, descending_id: bool) -> np.ndarray:
    """Each row's places by score down, ties by id (`r`, below `ids`) down or up: `np.lexsort((±r, -s))`.
    Rows already in score order (as the vectorised ranking gives them) take one sort of whole numbers
    instead: the run of equal scores each place is in, then its id."""
    if (s[..., 1:] > s[..., :-1]).any():
        return np.lexsort((-r if descending_id else r, -s), axis=-1)
    runs = np.zeros(s.shape, dtype=np.int64)
    np.cumsum(s[..., 1:] != s[..., :-1], axis=-1, out=runs[..., 1:])
    return np.argsort(runs * ids + (ids - 1 - r if descending_id else r), axis=-1, kind="stable")


def _ratio(dcg: np.ndarray, ideal: np.ndarray) -> np.ndarray:
    return np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), 0.0)


def _first(hit: np.ndarray) -> np.ndarray:
    """1 / (rank of the first hit), 0 without one."""
    return np.where(hit.any(-1), 1.0 / (np.argmax(hit, axis=-1) + 1), 0.0)
