"""File-role priors on swe-loc, chosen on the TRAIN repositories only (issue 43 item 5).

Reads `ragx eval snapshots --json` documents (one or several, e.g. one per repository run in parallel)
and re-ranks each instance's `default` files offline: every file's score times the weight of its role
(ragx/ingest/file_roles.py) where source code is among its files, exactly what [search] prior_test /
prior_example / prior_doc do to a file's best chunk (file_chunks = 1), over the top 100 files the
document keeps. One weight w for tests, examples and docs alike (13 train instances do not support
three), on a grid fixed beforehand; the choice maximises pooled TRAIN Acc@5, ties to the larger MRR,
then to the weight nearest 1 (the smallest change). Each w is shown with its paired test against w = 1
(ragx/eval/stats.py), pooled and with each train repository left out. Test instances are never read.

The grid re-weights the rankings of the configuration without priors (`default-noprior`: the default
with prior_test = prior_example = prior_doc = 1) when the document has it, so a weight is never applied
twice; documents from before it re-weight `default`. `configs` sets every variant of the run against the
default on the TRAIN instances (paired randomization test, Benjamini-Hochberg across the variants per
metric): the candidate budget (`hybrid`: the graph preset's budget, `default-wide`: 200 + 200 seeds),
file aggregation (`default-fc2`, `default-fc3`) and the priors (`default-noprior`).

    PYTHONPATH=. python research/2026-12-05-swe-loc-priors.py pool A.json [B.json ...]     pooled tables
    PYTHONPATH=. python research/2026-12-05-swe-loc-priors.py priors A.json [B.json ...]   the grid on train
    PYTHONPATH=. python research/2026-12-05-swe-loc-priors.py configs A.json [B.json ...]  variants vs default, train
"""

from __future__ import annotations

import json
import statistics
import sys

import numpy as np

from ragx.eval.metrics import CODE_HEADLINE, evaluate
from ragx.eval.snapshot_run import pool
from ragx.eval.snapshots import load_instances
from ragx.eval.stats import correct, paired
from ragx.ingest.file_roles import OTHER, SOURCE, role_of

GRID = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)
CONFIG = "default"
NO_PRIOR = "default-noprior"   # the default with every role weight at 1: the grid's base when present


def repositories(paths: list[str]) -> tuple[list[dict], dict[str, tuple[str, ...]]]:
    """The documents' repositories, and each TRAIN instance's gold files (from the data folder they name)."""
    docs = [json.loads(open(path, encoding="utf-8").read()) for path in paths]
    gold = {i.id: i.gold for d in docs for instances in load_instances(d["data"], "train").values() for i in instances}
    return [repo for d in docs for repo in d["repositories"]], gold


def reweighted(top: dict[str, float], w: float) -> dict[str, float]:
    roles = {path: role_of(path) for path in top}
    if w == 1.0 or SOURCE not in roles.values():
        return dict(top)
    scaled = {path: score * (1.0 if roles[path] in (SOURCE, OTHER) else w) for path, score in top.items()}
    return dict(sorted(scaled.items(), key=lambda kv: -kv[1]))


def per_instance(repos: list[dict], gold: dict[str, tuple[str, ...]], w: float) -> dict[str, dict[str, float]]:
    """instance -> code metrics of the no-prior default re-weighted by w (train instances only)."""
    out = {}
    for repo in repos:
        base = NO_PRIOR if NO_PRIOR in repo["top_files"] else CONFIG
        for qid, top in repo["top_files"][base].items():
            if qid not in gold:  # a test instance: never read
                continue
            out[qid] = evaluate({qid: {p: 1 for p in gold[qid]}}, {qid: reweighted(top, w)}, "code")[1][qid]
    return out


def table(repos: list[dict], gold: dict[str, tuple[str, ...]]) -> None:
    base = per_instance(repos, gold, 1.0)
    qids = sorted(base)
    repo_of = {q: r["dataset"] for r in repos for q in r["files"]["per_query"][CONFIG]}
    print(f"{'w':>4} " + " ".join(f"{m:>16}" for m in CODE_HEADLINE) + "   Acc@5 leaving out: " + ", ".join(sorted({repo_of[q] for q in qids})))
    for w in GRID:
        runs = per_instance(repos, gold, w)
        cells = []
        for m in CODE_HEADLINE:
            x, y = np.array([runs[q][m] for q in qids]), np.array([base[q][m] for q in qids])
            c = paired(x, y)
            cells.append(f"{x.mean():.3f} ({c.diff:+.3f} p{c.p:.2f})")
        held = [statistics.fmean([runs[q]["Acc@5"] for q in qids if repo_of[q] != r] or [float("nan")])
                for r in sorted({repo_of[q] for q in qids})]
        print(f"{w:>4} " + " ".join(f"{c:>16}" for c in cells) + "   " + ", ".join(f"{h:.3f}" for h in held))


def variants(repos: list[dict], gold: dict[str, tuple[str, ...]]) -> None:
    """Every configuration of the run against the default, on the train instances only."""
    rows = {cfg: {q: m for r in repos for q, m in r["files"]["per_query"][cfg].items() if q in gold}
            for cfg in repos[0]["files"]["per_query"]}
    qids = sorted(rows[CONFIG])
    others = [c for c in rows if c != CONFIG]
    found: dict[str, dict] = {c: {} for c in others}
    for m in CODE_HEADLINE:
        ref = np.array([rows[CONFIG][q][m] for q in qids])
        for c in others:
            found[c][m] = paired(np.array([rows[c][q][m] for q in qids]), ref)
        correct([found[c][m] for c in others])
    print(f"train, {len(qids)} instances; each cell: mean (config - default, p, BH p)")
    print(f"{'default':>16} " + " ".join(f"{np.mean([rows[CONFIG][q][m] for q in qids]):>30.3f}" for m in CODE_HEADLINE))
    for c in others:
        cells = [f"{np.mean([rows[c][q][m] for q in qids]):.3f} ({x.diff:+.3f} p{x.p:.3f} BH{x.p_adjusted:.2f})"
                 for m, x in found[c].items()]
        print(f"{c:>16} " + " ".join(f"{cell:>30}" for cell in cells))


def main(argv: list[str]) -> None:
    what, paths = argv[0], argv[1:]
    repos, gold = repositories(paths)
    if what == "pool":
        for split in ("train", "test"):
            members = [r for r in repos if r["split"] == split]
            if members:
                d = pool(f"pooled {split}", split, members, None)
                print(split, {cfg: {m: round(v, 4) for m, v in means.items()} for cfg, means in d["files"]["means"].items()})
    elif what == "priors":
        table(repos, gold)
    elif what == "configs":
        variants(repos, gold)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
