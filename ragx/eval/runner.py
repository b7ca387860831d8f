"""Evaluate several pipeline configurations over labelled queries in one run.

Each query gets ONE retrieval pass with caps wide enough for every configuration; each configuration
is then scored from that same Candidates object with the pure scoring functions. That is exactly what
separate `ragx query` runs would compute (scoring re-applies every cap itself), at the cost of one.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..search.candidates import PassCaps
from ..search.pipeline import Searcher
from ..search.score import rank_files, score
from .metrics import METRIC_NAMES, evaluate
from .presets import EvalConfig
from .queries import LabelledQuery

DEPTH = 100  # files (and chunks) ranked per query: enough for R@100 and MAP@100


@dataclass
class EvalResult:
    configs: list[EvalConfig]
    file_means: dict[str, dict[str, float]] = field(default_factory=dict)
    file_per_query: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    chunk_means: dict[str, dict[str, float]] = field(default_factory=dict)
    chunk_per_query: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    runs: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # config -> qid -> file -> score
    seconds: float = 0.0
    pass_seconds: float = 0.0
    score_seconds: float = 0.0

    def document(self, meta: dict[str, Any]) -> dict[str, Any]:
        return {
            **meta,
            "metrics": list(METRIC_NAMES),
            "configs": [c.describe() for c in self.configs],
            "files": {"means": self.file_means, "per_query": self.file_per_query},
            "chunks": {"means": self.chunk_means, "per_query": self.chunk_per_query} if self.chunk_means else None,
            "seconds": {"total": self.seconds, "passes": self.pass_seconds, "scoring": self.score_seconds},
            "machine": {"python": platform.python_version(), "cpus": _cpus(), "platform": platform.platform()},
        }


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def wide_caps(configs: list[EvalConfig]) -> PassCaps:
    ps = [c.params for c in configs]
    return PassCaps(
        dense_n=max(p.dense_n for p in ps),
        lexical_n=max(p.lexical_n for p in ps),
        hops=max(p.hops for p in ps),
        query_floor=min(p.query_floor for p in ps),
    )


def run_eval(
    searcher: Searcher,
    queries: list[LabelledQuery],
    configs: list[EvalConfig],
    progress: Callable[[int], None] | None = None,
) -> EvalResult:
    started = time.perf_counter()
    # Configurations with and without query expansion need different passes (expansion adds dense legs).
    groups: dict[bool, list[EvalConfig]] = {}
    for cfg in configs:
        groups.setdefault(cfg.expand, []).append(cfg)
    caps = {flag: wide_caps(group) for flag, group in groups.items()}
    result = EvalResult(configs)
    file_runs: dict[str, dict[str, dict[str, float]]] = {c.name: {} for c in configs}
    chunk_runs: dict[str, dict[str, dict[str, float]]] = {c.name: {} for c in configs}
    chunk_qrels: dict[str, dict[str, int]] = {}
    with_spans = any(q.spans for q in queries)
    searcher.refresh()
    paths = _file_paths(searcher)
    for q in queries:
        if with_spans:
            chunk_qrels[q.id] = _span_qrels(searcher, q)
        for flag, group in groups.items():
            t0 = time.perf_counter()
            c = searcher.pass_with_caps(q.text, caps[flag], expand=flag)
            result.pass_seconds += time.perf_counter() - t0
            for cfg in group:
                t0 = time.perf_counter()
                if cfg.params.rerank_weight > 0:  # this config's own shortlist, as a standalone query would rerank
                    c.rerank[:] = np.nan
                    searcher.rerank(c, cfg.params)
                ranking = score(c, cfg.params)
                files, sums = rank_files(c, ranking, cfg.params)
                file_runs[cfg.name][q.id] = {paths[f]: float(s) for f, s in zip(files[:DEPTH].tolist(), sums[:DEPTH].tolist())}
                if with_spans:
                    top = ranking.order[:DEPTH]
                    chunk_runs[cfg.name][q.id] = {str(i): float(s) for i, s in zip(c.nodes[top].tolist(), ranking.score[top].tolist())}
                result.score_seconds += time.perf_counter() - t0
        if progress:
            progress(1)
    file_qrels = {q.id: q.files for q in queries if q.files}
    for cfg in configs:
        result.file_means[cfg.name], result.file_per_query[cfg.name] = evaluate(file_qrels, file_runs[cfg.name])
        if with_spans:
            result.chunk_means[cfg.name], result.chunk_per_query[cfg.name] = evaluate(chunk_qrels, chunk_runs[cfg.name])
    result.runs = file_runs
    result.seconds = time.perf_counter() - started
    return result


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

