"""Item 1 of issue 13: one tuning objective over several training sets at once, with a worst-case guard.

Training sets: scifact train, dendron-vault train, and the queries of cranfield and musique-small
(test-only collections) under 5-fold cross-validation. Configurations of ragx's own [search]
parameters are drawn by Optuna's QMC sampler, which does not look at objective values, so one
evaluation of each configuration on every query serves every fold without leakage:

    objective(set of training data) = mean_s nDCG@10_s  -  lam * max_s max(0, ref_s - nDCG@10_s)

where ref_s is the equal-budget hybrid of that training set (RRF of dense + BM25 over the pass's nodes).
Each configuration is re-scored with ragx's own scoring (lab.rescore.file_run), exactly as `ragx eval`.

Reported: per collection, the held-out figure (scifact / dendron-vault test with the configuration
chosen on the training sets; cranfield / musique-small: nested CV, each fold's queries scored by the
configuration chosen without them) and the train/test gap.

    python -m lab.multitune N_CONFIGS SPLIT...   -> $RAGX_CACHE_DIR/lab/multitune/<split>-<N>.npy
    python -m lab.multitune report N_CONFIGS      -> reports/research/multitune.json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from ragx.scoring.params import Params

from .rescore import file_run
from .studies import data
from .studies.evaluate import per_query

SPACE = {  # name -> (kind, low, high); the weights are drawn as shares (only their ratios rank)
    "dense_n": ("int", 10, 100), "lexical_n": ("int", 10, 100), "rrf_k": ("float", 5.0, 100.0), "hops": ("int", 0, 2),
    "decay": ("float", 0.2, 1.0), "query_floor": ("float", 0.2, 0.6), "max_frontier": ("int", 20, 300),
    "lexical_share": ("float", 0.1, 0.8), "beta": ("float", 0.0, 0.5), "file_chunks": ("int", 1, 2),
}
PARAMS = ("dense_n", "lexical_n", "rrf_k", "hops", "decay", "query_floor", "max_frontier", "heat_weight", "dense_weight", "lexical_weight", "file_chunks")
BASE = Params(top=10, dense_n=20, lexical_n=20, rrf_k=30.63342230920435, hops=1, decay=0.5, query_floor=0.20569530695000607,
              max_frontier=150, rerank_weight=0.0, heat_weight=0.0077599600471927824, dense_weight=0.4976581150386485, lexical_weight=0.36041733346022464,
              shortlist=100, file_chunks=1, link_weight=0.0, min_dense_evidence=0.0, min_lexical_evidence=0.0, min_lexical_share=0.0, bm25_k1=1.2, bm25_b=0.75, bm25_variant="fts5", query_features="off", anchor_dense=0.0, anchor_lexical=0.0, prior_test=1.0, prior_example=1.0, prior_doc=1.0)  # today's promoted defaults without the reranker
FIXED = {  # reference configurations, evaluated like every draw (indices 0..3)
    "defaults": BASE,
    "hybrid100": BASE.replace(dense_n=100, lexical_n=100, hops=0),
    "dense100": BASE.replace(dense_n=100, lexical_n=0, hops=0, heat_weight=0.0, dense_weight=1.0, lexical_weight=0.0),
    "bm25_100": BASE.replace(dense_n=0, lexical_n=100, hops=0, heat_weight=0.0, dense_weight=0.0, lexical_weight=1.0),
}
TRAIN = ("scifact-train", "dendron-vault-train", "cranfield-test", "musique-small-test")
TEST = ("scifact-test", "dendron-vault-test")
LAM = 1.0
OUT = Path(__file__).resolve().parent.parent / "reports" / "research"


def store() -> Path:
    return data.cache_root().parent / "multitune"


def configs(n: int) -> list[Params]:
    """The first config is today's defaults, the second the 100-seed hybrid preset; then QMC draws."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.QMCSampler(seed=0, scramble=True))
    out = list(FIXED.values())
    for _ in range(n):
        t = study.ask()
        ch = {k: (t.suggest_int(k, int(lo), int(hi)) if kind == "int" else t.suggest_float(k, lo, hi)) for k, (kind, lo, hi) in SPACE.items()}
        study.tell(t, 0.0)
        share = ch.pop("lexical_share")
        ch["heat_weight"] = ch.pop("beta")  # drawn under its old name, so the study's draws stay reproducible
        out.append(BASE.replace(**ch, dense_weight=1.0 - share, lexical_weight=share))
    return out


