#!/usr/bin/env python
"""No significant loss against a recorded run: two `ragx eval beir --json` documents paired query by query.

    python scripts/check/check_no_loss.py NEW.json [--old reports/eval-test.json] [--out reports/no-loss.md]

For every dataset and configuration the two runs share (matched by dataset and configuration name),
every metric's per-query values are paired over the queries both hold and tested with the eval's own
paired randomization test (ragx/eval/stats.py), new - old; Benjamini-Hochberg per dataset and metric
across the configurations. `reports/eval-test.json` is the run the baselines in reports/baselines/ were
recorded from (its means are those baselines), so it is the "old" side without running old code again.
Exit 1 when a shared configuration loses significantly on some metric (BH-adjusted p < 0.05, mean < 0).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ragx.eval.stats import Comparison, correct, paired


def datasets(path: Path) -> dict[str, dict]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {d["dataset"]: d for d in doc["datasets"]}


def compare(new: dict, old: dict) -> dict[str, dict[str, Comparison]]:
    """{config: {metric: Comparison}} over the shared configurations, metrics and queries."""
    a, b = new["files"]["per_query"], old["files"]["per_query"]
    configs = [c for c in a if c in b]
    metrics = [m for m in new["metrics"] if m in old["metrics"]]
    out: dict[str, dict[str, Comparison]] = {c: {} for c in configs}
    for m in metrics:
        family = []
        for c in configs:
            qids = sorted(set(a[c]) & set(b[c]))
            x = np.array([a[c][q][m] for q in qids])
            y = np.array([b[c][q][m] for q in qids])
            out[c][m] = paired(x, y)
            family.append(out[c][m])
        correct(family)
    return out


def table(name: str, new: dict, old: dict, found: dict[str, dict[str, Comparison]]) -> list[str]:
    metrics = list(next(iter(found.values())))
    lines = [f"### {name} ({new['n_queries']} queries; new {new.get('commit', '?')}, old {old.get('commit', '?')})", "",
             "| config | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 1) + "|"]
    for cfg, row in found.items():
        cells = []
        for m, c in row.items():
            mark = " **loss**" if c.significant and c.diff < 0 else ""
            cells.append(f"{new['files']['means'][cfg][m]:.4f} ({c.diff:+.4f}, p {c.p:.2f}, BH {c.p_adjusted:.2f}){mark}")
        lines.append(f"| {cfg} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("new", type=Path)
    ap.add_argument("--old", type=Path, default=Path("reports/eval-test.json"))
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    new, old = datasets(args.new), datasets(args.old)
    lines = ["Each cell: the new run's mean (new - old, paired randomization p, Benjamini-Hochberg p across "
             "configurations); **loss** marks a significant drop.", ""]
    losses = []
    for name in [n for n in new if n in old]:
        found = compare(new[name], old[name])
        lines += table(name, new[name], old[name], found)
        losses += [f"{name} {cfg} {m}" for cfg, row in found.items() for m, c in row.items() if c.significant and c.diff < 0]
    lines.append(f"Significant losses: {', '.join(losses) if losses else 'none'}.")
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 1 if losses else 0


if __name__ == "__main__":
    raise SystemExit(main())
