"""Human views of an eval run: a rich table, a markdown report and a bar plot."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from .metrics import METRIC_NAMES


def table_rows(means: dict[str, dict[str, float]]) -> list[list[str]]:
    return [[name, *(f"{m[k]:.4f}" for k in METRIC_NAMES)] for name, m in means.items()]


def markdown_table(means: dict[str, dict[str, float]]) -> str:
    head = "| config | " + " | ".join(METRIC_NAMES) + " |"
    rule = "|---|" + "---:|" * len(METRIC_NAMES)
    return "\n".join([head, rule, *("| " + " | ".join(r) + " |" for r in table_rows(means))])


def git_commit(cwd: Path | None = None) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=cwd, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=cwd, timeout=5)
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def write_report(doc: dict[str, Any], folder: Path, stem: str) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    md, png = folder / f"{stem}.md", folder / f"{stem}.png"
    lines = [
        f"# {doc['dataset']} — {doc.get('split') or 'queries'}",
        "",
        f"{doc['n_queries']} queries over {doc['n_files']} files ({doc['n_chunks']} chunks); file-level ranking "
        f"(`--files-only`), depth {doc['depth']}.",
        "",
        markdown_table(doc["files"]["means"]),
        "",
    ]
    if doc.get("chunks"):
        lines += ["Chunk level (labels on line ranges):", "", markdown_table(doc["chunks"]["means"]), ""]
    lines += [
        "Configurations:",
        "",
        *(f"- `{c['name']}` (preset `{c['preset']}`): " + ", ".join(f"{k}={v}" for k, v in c["params"].items()) for c in doc["configs"]),
        "",
        f"- command: `{doc['command']}`",
        f"- commit: `{doc['commit']}`; index model: `{doc['model']}`",
        f"- machine: {doc['machine']['cpus']} CPUs, Python {doc['machine']['python']}, {doc['machine']['platform']}",
        f"- time: {doc['seconds']['total']:.1f} s ({doc['seconds']['passes']:.1f} s retrieval passes, "
        f"{doc['seconds']['scoring']:.2f} s scoring for all configurations)",
        "",
        f"![{doc['dataset']}]({png.name})",
        "",
    ]
    md.write_text("\n".join(lines), encoding="utf-8")
    plot(doc["files"]["means"], png, f"{doc['dataset']} {doc.get('split') or ''} (files)")
    return md, png


def plot(means: dict[str, dict[str, float]], path: Path, title: str) -> None:
    """One bar group per metric, one bar per configuration."""
    try:
        import matplotlib
    except ImportError:  # the light install has no plotting library
        from ..errors import UsageError

        raise UsageError('--report plots need matplotlib: pip install "ragx[report]"') from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(means)
    x = np.arange(len(METRIC_NAMES))
    width = 0.8 / max(len(names), 1)
    fig, ax = plt.subplots(figsize=(9, 4.2), dpi=110)
    for i, name in enumerate(names):
        ax.bar(x + (i - (len(names) - 1) / 2) * width, [means[name][m] for m in METRIC_NAMES], width, label=name)
    ax.set_xticks(x, METRIC_NAMES)
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(ncols=min(len(names), 5), fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.08), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
