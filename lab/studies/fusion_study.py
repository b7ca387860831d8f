"""Item 2: query-adaptive fusion vs fixed weights, all at the same candidate budget (the pass's nodes).

    fixed      ragx's linear fusion (min-max legs, weighted mean) with one lexical share for all queries
    adaptive   the same, each leg's weight scaled per query by its decisiveness (ragx/search/adaptive.py)
    ltr        LightGBM LambdaMART over per-candidate signals (lab/studies/ltr.py), trained on
               scifact train + dendron-vault train (+ the other CV folds for cranfield / musique-small)

    python -m lab.studies.fusion_study seeds|pass   -> reports/research/fusion-study-<budget>.{md,json}
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ragx.search.adaptive import adaptive_weights

from . import data, ltr, signals
from .evaluate import measure
from .protocol import COLLECTIONS, load_benches, measure_grid, select
from .tables import markdown

OUT = Path(__file__).resolve().parents[2] / "reports" / "research"
SHARES = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


def fixed(share: float):
    return lambda c: signals.linear(c, 1 - share, share)


def adaptive(share: float, tau: float):
    def score(c):
        g, d = adaptive_weights(c.qsim, c.lexical, 1 - share, share, tau)
        return signals.linear(c, g, d)

    return score


def grids(wrap):
    return {
        "hybrid": {"rrf k=60": wrap(signals_hybrid())},
        "fixed": {f"share={s}": wrap(fixed(s)) for s in SHARES},
        "adaptive": {f"share={s} tau={t}": wrap(adaptive(s, t)) for s in SHARES for t in (0.5, 1.0, 2.0)},
    }


BUDGETS = {  # candidate set -> wrapper of a scorer
    "seeds": signals.on_seeds,          # dense top-100 + BM25 top-100: ragx's hybrid at 100 seeds per leg
    "pass": lambda scorer: scorer,      # every node of the pass (seeds + 2-hop kNN neighbourhood)
}


def signals_hybrid():
    return lambda c: signals.rrf(c, 60.0)


def ltr_heldout(benches, wrap) -> tuple[dict[str, dict[str, np.ndarray]], Any]:
    """Per collection, per-query held-out metrics of LambdaMART models trained on train data only;
    and the model trained on all the train data."""
    base = [(benches[c].train, lambda q: True) for c in ("scifact", "dendron-vault") if c in benches]
    out: dict[str, dict[str, np.ndarray]] = {}
    model = ltr.train(base)
    for coll, b in benches.items():
        if not b.cv:
            out[coll] = measure(b.test, wrap(ltr.scorer(model)))
            continue
        folds = b.folds()
        vals = None
        for f in range(data.CV_FOLDS):
            m = ltr.train(base + [(b.test, lambda q, f=f: data.fold_of(q) != f)])
            res = measure(data.subset(b.test, lambda q, f=f: data.fold_of(q) == f), wrap(ltr.scorer(m)))
            if vals is None:
                vals = {k: np.zeros(len(folds)) for k in res}
            for k in res:
                vals[k][folds == f] = res[k]
        if vals is None:
            raise ValueError(f"{coll}: no cross-validation folds (data.CV_FOLDS = {data.CV_FOLDS})")
        out[coll] = vals
    return out, model


def run(collections=COLLECTIONS, budget: str = "seeds") -> dict:
    benches = load_benches(collections)
    wrap = BUDGETS[budget]
    md, results = [f"# Query-adaptive fusion vs fixed weights (held-out; candidate budget: {budget}, the same for every row)", ""], {}
    t = time.perf_counter()
    ltr_vals, model = ltr_heldout(benches, wrap)
    print(f"ltr trained: {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    imp = dict(zip(ltr.FEATURES, model.booster_.feature_importance("gain").round(1).tolist()))
    for coll, b in benches.items():
        held, chosen = {}, {}
        for family, grid in grids(wrap).items():
            test_res = measure_grid(b.test, grid)
            train_res = measure_grid(b.train, grid) if b.train else None
            h = select(b, train_res, test_res)
            held[family], chosen[family] = h.values, ", ".join(sorted(set(h.chosen)))
        held["ltr"] = {k: ltr_vals[coll][k] for k in held["hybrid"]}
        chosen["ltr"] = "LambdaMART"
        md += [f"## {coll}", "", "vs the equal-budget hybrid:", "", markdown(held, "hybrid", "nDCG@10", chosen), "",
               "vs fixed weights:", "", markdown({k: v for k, v in held.items() if k != "hybrid"}, "fixed", "nDCG@10", chosen), ""]
        results[coll] = {"chosen": chosen, "means": {f: float(v["nDCG@10"].mean()) for f, v in held.items()},
                         "per_query": {f: {m: v.tolist() for m, v in vals.items()} for f, vals in held.items()}}
        print(f"{coll} done", file=sys.stderr, flush=True)
    md += ["LambdaMART feature importance (gain, model trained on scifact train + dendron-vault train):", "",
           "| feature | gain |", "|---|---:|", *[f"| {k} | {v} |" for k, v in sorted(imp.items(), key=lambda kv: -kv[1])], ""]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"fusion-study-{budget}.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (OUT / f"fusion-study-{budget}.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    return results


if __name__ == "__main__":
    # python -m lab.studies.fusion_study seeds|pass [collections...]
    run(tuple(sys.argv[2:]) or COLLECTIONS, sys.argv[1])