def load_splits(names=None) -> dict[str, data.Split]:
    all_names = [f"{c}-{s}" for c in data.SPLITS for s in data.SPLITS[c]]
    return {n: data.load(*n.rsplit("-", 1)) for n in (names or all_names)}


def evaluate_configs(n: int, names: list[str]) -> None:
    """nDCG@10 per query of every configuration on each named split -> multitune/<split>.npy."""
    cfgs = configs(n)
    store().mkdir(parents=True, exist_ok=True)
    for name, s in load_splits(names).items():
        t = time.perf_counter()
        vals = np.zeros((len(cfgs), len(s.qids)))
        for i, p in enumerate(cfgs):
            vals[i] = per_query(s.qrels, file_run(s.passes, p, s.paths), s.qids)["nDCG@10"]
        np.save(store() / f"{name}-{n}.npy", vals)
        print(f"{name}: {len(cfgs)} configs, {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)


def load_values(n: int) -> tuple[list[Params], dict[str, np.ndarray], np.ndarray]:
    cfgs = configs(n)
    vals = {f.name.removesuffix(f"-{n}.npy"): np.load(f) for f in store().glob(f"*-{n}.npy")}
    return cfgs, vals, np.ones(len(cfgs), bool)


GUARD = "hybrid100"   # the worst-case guard's reference: "rrf" (RRF over the pass's nodes) or "hybrid100"


def references(splits: dict[str, data.Split], vals=None) -> dict[str, np.ndarray]:
    """Per split, per query nDCG@10 of the guard's reference: ragx's hybrid at 100 seeds per leg (config #1),
    or RRF of dense + BM25 over the pass's nodes."""
    from .studies import signals
    from .studies.evaluate import measure

    if GUARD == "hybrid100" and vals is not None:
        return {name: vals[name][1] for name in splits}
    return {name: measure(s, lambda c: signals.rrf(c, 60.0))["nDCG@10"] for name, s in splits.items()}


def rrf_references(splits: dict[str, data.Split]) -> dict[str, np.ndarray]:
    from .studies import signals
    from .studies.evaluate import measure

    return {name: measure(s, lambda c: signals.rrf(c, 60.0))["nDCG@10"] for name, s in splits.items()}


def objective(vals, refs, parts, idx: np.ndarray) -> np.ndarray:
    """Objective of every configuration in idx over the (split, query mask) parts."""
    means = np.stack([vals[s][idx][:, m].mean(axis=1) for s, m in parts])      # parts x configs
    ref = np.array([refs[s][m].mean() for s, m in parts])[:, None]
    worst = np.maximum(0.0, (ref - means).max(axis=0))
    return means.mean(axis=0) - LAM * worst


def choose(vals, refs, splits, idx, hold_fold: int | None) -> int:
    parts = []
    for name in TRAIN:
        qids = splits[name].qids
        mask = np.ones(len(qids), bool) if name.endswith("train") or hold_fold is None else \
            np.array([data.fold_of(q) != hold_fold for q in qids])
        parts.append((name, mask))
    obj = objective(vals, refs, parts, idx)
    return int(idx[int(np.argmax(obj))])


def report(n: int, guard: str = GUARD, lam: float = LAM) -> dict:
    global GUARD, LAM
    GUARD, LAM = guard, lam
    from .studies.stats import holm, paired

    splits = load_splits()
    cfgs, vals, done = load_values(n)
    idx = np.flatnonzero(done)
    refs = references(splits, vals)
    rrf_refs = rrf_references(splits)
    rec = choose(vals, refs, splits, idx, None)
    fold_choice = {f: choose(vals, refs, splits, idx, f) for f in range(data.CV_FOLDS)}
    coll_test = {"scifact": "scifact-test", "dendron-vault": "dendron-vault-test", "cranfield": "cranfield-test",
                 "musique-small": "musique-small-test"}
    coll_train = {"scifact": "scifact-train", "dendron-vault": "dendron-vault-train"}
    rows = {}
    for coll, name in coll_test.items():
        s = splits[name]
        if coll in coll_train:
            tuned, train_val = vals[name][rec], float(vals[coll_train[coll]][rec].mean())
            chosen = f"#{rec}"
        else:  # nested CV: each fold's queries by the configuration chosen without them
            folds = np.array([data.fold_of(q) for q in s.qids])
            tuned = np.zeros(len(s.qids))
            train_means = []
            for f, i in fold_choice.items():
                tuned[folds == f] = vals[name][i][folds == f]
                train_means.append(vals[name][i][folds != f].mean())
            train_val = float(np.mean(train_means))
            chosen = "/".join(f"#{fold_choice[f]}" for f in range(data.CV_FOLDS))
        refs_here = {"hybrid (RRF, pass nodes)": rrf_refs[name], **{k: vals[name][i] for i, k in enumerate(FIXED)}}
        comps = {k: paired(tuned, v) for k, v in refs_here.items()}
        holm(list(comps.values()))
        best_leg = max(("dense100", "bm25_100"), key=lambda k: refs_here[k].mean())
        rows[coll] = {"tuned": float(tuned.mean()), "chosen": chosen, "train": train_val, "gap": train_val - float(tuned.mean()),
                      "recommended_in_sample": float(vals[name][rec].mean()),
                      "refs": {k: {"mean": float(v.mean()), "delta": c.delta, "ci": [c.ci_low, c.ci_high], "p_holm": c.p_holm,
                                   "wtl": [c.wins, c.ties, c.losses]} for (k, v), c in zip(refs_here.items(), comps.values())},
                      "best_leg": best_leg}
        if coll == "dendron-vault":
            types = np.array([s.query_types.get(q, "?") for q in s.qids])
            rows[coll]["by_type"] = {t: {"tuned": float(tuned[types == t].mean()), "hybrid100": float(vals[name][1][types == t].mean()),
                                         "defaults": float(vals[name][0][types == t].mean()), "n": int((types == t).sum())}
                                     for t in sorted(set(types))}
    rp = cfgs[rec]
    result = {"configs_evaluated": int(len(idx)), "lambda": LAM, "guard": GUARD, "recommended_index": rec,
              "recommended": {k: getattr(rp, k) for k in PARAMS}, "fold_choice": fold_choice, "rows": rows}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"multitune-{GUARD}-lam{LAM:g}.json").write_text(json.dumps(result, indent=1, default=float), encoding="utf-8")
    (OUT / f"multitune-{GUARD}-lam{LAM:g}.md").write_text(markdown(result), encoding="utf-8")
    return result


