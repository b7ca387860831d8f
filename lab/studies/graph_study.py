"""Item 3: graph families vs the equal-budget plain hybrid (RRF of dense + BM25 over the same nodes).

    python -m lab.studies.graph_study rrf|linear [collections...]  -> reports/research/graph-<base>-<coll>.json
    python -m lab.studies.graph_study report rrf|linear           -> reports/research/graph-study-<base>.{md,json}
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import data
from . import families as fam
from .protocol import COLLECTIONS, load_benches, measure_grid, select
from .tables import compare_all, markdown

OUT = Path(__file__).resolve().parents[2] / "reports" / "research"


def grids(side, base: str) -> dict[str, dict[str, Callable[..., Any]]]:
    """family -> {config label -> scorer}; the first family is the reference."""
    return {
        "hybrid": {f"hybrid ({base})": fam.hybrid(base)},
        "heat": {f"heat w={w} decay={d}": fam.heat(w, d, base=base) for w in (0.05, 0.1, 0.2, 0.4) for d in (0.5, 0.8)},
        "regularise": {f"reg lam={lam}": fam.regularise(lam, base=base) for lam in (0.1, 0.2, 0.3, 0.5)},
        "ppr": {f"ppr w={w} d={d}": fam.ppr(w, d, base=base) for w in (0.1, 0.2, 0.4, 0.8) for d in (0.5, 0.85)},
        "adjacent": {f"adj w={w}": fam.adjacent(side, w, base=base) for w in (0.05, 0.1, 0.2, 0.4)},
        "rareterm": {f"rare w={w} df<={m}": fam.rareterm(side, w, m, base=base) for w in (0.05, 0.1, 0.2, 0.4) for m in (10, 50)},
    }


def study(coll: str, base: str) -> dict:
    """Held-out per-query metrics of every family on one collection; saved as JSON."""
    b = load_benches((coll,))[coll]
    t = time.perf_counter()
    side = fam.side_graphs(data.chunk_table(b.test))
    held, chosen, gaps = {}, {}, {}
    for family, grid in grids(side, base).items():
        test_res = measure_grid(b.test, grid)
        train_res = measure_grid(b.train, grid) if b.train else None
        h = select(b, train_res, test_res)
        held[family] = {m: v.tolist() for m, v in h.values.items()}
        chosen[family] = ", ".join(sorted(set(h.chosen)))
        gaps[family] = h.train_mean - float(h.values["nDCG@10"].mean())
    out = {"collection": coll, "base": base, "cv": b.cv, "queries": len(b.test.qids),
           "candidates_mean": float(np.mean([len(c.nodes) for c in b.test.passes])), "chosen": chosen,
           "train_test_gap_ndcg": gaps, "per_query": held, "qids": b.test.qids}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"graph-{base}-{coll}.json").write_text(json.dumps(out), encoding="utf-8")
    print(f"{coll} ({base}): {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    return out


def report(base: str, collections=COLLECTIONS) -> dict:
    md = [f"# Graph families vs the equal-budget hybrid — base fusion: {base} (held-out)", ""]
    results: dict[str, Any] = {}
    for coll in collections:
        f = OUT / f"graph-{base}-{coll}.json"
        if not f.exists():
            continue
        r = json.loads(f.read_text())
        held = {fam_: {m: np.array(v) for m, v in vals.items()} for fam_, vals in r["per_query"].items()}
        md += [f"## {coll} ({r['queries']} test queries; {'5-fold CV' if r['cv'] else 'tuned on train'}; "
               f"{r['candidates_mean']:.0f} candidate chunks per query for every family)", ""]
        metrics = ["nDCG@10"] + (["R@5", "R@10"] if coll == "musique-small" else [])
        results[coll] = {"metrics": {}}
        for m in metrics:
            md += [f"### {m}", "", markdown(held, "hybrid", m, r["chosen"]), ""]
            comps = compare_all(held, "hybrid", m)
            results[coll]["metrics"][m] = {
                "hybrid": float(held["hybrid"][m].mean()),
                **{f_: {"mean": c.mean_a, "delta": c.delta, "p_holm": c.p_holm, "wtl": [c.wins, c.ties, c.losses]} for f_, c in comps.items()},
            }
        md += ["train − test nDCG@10 gap of the chosen configuration: " +
               ", ".join(f"{k} {v:+.3f}" for k, v in r["train_test_gap_ndcg"].items()), ""]
    md += verdict(results)
    (OUT / f"graph-study-{base}.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (OUT / f"graph-study-{base}.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    return results


def verdict(results: dict) -> list[str]:
    lines = ["## Verdict (rule: keep a graph stage by default only if it wins significantly on ≥ 2 collections and loses "
             "significantly on none; nDCG@10, Holm-corrected p < 0.05)", ""]
    families = [f for f in next(iter(results.values()))["metrics"]["nDCG@10"] if f != "hybrid"]
    for f in families:
        wins = [c for c, r in results.items() if r["metrics"]["nDCG@10"][f]["p_holm"] < 0.05 and r["metrics"]["nDCG@10"][f]["delta"] > 0]
        losses = [c for c, r in results.items() if r["metrics"]["nDCG@10"][f]["p_holm"] < 0.05 and r["metrics"]["nDCG@10"][f]["delta"] < 0]
        keep = len(wins) >= 2 and not losses
        lines.append(f"- **{f}**: significant wins {wins or 'none'}, significant losses {losses or 'none'} -> "
                     f"{'KEEP by default' if keep else 'off by default'}")
    return lines


if __name__ == "__main__":
    # python -m lab.studies.graph_study BASE [COLLECTION ...] | report BASE
    if sys.argv[1] == "report":
        report(sys.argv[2])
    else:
        for c in sys.argv[2:] or COLLECTIONS:
            study(c, sys.argv[1])
