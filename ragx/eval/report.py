"""Human views of an eval run: tables (one set of rows for the console and the markdown report),
markdown reports, and plots of differences against the reference with their confidence intervals.

Markers, everywhere: ▲/▼ = significantly better/worse than the reference (paired randomization
test, Benjamini-Hochberg-corrected p < 0.05); † = R@k with k above the configuration's mean number of
files ranked per query (its recall there is capped by its candidates, not measured at k).
"""

from __future__ import annotations

import statistics
import subprocess
from pathlib import Path
from typing import Any

from .metrics import HEADLINE, METRIC_NAMES, recall_depth
from .stats import ALPHA, P_FLOOR

BETTER, WORSE, CAPPED = "▲", "▼", "†"
LEGEND = (f"{BETTER}/{WORSE}: significantly better/worse than the reference (paired randomization test, "
          f"Benjamini-Hochberg p < {ALPHA}); {CAPPED}: R@k with k above the mean files the configuration ranks "
          "(capped by its candidate budget); cand.: candidates scored per query (chunks; files for bm25-ref)")


def _comparison(doc: dict[str, Any], config: str, metric: str) -> dict[str, Any] | None:
    comps = (doc.get("comparisons") or {}).get("configs", {})
    return comps.get(config, {}).get(metric)


def marker(doc: dict[str, Any], config: str, metric: str) -> str:
    out = ""
    comp = _comparison(doc, config, metric)
    if comp and comp["significant"]:
        out += BETTER if comp["diff"] > 0 else WORSE
    k = recall_depth(metric)
    budgets = doc.get("budgets", {}).get(config)
    if k is not None and budgets is not None and budgets["files"] < k:
        out += CAPPED
    return out


def cell(doc: dict[str, Any], config: str, metric: str) -> str:
    return f"{doc['files']['means'][config][metric]:.4f}{marker(doc, config, metric)}"


def metrics_of(doc: dict[str, Any]) -> tuple[str, ...]:
    """The metric set a document was measured with (the prose set for documents that do not say)."""
    return tuple(doc.get("metrics") or METRIC_NAMES)


def main_head(metrics: tuple[str, ...] = METRIC_NAMES) -> list[str]:
    return ["config", "cand.", "files", *metrics]


def main_rows(doc: dict[str, Any]) -> list[list[str]]:
    ref = (doc.get("comparisons") or {}).get("reference")
    rows = []
    for name in doc["files"]["means"]:
        b = doc.get("budgets", {}).get(name, {})
        label = f"{name} (ref)" if name == ref else name
        rows.append([label, f"{b.get('candidates', 0):.1f}", f"{b.get('files', 0):.1f}", *(cell(doc, name, m) for m in metrics_of(doc))])
    return rows


def comparison_head() -> list[str]:
    return ["config", "metric", "Δ vs ref", "95% CI", "p", "p (BH)", "W/T/L"]


def comparison_rows(doc: dict[str, Any], metrics: tuple[str, ...] = HEADLINE) -> list[list[str]]:
    rows = []
    for name, by_metric in (doc.get("comparisons") or {}).get("configs", {}).items():
        for m in metrics:
            c = by_metric[m]
            rows.append([name, m, f"{c['diff']:+.4f}{marker(doc, name, m)}", f"[{c['ci'][0]:+.4f}, {c['ci'][1]:+.4f}]",
                         _p(c["p"]), _p(c["p_adjusted"]), f"{c['wins']}/{c['ties']}/{c['losses']}"])
    return rows


def _p(p: float) -> str:
    """At the randomization test's floor, say so: no resample was as extreme, the true p may be smaller."""
    return f"≤{P_FLOOR:.4f}" if p <= P_FLOOR * (1 + 1e-9) else f"{p:.4f}"


def lexical_lines(doc: dict[str, Any], metrics: tuple[str, ...] = HEADLINE) -> list[str]:
    """One sentence per metric: where ragx's lexical leg stands against the reference BM25."""
    check = doc.get("lexical_check")
    if not check:
        return []
    means = doc["files"]["means"]
    out = []
    for m in metrics:
        c = check["metrics"][m]
        verdict = ("BEHIND" if c["diff"] < 0 else "ahead") if c["significant"] else "no significant difference"
        k, files = recall_depth(m), doc.get("budgets", {}).get(check["leg"], {}).get("files")
        if k is not None and files is not None and files < k:  # the reference ranks every matching file
            verdict += f" ({CAPPED} the leg ranks {files:.0f} files per query at its budget, the reference all that match)"
        out.append(f"{check['leg']} {m} {means[check['leg']][m]:.4f} vs {check['reference']} {means[check['reference']][m]:.4f}: "
                   f"{c['diff']:+.4f} [{c['ci'][0]:+.4f}, {c['ci'][1]:+.4f}], p (BH) {_p(c['p_adjusted'])}, "
                   f"W/T/L {c['wins']}/{c['ties']}/{c['losses']} — {verdict}")
    return out


def summary_head(docs: list[dict[str, Any]]) -> list[str]:
    return ["config", *(d["dataset"] for d in docs), "mean"]


def summary_rows(docs: list[dict[str, Any]], metric: str) -> list[list[str]]:
    """Config × dataset for one metric, with each dataset's markers, and the mean over datasets."""
    names = [n for n in docs[0]["files"]["means"] if all(n in d["files"]["means"] for d in docs)]
    ref = (docs[0].get("comparisons") or {}).get("reference")
    rows = []
    for name in names:
        values = [d["files"]["means"][name][metric] for d in docs]
        label = f"{name} (ref)" if name == ref else name
        rows.append([label, *(cell(d, name, metric) for d in docs), f"{statistics.fmean(values):.4f}"])
    return rows


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    rule = "|---|" + "---:|" * (len(head) - 1)
    return "\n".join([_markdown_row(head), rule, *(_markdown_row(r) for r in rows)])


def _markdown_row(cells: list[str]) -> str:
    """One table row; a `|` inside a cell (a configuration or query type may hold one) is escaped, so
    it stays in its cell instead of starting another."""
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def git_commit(cwd: Path | None = None) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=cwd, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=cwd, timeout=5)
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"
