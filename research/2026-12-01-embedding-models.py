"""The cross-collection table of the embedding-model study, from the lab's per-collection summaries.

    python research/2026-12-01-embedding-models.py [reports/lab]

Reads reports/lab/models-<collection>-test/summary.json (written by `python -m lab models`) and prints,
per model: dense and hybrid nDCG@10 on each collection (with the cross-model difference and BH-corrected
p against the reference model), the mean over the collections present for every model, and the costs
measured on each collection (bench chunks/s, median query ms, vector MB).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else "reports/lab")
summaries = {p.parent.name.removeprefix("models-").removesuffix("-test"): json.loads(p.read_text())
             for p in sorted(root.glob("models-*-test/summary.json"))}
models = list(dict.fromkeys(r["model"] for s in summaries.values() for r in s["records"]))


def cell(s, model, preset):
    rec = next((r for r in s["records"] if r["model"] == model), None)
    if rec is None:
        return "—", None
    c = s["cross_model"][preset].get(model)
    extra = "" if c is None else f" ({c['diff']:+.3f}, p {c['p_adjusted']:.2g}{'*' if c['significant'] else ''})"
    return f"{rec['means'][preset]:.4f}{extra}", rec["means"][preset]


for preset in ("dense", "hybrid", "default"):
    print(f"\n#### {preset} nDCG@10\n")
    print("| model | " + " | ".join(summaries) + " | mean |")
    print("|---" * (len(summaries) + 2) + "|")
    for m in models:
        cells = [cell(s, m, preset) for s in summaries.values()]
        values = [v for _, v in cells if v is not None]
        mean = f"{statistics.fmean(values):.4f}" if len(values) == len(cells) else "—"
        print(f"| {m} | " + " | ".join(c for c, _ in cells) + f" | {mean} |")

def per_model_table(title: str, render) -> None:
    """One row per model, one cell per collection: render(record) or a dash where the model was not run."""
    print(f"\n#### {title}\n")
    print("| model | " + " | ".join(summaries) + " |")
    print("|---" * (len(summaries) + 1) + "|")
    for m in models:
        records = [next((r for r in s["records"] if r["model"] == m), None) for s in summaries.values()]
        print(f"| {m} | " + " | ".join("—" if r is None else render(r) for r in records) + " |")


def best_preset(rec) -> str:
    vs = rec["vs_hybrid"].get(rec["best_preset"])
    return rec["best_preset"] + ("" if vs is None else f" ({vs['diff']:+.4f}, p {vs['p_adjusted']:.2g}{'*' if vs['significant'] else ''})")


per_model_table("best preset per model (within the model, against its hybrid)", best_preset)
per_model_table(
    "costs (per collection: bench chunks/s · median query ms · vectors MB in RAM · chunks split by the window)",
    lambda r: f"{r['chunks_per_s']:.1f} · {r['query_ms_median']:.1f} ms · {r['vector_bytes_memory'] / 1e6:.1f} MB · "
              f"{r['over_window']}/{r['unwindowed_chunks']}",
)
