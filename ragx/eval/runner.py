"""Evaluate several pipeline configurations over labelled queries in one run.

Each query gets ONE retrieval pass with caps wide enough for every configuration (and every
configuration's candidate budget); each configuration is then scored from that same Candidates object
with the pure scoring functions. That is exactly what separate `ragx query` runs would compute
(scoring re-applies every cap itself), at the cost of one. A budgeted configuration gets, per query,
Params that fill its budget (ragx/eval/budget.py). Every configuration records how many candidates
(chunks) it scored and how many files it ranked, per query. The reference BM25 (`bm25-ref`) ranks the
indexed files itself, outside the pipeline.
"""

from __future__ import annotations

import platform
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..scoring.candidates import Candidates
from ..scoring.files import rank_files
from ..scoring.params import Params
from ..scoring.score import score
from ..search.searcher import Searcher
from . import budget
from .metrics import METRIC_SETS, evaluate
from .presets import EvalConfig
from .queries import LabelledQuery

DEPTH = 100  # files (and chunks) ranked per query: enough for R@100 and MAP@100

Run = dict[str, dict[str, float]]  # qid -> item -> score


@dataclass
class EvalResult:
    configs: list[EvalConfig]
    metrics: str = "ir"                      # the metric set (ragx/eval/metrics.py METRIC_SETS)
    file_means: dict[str, dict[str, float]] = field(default_factory=dict)
    file_per_query: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    chunk_means: dict[str, dict[str, float]] = field(default_factory=dict)
    chunk_per_query: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)  # config -> qid -> file -> score
    candidates: dict[str, dict[str, int]] = field(default_factory=dict)  # config -> qid -> chunks scored
    files_ranked: dict[str, dict[str, int]] = field(default_factory=dict)  # config -> qid -> files ranked
    seconds: float = 0.0
    pass_seconds: float = 0.0
    score_seconds: float = 0.0
    reference_seconds: float = 0.0

    def budgets(self) -> dict[str, dict[str, Any]]:
        """Per config: mean (and range) of candidates scored and files ranked per query."""
        out = {}
        for cfg in self.configs:
            cands, files = list(self.candidates[cfg.name].values()), list(self.files_ranked[cfg.name].values())
            out[cfg.name] = {
                "unit": "files" if cfg.is_reference_bm25 else "chunks",
                "candidates": statistics.fmean(cands) if cands else 0.0,
                "candidates_min": min(cands, default=0),
                "candidates_max": max(cands, default=0),
                "files": statistics.fmean(files) if files else 0.0,
            }
        return out

    def top_files(self, k: int) -> dict[str, dict[str, dict[str, float]]]:
        """Per config, per query: its k best files with their scores, best first."""
        return {cfg: {qid: dict(list(run.items())[:k]) for qid, run in by_query.items()} for cfg, by_query in self.runs.items()}

    def document(self, meta: dict[str, Any]) -> dict[str, Any]:
        return {
            **meta,
            "metrics": list(METRIC_SETS[self.metrics]),
            "configs": [c.describe() for c in self.configs],
            "budgets": self.budgets(),
            "files": {"means": self.file_means, "per_query": self.file_per_query},
            "chunks": {"means": self.chunk_means, "per_query": self.chunk_per_query} if self.chunk_means else None,
            "seconds": {"total": self.seconds, "passes": self.pass_seconds, "scoring": self.score_seconds,
                        "reference_bm25": self.reference_seconds},
            "machine": {"python": platform.python_version(), "cpus": _cpus(), "platform": platform.platform()},
        }


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@dataclass
class _Runs:
    files: dict[str, Run]
    chunks: dict[str, Run]
    chunk_qrels: dict[str, dict[str, int]] = field(default_factory=dict)


