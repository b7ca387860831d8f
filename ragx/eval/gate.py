"""The regression gate: a fresh eval's means against baselines recorded in the repo.

A baseline file holds `{"dataset", "split", "tolerance", "metrics": {config: {metric: value}}}` (and, from
ragx.eval.v2 on, "candidates": {config: mean candidates per query}, informational; older files read the same).
The gate fails when any recorded metric drops by more than the tolerance (absolute).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError

DEFAULT_TOLERANCE = 0.01


@dataclass
class GateResult:
    passed: bool
    tolerance: float
    rows: list[dict[str, Any]]   # config, metric, baseline, current, delta, ok


def read_baseline(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"baseline {path} not found (record one with --write-baseline)") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"baseline {path}: malformed JSON ({exc.msg})") from None
    if not isinstance(doc.get("metrics"), dict):
        raise UsageError(f"baseline {path} has no \"metrics\" table")
    return doc


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


def write_baseline(path: Path, dataset: str, split: str | None, means: dict[str, dict[str, float]], tolerance: float,
                   command: str, budgets: dict[str, dict[str, Any]] | None = None) -> None:
    doc = {
        "dataset": dataset,
        "split": split,
        "tolerance": tolerance,
        "command": command,
        "metrics": {c: {m: round(v, 6) for m, v in ms.items()} for c, ms in means.items()},
    }
    if budgets:  # for the reader: what each configuration scored per query when the baseline was taken
        doc["candidates"] = {c: round(b["candidates"], 1) for c, b in budgets.items()}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
