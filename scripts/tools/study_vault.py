#!/usr/bin/env python
"""Paired comparisons of ragx configurations on one BEIR collection, per query type.

Runs `Corpus.evaluate` (one retrieval pass per query, every configuration scored from it: equal
candidate budgets by construction when the configurations share dense_n / lexical_n / hops) and
compares each configuration with a reference per query: mean difference, win/tie/loss, a paired
sign-flip permutation test (scipy.stats.permutation_test) and Wilcoxon's signed-rank test, with a
Benjamini-Hochberg correction across the configurations (scipy.stats.false_discovery_control).
Query types come from the collection's queries.jsonl `metadata.type` (dendron-vault has them).

    .venv/bin/python scripts/tools/study_vault.py ../shared/data/dendron-vault --split train \\
        -c ref=hybrid,dense_n=50,lexical_n=50 -c link=hybrid,dense_n=50,lexical_n=50,link_weight=0.2
    --baseline FILE.json   compare with another run's per-query figures (e.g. before a change)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragx.api import Corpus  # noqa: E402
from ragx.eval.beir import cache_dir_for, materialise, read_jsonl  # noqa: E402


def paired(a: np.ndarray, b: np.ndarray) -> dict:
    """b - a per query: mean, W/T/L, permutation and Wilcoxon p-values (two-sided)."""
    from scipy import stats

    d = b - a
    out = {"n": len(d), "mean_a": float(a.mean()), "mean_b": float(b.mean()), "diff": float(d.mean()),
           "win": int((d > 1e-12).sum()), "tie": int((np.abs(d) <= 1e-12).sum()), "loss": int((d < -1e-12).sum())}
    if out["win"] + out["loss"] == 0:
        return out | {"p_perm": 1.0, "p_wilcoxon": 1.0}
    perm = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=20000, random_state=0)
    out["p_perm"] = float(perm.pvalue)
    out["p_wilcoxon"] = float(stats.wilcoxon(d, zero_method="zsplit").pvalue)
    return out


def per_query(doc: dict, config: str, metric: str) -> dict[str, float]:
    return {q: m[metric] for q, m in doc["files"]["per_query"][config].items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir", type=Path)
    ap.add_argument("--split", default="train")
    ap.add_argument("-c", "--config", action="append", required=True, help="name=preset,key=value (first = reference)")
    ap.add_argument("--metric", default="nDCG@10")
    ap.add_argument("--baseline", type=Path, help="a saved run (this script's --save) to compare with, config by config")
    ap.add_argument("--save", type=Path, help="write this run's eval document here")
    ap.add_argument("--load", type=Path, help="compare a saved run instead of evaluating now (configs: names only)")
    ap.add_argument("--pair", action="append", default=[], help="THIS:REF -- with --baseline: compare config THIS "
                    "of this run with config REF of the baseline (default: same names)")
    args = ap.parse_args()
    if args.split == "test":
        print("note: test split -- report only, never tune on it", file=sys.stderr)

    if args.load:
        doc = json.loads(args.load.read_text())
        doc["configs"] = [c for c in doc["configs"] if c["name"] in {s.split("=")[0] for s in args.config}]
    else:
        made = materialise(args.data_dir, cache_dir_for(args.data_dir), [args.split])
        corpus = Corpus.open(made.corpus_dir)
        corpus.index()
        doc = corpus.evaluate(made.queries[args.split], args.config)
    if args.save:
        args.save.write_text(json.dumps(doc), encoding="utf-8")
    types = {str(q["_id"]): (q.get("metadata") or {}).get("type", "all") for q in read_jsonl(args.data_dir / "queries.jsonl")}
    names = [c["name"] for c in doc["configs"]]
    ref_doc = json.loads(args.baseline.read_text()) if args.baseline else doc
    rows = []
    pairs = dict(p.split(":", 1) for p in args.pair)
    for name in (names if args.baseline else names[1:]):
        ref_name = pairs.get(name, name) if args.baseline else names[0]
        a_map, b_map = per_query(ref_doc, ref_name, args.metric), per_query(doc, name, args.metric)
        groups: dict[str, list[str]] = defaultdict(list)
        for q in sorted(set(a_map) & set(b_map)):
            groups["all"].append(q)
            groups[types.get(q, "all")].append(q) if types.get(q, "all") != "all" else None
        for group, qs in groups.items():
            r = paired(np.array([a_map[q] for q in qs]), np.array([b_map[q] for q in qs]))
            rows.append({"config": name, "reference": ("baseline:" if args.baseline else "") + ref_name, "group": group, **r})
    _adjust(rows)
    print(f"{args.data_dir.name} {args.split} {args.metric}; candidates per config are equal when caps are equal")
    print(f"{'config':<14} {'vs':<16} {'group':<11} {'n':>3} {'ref':>7} {'this':>7} {'diff':>8} {'W/T/L':>9} {'p_perm':>8} {'p_wilc':>8} {'q_BH':>7}")
    for r in rows:
        wtl = f"{r['win']}/{r['tie']}/{r['loss']}"
        print(f"{r['config']:<14} {r['reference']:<16} {r['group']:<11} {r['n']:>3} {r['mean_a']:>7.4f} {r['mean_b']:>7.4f} "
              f"{r['diff']:>+8.4f} {wtl:>9} {r['p_perm']:>8.4f} {r['p_wilcoxon']:>8.4f} {r['q_bh']:>7.4f}")


def _adjust(rows: list[dict]) -> None:
    """Benjamini-Hochberg over the configurations, separately within each query group."""
    from scipy.stats import false_discovery_control

    by_group: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_group[r["group"]].append(r)
    for group_rows in by_group.values():
        q = false_discovery_control([r["p_perm"] for r in group_rows])
        for r, v in zip(group_rows, np.atleast_1d(q)):
            r["q_bh"] = float(v)


if __name__ == "__main__":
    main()
