"""One eval run over one or many datasets: each dataset's document with its significance against the
reference, and the summary across datasets (a `ragx.eval.v2` document)."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .compare import add_comparisons
from .metrics import METRIC_NAMES


def parse_configs(specs: list[str] | None, defaults, reference: str | None) -> list:
    """The run's configurations (`--config` specs, else the default set) over `defaults` (a corpus's
    [search] Params), checked as a whole before any work: unique names, `--reference` among them, and
    one BM25 setting per retrieval pass. A UsageError otherwise."""
    from .budget import check_passes
    from .compare import pick_reference
    from .presets import DEFAULT_CONFIGS, parse_config

    configs = [parse_config(s, defaults) for s in (specs or DEFAULT_CONFIGS)]
    names = [c.name for c in configs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"--config names must be unique: {', '.join(twice)} given more than once")
    pick_reference(names, reference)
    check_passes(configs)
    return configs


def evaluate_dataset(corpus, queries: Path | list, specs: list | None, reference: str | None, meta: dict[str, Any],
                     progress=None) -> dict[str, Any]:
    """Corpus.evaluate, then the paired tests against the reference (timed separately). `specs` are
    `--config` specs or parsed configurations (`parse_configs`), None for the default set."""
    from .kinds import by_kind
    from .queries import load_queries

    doc = corpus.evaluate(queries, specs, progress=progress)
    doc |= meta
    labelled = queries if isinstance(queries, list) else load_queries(queries)
    kinds = by_kind(doc["files"]["per_query"], {q.id: q.kind for q in labelled})
    if kinds:
        doc["by_type"] = kinds
    t0 = time.perf_counter()
    add_comparisons(doc, reference)
    doc["stats_seconds"] = time.perf_counter() - t0
    return doc


def summary(docs: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """{metric: {config: {dataset: mean, ..., "mean": mean over datasets}}} for configs in every dataset."""
    names = [n for n in docs[0]["files"]["means"] if all(n in d["files"]["means"] for d in docs)]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for metric in METRIC_NAMES:
        out[metric] = {}
        for name in names:
            row = {d["dataset"]: d["files"]["means"][name][metric] for d in docs}
            out[metric][name] = {**row, "mean": statistics.fmean(row.values())}
    return out


def document(docs: list[dict[str, Any]], command: str, commit: str) -> dict[str, Any]:
    return {
        "command": command,
        "commit": commit,
        "reference": docs[0]["comparisons"]["reference"],
        "datasets": docs,
        "summary": summary(docs),
    }


def per_dataset_path(path: Path, dataset: str, split: str | None, n_datasets: int, what: str) -> Path:
    """A baseline for one dataset: `path` itself, or `<path>/<dataset>-<split>.json` when it is a folder."""
    if path.is_dir() or (n_datasets > 1 and not path.suffix):
        return path / f"{dataset}-{split or 'queries'}.json"
    if n_datasets > 1:
        raise UsageError(f"{what} {path}: with several datasets, give a folder (one <dataset>-<split>.json each)")
    return path
