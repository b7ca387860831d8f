"""Plots of differences against the reference: one point per configuration, its 95% CI as a bar, a
line at zero, and an axis zoomed to the differences (never bars that all start at zero)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .metrics import METRIC_NAMES

NEEDS_MATPLOTLIB = '--report plots need matplotlib: pip install "ragx[report]"'


def require() -> None:
    """Refuse `--report` up front, before a run whose report could not be drawn."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        from ..errors import UsageError

        raise UsageError(NEEDS_MATPLOTLIB)


def _pyplot():
    try:
        import matplotlib
    except ImportError:  # the light install has no plotting library
        from ..errors import UsageError

        raise UsageError(NEEDS_MATPLOTLIB) from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def forest(ax, doc: dict[str, Any], metric: str, title: str) -> None:
    comps = (doc.get("comparisons") or {}).get("configs", {})
    names = list(comps)[::-1]  # first config on top
    for y, name in enumerate(names):
        c = comps[name][metric]
        colour = ("tab:green" if c["diff"] > 0 else "tab:red") if c["significant"] else "tab:grey"
        ax.errorbar(c["diff"], y, xerr=[[c["diff"] - c["ci"][0]], [c["ci"][1] - c["diff"]]], fmt="o", color=colour,
                    ecolor=colour, capsize=3, markersize=5, markerfacecolor=colour if c["significant"] else "white")
    ax.axvline(0.0, color="black", linewidth=0.8)
    budgets = doc.get("budgets", {})
    labels = [f"{n} ({budgets[n]['candidates']:.0f})" if n in budgets else n for n in names]  # candidates per query
    ax.set_yticks(range(len(names)), labels, fontsize="small")
    ax.set_title(title, fontsize="medium")
    ax.grid(axis="x", alpha=0.3)
    ax.tick_params(axis="x", labelsize="small")
    ax.margins(x=0.1, y=0.15)


def dataset_plot(doc: dict[str, Any], path: Path) -> None:
    """Every metric's differences against the reference, one panel per metric."""
    plt = _pyplot()
    cols = 3
    rows = (len(METRIC_NAMES) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(12, 2.2 + 1.9 * rows), dpi=110, sharey=True, squeeze=False)
    ref = doc["comparisons"]["reference"]
    for ax, metric in zip(axes.flat, METRIC_NAMES):
        forest(ax, doc, metric, metric)
    for ax in list(axes.flat)[len(METRIC_NAMES):]:
        ax.set_visible(False)
    fig.suptitle(f"{doc['dataset']} {doc.get('split') or ''}: difference from {ref} (95% CI; filled = significant; candidates per query in brackets)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def summary_plot(docs: list[dict[str, Any]], metrics: tuple[str, ...], path: Path) -> None:
    """Metrics × datasets: each panel one dataset's differences against its reference."""
    plt = _pyplot()
    fig, axes = plt.subplots(len(metrics), len(docs), figsize=(3.6 * len(docs) + 1.5, 2.0 * len(metrics) + 0.8),
                             dpi=110, sharey=True, squeeze=False)
    for i, metric in enumerate(metrics):
        for j, doc in enumerate(docs):
            forest(axes[i][j], doc, metric, f"{doc['dataset']}: {metric}")
    ref = docs[0]["comparisons"]["reference"]
    fig.suptitle(f"difference from {ref} (95% CI; filled = significant after Benjamini-Hochberg)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
