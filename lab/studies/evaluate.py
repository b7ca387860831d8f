"""File-level runs and per-query metrics for any per-node scorer, through ragx's own file ranking
(`rank_files`, best chunk per file unless told otherwise) and ir-measures (trec_eval definitions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import ir_measures
import numpy as np
from ir_measures import RR, R, nDCG

from ragx.scoring.candidates import Candidates
from ragx.scoring.files import rank_files
from ragx.scoring.params import Params

MEASURES = {"nDCG@10": nDCG @ 10, "R@5": R @ 5, "R@10": R @ 10, "R@100": R @ 100, "MRR@10": RR @ 10}
DEPTH = 100
_FILE_PARAMS = Params(top=10, dense_n=0, lexical_n=0, rrf_k=60.0, hops=0, decay=0.0, query_floor=0.0, max_frontier=0,
                      rerank_weight=0.0, heat_weight=0.0, dense_weight=1.0, lexical_weight=0.0, shortlist=0, file_chunks=1,
                      link_weight=0.0, min_dense_evidence=0.0, min_lexical_evidence=0.0, min_lexical_share=0.0, bm25_k1=1.2, bm25_b=0.75, bm25_variant="fts5", query_features="off", anchor_dense=0.0, anchor_lexical=0.0, prior_test=1.0, prior_example=1.0, prior_doc=1.0)

Scorer = Callable[[Candidates], np.ndarray]


@dataclass(frozen=True)
class _Ranked:
    """A chunk order and scores without fusion or a trace: all `rank_files` reads."""

    order: np.ndarray
    score: np.ndarray


def file_ranking(c: Candidates, values: np.ndarray, file_chunks: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Files ranked from per-node values (ties: smaller chunk id). NaN marks a node that is not a
    candidate of this configuration (e.g. outside a seeds-only budget): it is left out."""
    order = np.lexsort((c.nodes, -values))
    order = order[~np.isnan(values[order])]
    return rank_files(c, _Ranked(order=order, score=values), _FILE_PARAMS.replace(file_chunks=file_chunks))


def run_of(passes: list[Candidates], scorer: Scorer, paths: dict[int, str], file_chunks: int = 1) -> dict[str, dict[str, float]]:
    run = {}
    for c in passes:
        files, sums = file_ranking(c, scorer(c), file_chunks)
        run[c.qid] = {paths[f]: float(s) for f, s in zip(files[:DEPTH].tolist(), sums[:DEPTH].tolist())}
    return run


def per_query(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], qids: list[str]) -> dict[str, np.ndarray]:
    """metric -> array aligned with qids (a query with no results scores 0)."""
    idx = {q: i for i, q in enumerate(qids)}
    out = {m: np.zeros(len(qids)) for m in MEASURES}
    names = {str(v): k for k, v in MEASURES.items()}
    q = {k: v for k, v in qrels.items() if k in idx}
    for row in ir_measures.iter_calc(list(MEASURES.values()), q, {k: r for k, r in run.items() if r and k in idx}):
        out[names[str(row.measure)]][idx[row.query_id]] = row.value
    return out


def measure(split, scorer: Scorer, file_chunks: int = 1) -> dict[str, np.ndarray]:
    return per_query(split.qrels, run_of(split.passes, scorer, split.paths, file_chunks), split.qids)