def _cell(r: dict) -> str:
    mark = ("▲" if r["delta"] > 0 else "▼") if r["p_holm"] < 0.05 else ""
    return f"{r['mean']:.4f} ({r['delta']:+.4f}{mark}, p {r['p_holm']:.2g}, {'/'.join(map(str, r['wtl']))})"


def markdown(result: dict) -> str:
    refs = list(next(iter(result["rows"].values()))["refs"])
    lines = [f"# Multi-collection tuning: {result['configs_evaluated']} configurations (QMC), guard vs {result['guard']}, lambda = {result['lambda']}", "",
             "Held-out nDCG@10 of the tuned configuration; each reference cell: its mean (tuned − reference, Holm p, W/T/L).", "",
             "| set | tuned | chosen | train | gap | " + " | ".join(refs) + " |", "|---|---:|---|---:|---:|" + "---:|" * len(refs)]
    for coll, row in result["rows"].items():
        lines.append(f"| {coll} | {row['tuned']:.4f} | {row['chosen']} | {row['train']:.4f} | {row['gap']:+.4f} | "
                     + " | ".join(_cell(row["refs"][k]) for k in refs) + " |")
    means = {k: np.mean([row["refs"][k]["mean"] for row in result["rows"].values()]) for k in refs}
    lines.append(f"| **mean of 4** | {np.mean([r['tuned'] for r in result['rows'].values()]):.4f} | | | | "
                 + " | ".join(f"{v:.4f}" for v in means.values()) + " |")
    lines += ["", f"Recommended (chosen with every training query; in-sample on cranfield/musique-small): "
              f"`{json.dumps(result['recommended'], default=float)}`", ""]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1] == "report":
        r = report(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else GUARD, float(sys.argv[4]) if len(sys.argv) > 4 else LAM)
        print(json.dumps({k: v for k, v in r.items() if k != "rows"}, indent=1, default=float))
        for coll, row in r["rows"].items():
            print(coll, json.dumps({k: v for k, v in row.items() if k != "refs"}, default=float))
            for k, v in row["refs"].items():
                print(f"   vs {k}: {v['mean']:.4f} delta {v['delta']:+.4f} p_holm {v['p_holm']:.3g} wtl {v['wtl']}")
    else:
        evaluate_configs(int(sys.argv[1]), sys.argv[2:])
