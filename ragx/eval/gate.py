"""The regression gate: a fresh eval's means against baselines recorded in the repo.

A baseline file holds `{"dataset", "split", "tolerance", "metrics": {config: {metric: value}}}` (and, from
ragx.eval.v2 on, "candidates": {config: mean candidates per query}, informational; newer ones, "budget":
{config: its budget signature, presets.EvalConfig.budget_signature}; older files read the same).
The gate fails when any recorded metric drops by more than the tolerance (absolute). Configurations are
matched by name; one whose budget signature differs from the baseline's is named in the result
(`budget_changes`): its rows then compare different candidate budgets, which the gate says rather than
hides (the comparison still runs, so a drop still fails). A baseline of
another dataset or split, or one recording configurations the run does not have, is refused before the
run (`check_matches`): an input mismatch, not a regression.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError, read_user_text

DEFAULT_TOLERANCE = 0.01


@dataclass
class GateResult:
    passed: bool
    tolerance: float
    rows: list[dict[str, Any]]   # config, metric, baseline, current, delta, ok


def read_baseline(path: Path) -> dict[str, Any]:
    """A baseline file, its shape checked: a metrics table of finite numbers, a finite tolerance >= 0."""
    text = read_user_text(path, "baseline", missing=" (record one with --write-baseline)", folder=", not a baseline file")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"baseline {path}: malformed JSON ({exc.msg})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), dict):
        raise UsageError(f"baseline {path} has no \"metrics\" table")
    for config, metrics in doc["metrics"].items():
        if not isinstance(metrics, dict) or not all(_number(v) for v in metrics.values()):
            raise UsageError(f"baseline {path}: metrics of {config!r} must be an object of finite numbers")
    if "tolerance" in doc and not (_number(doc["tolerance"]) and doc["tolerance"] >= 0):
        raise UsageError(f"baseline {path}: tolerance must be a finite number >= 0, got {json.dumps(doc['tolerance'])}")
    return doc


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def check_tolerance(tolerance: float | None) -> None:
    """`--tolerance`: a finite number >= 0 (an absolute drop in a metric), else a UsageError."""
    if tolerance is not None and not (math.isfinite(tolerance) and tolerance >= 0):
        raise UsageError(f"--tolerance is an absolute drop in a metric: a finite number >= 0, got {tolerance}")


def check_matches(baseline: dict[str, Any], path: Path, dataset: str, split: str | None, configs: list[str],
                  metrics: tuple[str, ...]) -> None:
    """Refuse a baseline that is not about this run: another dataset or split, or configurations (or
    metrics) the run does not measure. Either is an input mismatch (exit 2), not a regression (exit 1)."""
    theirs = (baseline.get("dataset"), baseline.get("split"))
    if any(b is not None and b != ours for b, ours in zip(theirs, (dataset, split))):
        raise UsageError(f"--gate {path} is the baseline of dataset {theirs[0]!r} split {theirs[1]!r}, "
                         f"but this run evaluates dataset {dataset!r} split {split!r}")
    missing = [c for c in baseline["metrics"] if c not in configs]
    if missing:
        raise UsageError(f"--gate {path}: baseline configuration(s) {', '.join(missing)} are not in this run "
                         f"({', '.join(configs)}); add them with -c, or record a new baseline with --write-baseline")
    unknown = sorted({m for ms in baseline["metrics"].values() for m in ms} - set(metrics))
    if unknown:
        raise UsageError(f"--gate {path}: baseline metric(s) {', '.join(unknown)} are not measured by ragx eval "
                         f"({', '.join(metrics)})")


def check(baseline: dict[str, Any], means: dict[str, dict[str, float]], tolerance: float | None = None) -> GateResult:
    tol = float(tolerance if tolerance is not None else baseline.get("tolerance", DEFAULT_TOLERANCE))
    rows = []
    for config, metrics in baseline["metrics"].items():
        for metric, base in metrics.items():
            current = means.get(config, {}).get(metric)
            ok = current is not None and current >= base - tol
            rows.append({"config": config, "metric": metric, "baseline": base, "current": current,
                         "delta": None if current is None else current - base, "ok": ok})
    return GateResult(all(r["ok"] for r in rows), tol, rows)


def budget_changes(baseline: dict[str, Any], signatures: dict[str, dict]) -> dict[str, str]:
    """Per configuration the baseline and the run both have, where their budget signatures differ: what
    changed, as `key baseline -> run` (a baseline without signatures: nothing to compare)."""
    recorded = baseline.get("budget")
    if not isinstance(recorded, dict):
        return {}
    out = {}
    for config, theirs in recorded.items():
        ours = signatures.get(config)
        if ours is None or not isinstance(theirs, dict):
            continue
        ours = json.loads(json.dumps(ours))  # as a baseline file holds it (tuples as lists, keys as strings)
        diff = [f"{k} {_shown(theirs.get(k))} -> {_shown(ours.get(k))}" for k in sorted(set(theirs) | set(ours))
                if theirs.get(k) != ours.get(k)]
        if diff:
            out[config] = ", ".join(diff)
    return out


def _shown(value: object) -> str:
    return "(none)" if value is None else json.dumps(value, sort_keys=True)


def write_baseline(path: Path, dataset: str, split: str | None, means: dict[str, dict[str, float]], tolerance: float,
                   command: str, budgets: dict[str, dict[str, Any]] | None = None,
                   signatures: dict[str, dict] | None = None) -> None:
    doc = {
        "dataset": dataset,
        "split": split,
        "tolerance": tolerance,
        "command": command,
        "metrics": {c: {m: round(v, 6) for m, v in ms.items()} for c, ms in means.items()},
    }
    if budgets:  # for the reader: what each configuration scored per query when the baseline was taken
        doc["candidates"] = {c: round(b["candidates"], 1) for c, b in budgets.items()}
    if signatures:
        doc["budget"] = signatures
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
