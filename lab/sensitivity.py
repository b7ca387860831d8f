"""One knob at a time around the best trial, with 95% confidence intervals.

Each knob is moved alone over `points` values of its range; every setting is compared with the best
trial's own setting query by query (the objective's metrics summed per query, the training sets'
queries pooled), with `ragx.eval.stats.paired`: the mean per-query difference and its 95% BCa
bootstrap interval. With one training set the mean difference is the objective's difference (up to rounding:
the objective is the mean over queries); with several, the guard (a penalty on the worst set) is
not part of it, and the plot says so.

The settings of one knob are re-scored as one batch (`Objective.per_query_many`): a weight's points
share one structure and are ranked together (lab/vectorised.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ragx.eval.stats import LEVEL, paired
from ragx.scoring.params import Params


def knob_grid(lo: Any, hi: Any, points: int, whole: bool) -> list:
    if whole:
        return np.unique(np.round(np.linspace(lo, hi, points))).astype(int).tolist()
    return np.linspace(lo, hi, points).tolist()


def sensitivity(objective, build: str, best: Params, space: dict[str, list], whole: dict[str, bool], points: int = 9) -> dict[str, dict[str, list]]:
    """knob -> {grid, value (the objective), diff, low, high (the per-query difference from the best setting and its CI)}."""
    out = {}
    for name, (lo, hi) in space.items():
        grid = knob_grid(lo, hi, points, whole[name])
        settings = [best, *(best.replace(**{name: v}) for v in grid)]
        values, per_query = objective.per_query_many(settings, build)
        compared = [paired(q, per_query[0]) for q in per_query[1:]]
        out[name] = {"grid": grid, "value": values[1:], "diff": [c.diff for c in compared],
                     "low": [c.ci[0] for c in compared], "high": [c.ci[1] for c in compared]}
    return out


def sensitivity_plot(sens: dict[str, dict[str, list]], best_value: float, objective: str, pooled: bool, path: Path) -> Path:
    """One panel per knob: the mean per-query difference from the best setting with its 95% CI band,
    every panel on one y axis (a 0.006 dip looks as small as it is next to a 0.1 one)."""
    import matplotlib.pyplot as plt

    n = len(sens)
    cols = max(1, min(4, n))
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.4 * rows), squeeze=False, sharey=True)
    for ax, (name, s) in zip(axes.flat, sens.items()):
        ax.fill_between(s["grid"], s["low"], s["high"], alpha=0.25, lw=0, label=f"{int(LEVEL * 100)}% CI")
        ax.plot(s["grid"], s["diff"], marker="o", ms=3)
        ax.axhline(0.0, color="grey", lw=0.6, ls="--")
        ax.set_title(name, fontsize=9)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    for row in axes:
        row[0].set_ylabel(f"{objective} - best, per query", fontsize=8)
    where = "queries of every training set pooled, guard left out" if pooled else "mean over the training queries"
    fig.suptitle(f"{objective}, one knob moved from the best trial ({best_value:.4f}): difference and "
                 f"{int(LEVEL * 100)}% BCa bootstrap CI ({where})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
