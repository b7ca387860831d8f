"""Markdown tables of held-out comparisons against a reference, with Holm-corrected p-values."""

from __future__ import annotations

import numpy as np

from .stats import Comparison, holm, paired


def compare_all(rows: dict[str, dict[str, np.ndarray]], ref: str, metric: str) -> dict[str, Comparison]:
    """Every row vs `ref` on one metric; Holm across the rows of this table."""
    out = {name: paired(v[metric], rows[ref][metric]) for name, v in rows.items() if name != ref}
    holm(list(out.values()))
    return out


def markdown(rows: dict[str, dict[str, np.ndarray]], ref: str, metric: str, extra: dict[str, str] | None = None) -> str:
    comps = compare_all(rows, ref, metric)
    head = f"| config | {metric} | Δ vs {ref} | 95% CI | p (Holm) | W/T/L |" + (" chosen |" if extra else "")
    lines = [head, "|---|---:|---:|---|---:|---|" + ("---|" if extra else "")]
    lines.append(f"| {ref} | {rows[ref][metric].mean():.4f} | | | | |" + (f" {extra.get(ref, '')} |" if extra else ""))
    for name, c in comps.items():
        lines.append(f"| {name} | {c.mean_a:.4f} | {c.delta:+.4f}{c.mark()} | [{c.ci_low:+.4f}, {c.ci_high:+.4f}] | {c.p_holm:.3g} | "
                     f"{c.wins}/{c.ties}/{c.losses} |" + (f" {extra.get(name, '')} |" if extra else ""))
    return "\n".join(lines)
