"""Query features and file-role priors on swe-loc TRAIN, measured on a lexical proxy (issue 43 items 4, 5).

Why a proxy: on 2026-12-05 the machine ran at load 30-35 on 2 cores and embedding the train trees for
`ragx eval snapshots` ran at 0.5-1 text/s (hours). This script needs no embedding: the field's
reference BM25 (bm25s, Lucene, English stop words and stems, one document per file: `bm25-ref`,
ragx/eval/reference.py) ranks every file ragx would index in each instance's tree, and two changes are
measured on it, each against the plain ranking with the paired test of ragx/eval/stats.py:

    features   the BM25 query is `query_features.lexical_text(issue)` instead of the issue's words;
    prior w    a file's score times w when it is a test, example or doc (ingest/file_roles.py) and
               source code is among the matches: the rule of [search] prior_* (scoring/score.py).

The choice reads TRAIN instances only (requests, flask, seaborn); the prior's weight grid is fixed
beforehand: 1.0, 0.9, ..., 0.1. `test` then runs the choice (w = CHOSEN, features off, as shipped in
ragx/defaults.toml) once on pytest, nothing else.

    PYTHONPATH=. python research/2026-12-05-swe-loc-lexical-proxy.py ../shared/data/swe-loc /tmp/swe-trees [train|test]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ragx.eval.metrics import CODE_HEADLINE, evaluate
from ragx.eval.presets import ReferenceBM25
from ragx.eval.reference import ReferenceIndex
from ragx.eval.snapshot_run import folder_for
from ragx.eval.snapshots import Checkout, bundle_path, load_instances
from ragx.eval.stats import paired
from ragx.ingest.discover import discover
from ragx.ingest.file_roles import OTHER, SOURCE, role_of
from ragx.search.query_features import lexical_text

GRID = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)
CHOSEN = 0.6  # on train (the docstring's rule); the weight ragx/defaults.toml ships
DEPTH = 100


def weighted(run: dict[str, float], w: float) -> dict[str, float]:
    roles = {p: role_of(p) for p in run}
    if w == 1.0 or SOURCE not in roles.values():
        return run
    out = {p: s * (1.0 if roles[p] in (SOURCE, OTHER) else w) for p, s in run.items()}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def rankings(data: Path, work: Path, split: str) -> list[tuple[str, str, tuple[str, ...], dict[str, float], dict[str, float]]]:
    """Per instance of `split`: (id, repo, gold, bm25s over the issue's words, bm25s over lexical_text)."""
    out = []
    for repo, instances in load_instances(data, split).items():
        checkout = Checkout(bundle_path(data, repo), folder_for(work, repo))
        for inst in instances:
            checkout.move_to(inst.tag)
            paths = [f.path for f in discover(checkout.folder).files]
            index = ReferenceIndex(checkout.folder, paths)
            (plain, _), (feat, _) = index.rank([inst.query, lexical_text(inst.query)], ReferenceBM25(), DEPTH)
            out.append((inst.id, repo, inst.gold, plain, feat))
    return out


def metrics(rows, pick) -> dict[str, dict[str, float]]:
    return {qid: evaluate({qid: {g: 1 for g in gold}}, {qid: pick(plain, feat)}, "code")[1][qid]
            for qid, _, gold, plain, feat in rows}


def show(name: str, runs: dict[str, dict[str, float]], base: dict[str, dict[str, float]]) -> None:
    qids = sorted(base)
    cells = []
    for m in CODE_HEADLINE:
        x, y = np.array([runs[q][m] for q in qids]), np.array([base[q][m] for q in qids])
        c = paired(x, y)
        cells.append(f"{m} {x.mean():.3f} ({c.diff:+.3f}, p {c.p:.3f}, W/T/L {c.wins}/{c.ties}/{c.losses})")
    print(f"{name:>16}: " + "; ".join(cells))


def main(data: str, work: str, split: str = "train") -> None:
    rows = rankings(Path(data), Path(work), split)
    base = metrics(rows, lambda plain, feat: plain)
    show("bm25s", base, base)
    if split == "test":
        show(f"prior {CHOSEN}", metrics(rows, lambda plain, feat: weighted(plain, CHOSEN)), base)
        return
    show("bm25s+features", metrics(rows, lambda plain, feat: feat), base)
    for w in GRID[1:]:
        show(f"prior {w}", metrics(rows, lambda plain, feat, w=w: weighted(plain, w)), base)
        show(f"features+prior {w}", metrics(rows, lambda plain, feat, w=w: weighted(feat, w)), base)


if __name__ == "__main__":
    main(*sys.argv[1:4])