def run_eval(
    searcher: Searcher,
    queries: list[LabelledQuery],
    configs: list[EvalConfig],
    progress: Callable[[int], None] | None = None,
    metrics: str = "ir",
) -> EvalResult:
    started = time.perf_counter()
    pipelines = [c for c in configs if not c.is_reference_bm25]
    # Configurations with and without query expansion need different passes (expansion adds dense legs),
    # and within each, one pass per dense depth a configuration or budget source takes (budget.pass_plan).
    plans = {flag: budget.pass_plan(group) for flag, group in budget.pass_groups(configs).items()}
    result = EvalResult(configs, metrics, candidates={c.name: {} for c in configs}, files_ranked={c.name: {} for c in configs})
    runs = _Runs({c.name: {} for c in configs}, {c.name: {} for c in pipelines})
    with_spans = any(q.spans for q in queries)
    searcher.refresh()
    paths = _file_paths(searcher)
    for q in queries:
        if with_spans:
            runs.chunk_qrels[q.id] = _span_qrels(searcher, q)
        for flag, plan in plans.items():
            t0 = time.perf_counter()
            passes = [searcher.pass_with_caps(q.text, spec.caps, expand=flag) for spec in plan]
            result.pass_seconds += time.perf_counter() - t0
            t0 = time.perf_counter()
            # budget source -> the candidates it admits for this query, counted on its own depth's pass
            targets = {source: len(score(c, source).order) for spec, c in zip(plan, passes) for source in spec.sources}
            for spec, c in zip(plan, passes):
                _score_group(searcher, c, q.id, spec.configs, targets, paths, runs, result, with_spans)
            result.score_seconds += time.perf_counter() - t0
        if progress:
            progress(1)
    _run_reference_bm25(searcher, queries, configs, paths, runs, result)
    _measure(queries, configs, runs, result, with_spans)
    result.seconds = time.perf_counter() - started
    return result


def _score_group(searcher: Searcher, c: Candidates, qid: str, group: list[EvalConfig], targets: dict[Params, int],
                 paths: dict[int, str], runs: _Runs, result: EvalResult, with_spans: bool) -> None:
    for cfg in group:
        p = cfg.params
        source = budget.source_params(cfg)
        if source is not None:
            p = budget.fit(p, c, targets[source])
        elif isinstance(cfg.budget, int):
            p = budget.fit(p, c, cfg.budget)
        if p.rerank_weight > 0:  # this config's own shortlist, as a standalone query would rerank
            c.rerank[:] = np.nan
            searcher.rerank(c, p)
        ranking = score(c, p)
        files, sums = rank_files(c, ranking, p)
        runs.files[cfg.name][qid] = {paths[f]: float(s) for f, s in zip(files[:DEPTH].tolist(), sums[:DEPTH].tolist())}
        result.candidates[cfg.name][qid] = int(len(ranking.order))
        result.files_ranked[cfg.name][qid] = int(len(files))
        if with_spans:
            top = ranking.order[:DEPTH]
            runs.chunks[cfg.name][qid] = {str(i): float(s) for i, s in zip(c.nodes[top].tolist(), ranking.score[top].tolist())}


def _run_reference_bm25(searcher: Searcher, queries: list[LabelledQuery], configs: list[EvalConfig],
                        paths: dict[int, str], runs: _Runs, result: EvalResult) -> None:
    refs = [c for c in configs if c.is_reference_bm25]
    if not refs:
        return
    from .reference import ReferenceIndex

    t0 = time.perf_counter()
    index = ReferenceIndex(searcher.layout.root, sorted(paths.values()))
    for cfg in refs:
        if cfg.bm25 is None:
            raise ValueError(f"config {cfg.name!r} is not the reference BM25")
        ranked = index.rank([q.text for q in queries], cfg.bm25, DEPTH)
        for q, (run, matched) in zip(queries, ranked):
            runs.files[cfg.name][q.id] = run
            result.candidates[cfg.name][q.id] = matched
            result.files_ranked[cfg.name][q.id] = matched
    result.reference_seconds = time.perf_counter() - t0


def _measure(queries: list[LabelledQuery], configs: list[EvalConfig], runs: _Runs, result: EvalResult, with_spans: bool) -> None:
    file_qrels = {q.id: q.files for q in queries if q.files}
    for cfg in configs:
        result.file_means[cfg.name], result.file_per_query[cfg.name] = evaluate(file_qrels, runs.files[cfg.name], result.metrics)
        if with_spans and cfg.name in runs.chunks:
            result.chunk_means[cfg.name], result.chunk_per_query[cfg.name] = evaluate(runs.chunk_qrels, runs.chunks[cfg.name],
                                                                                      result.metrics)
    result.runs = runs.files


def _file_paths(searcher: Searcher) -> dict[int, str]:
    return searcher.store.file_paths()


def _span_qrels(searcher: Searcher, q: LabelledQuery) -> dict[str, int]:
    """Chunks overlapping a labelled line range are relevant, with the range's grade."""
    out: dict[str, int] = {}
    for (path, start, end), grade in q.spans.items():
        for row in searcher.store.file_chunks(path):
            if row["line_start"] <= end and row["line_end"] >= start:
                out[str(row["id"])] = max(grade, out.get(str(row["id"]), 0))
    return out
