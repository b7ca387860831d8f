"""Leg agreement in the "nothing relevant" rule (issue 13, item 5).

Today's rule (ragx/search/evidence.py) passes a query when its best chunk cosine OR its best BM25 per
query term reaches a threshold: the rejection region is a rectangle. A question worded unlike its
answer can fall short on both signals and still be answered: the two legs, searching independently,
then often land on the same file. A query about another collection gets two unrelated weak lists, whose
tops rarely share a file. The variants add that agreement as evidence:

* `or`        -- today's rule: dense >= d or lexical >= l;
* `agree`     -- today's rule, or (the dense leg's best chunk and the lexical leg's best chunk are in
                 the same file and dense >= d2);
* `overlap`   -- today's rule, or (at least 2 of the 5 best files of the dense leg are among the 5
                 best files of the lexical leg and dense >= d2);
* `balanced`  -- today's rule under the other side of the goal: the thresholds that lose the fewest
                 real train queries (worst collection first, then pooled) while every foreign train
                 pair stays at least 85% empty (5 points over the 80% target), instead of the most
                 foreign rejection at a real loss of at most 0.5%.

Each is calibrated by the same procedure on TRAIN (as scripts/bench/bench_no_match.py --calibrate: scifact
and dendron-vault train queries, real against their own corpus, foreign against the other three
corpora; the thresholds that reject the most foreign queries while real ones lose at most 0.5%); the
test splits are then run once with each rule's train thresholds.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-leg-agreement.py train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-leg-agreement.py test   # once, after train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-leg-agreement.py kfold  # after both

`kfold` repeats the `balanced` calibration with Cranfield's and MuSiQue-small's queries (no train
split) in it, 2-fold: thresholds chosen on train plus one half of their queries, those two collections
reported on the other half (SciFact and dendron-vault on test), for a foreign floor of 85% and 90%.

Evidence tables are cached in $RAGX_CACHE_DIR/research-prf/leg-agreement-<split>.npz; the train
thresholds in leg-agreement-thresholds.json beside them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import bench_no_match as bench  # noqa: E402

from lab.studies import harness  # noqa: E402
from ragx.scoring.candidates import Candidates  # noqa: E402
from ragx.search.evidence import signals  # noqa: E402

OUT = harness.OUT
THRESHOLDS = OUT / "leg-agreement-thresholds.json"
RULES = ("or", "agree", "overlap", "balanced")
MAX_LOSS = 0.005
FOREIGN_FLOOR = 0.85  # `balanced`: every foreign train pair at least this empty (the target is 80%)


def _top_files(c: Candidates, ids: np.ndarray, k: int) -> list[int]:
    """The first k distinct files of a leg's ranked chunk ids."""
    pos = np.searchsorted(c.nodes, ids)
    files = c.file_ids[pos]
    _, first = np.unique(files, return_index=True)
    return files[np.sort(first)][:k].tolist()


def features(c: Candidates) -> tuple[float, float, float, float]:
    dense, lexical, _ = signals(c)  # the share came later (2026-12-04-contrast-evidence)
    d_ids, l_ids = c.dense_ids[0], c.lexical_ids
    if not len(d_ids) or not len(l_ids):
        return dense, lexical, 0.0, 0.0
    d5, l5 = _top_files(c, d_ids, 5), _top_files(c, l_ids, 5)
    return dense, lexical, float(d5[0] == l5[0]), float(len(set(d5) & set(l5)))


def tables(split: str, data: Path) -> dict[tuple[str, str], np.ndarray]:
    return bench.cached_tables(split, data, OUT / f"leg-agreement-{split}.npz", lambda c, corpus, q, vector: features(c))


def passes(rule: str, a: np.ndarray, t: tuple[float, float, float]) -> np.ndarray:
    d, lex, d2 = t
    base = (a[:, 0] >= d) | (a[:, 1] >= lex)
    if rule in ("or", "balanced"):
        return base
    extra = a[:, 2] > 0 if rule == "agree" else a[:, 3] >= 2
    return base | (extra & (a[:, 0] >= d2))


def calibrate_balanced(table: dict[tuple[str, str], np.ndarray], floor_share: float = FOREIGN_FLOOR) -> tuple[float, float, float]:
    real = {k: a for k, a in table.items() if k[0] == k[1]}
    foreign = [a for k, a in table.items() if k[0] != k[1]]
    pooled = np.vstack(list(real.values()))
    ds = np.unique(np.round(np.quantile(pooled[:, 0], np.linspace(0, 0.3, 121)), 4))
    ls = np.unique(np.round(np.quantile(pooled[:, 1], np.linspace(0, 0.6, 121)), 4))
    best: tuple | None = None
    for d in ds:
        for lex in ls:
            t = (float(d), float(lex), float("inf"))
            floor = min(float(np.mean(~passes("or", a, t))) for a in foreign)
            if floor < floor_share:
                continue
            worst = max(float(np.mean(~passes("or", a, t))) for a in real.values())
            key = (worst, float(np.mean(~passes("or", pooled, t))), -floor)
            if best is None or key < best[0]:
                best = (key, t)
    assert best is not None, "no thresholds keep every foreign pair at the floor"
    return best[1]


def calibrate(table: dict[tuple[str, str], np.ndarray], rule: str) -> tuple[float, float, float]:
    if rule == "balanced":
        return calibrate_balanced(table)
    real = np.vstack([a for (q, c), a in table.items() if q == c])
    foreign = np.vstack([a for (q, c), a in table.items() if q != c])
    ds = np.unique(np.round(np.quantile(real[:, 0], np.linspace(0, 0.3, 61)), 4))
    ls = np.unique(np.round(np.quantile(real[:, 1], np.linspace(0, 0.6, 61)), 4))
    d2s = ds if rule != "or" else np.array([np.inf])
    best = (-1.0, (0.0, 0.0, 0.0))
    for d in ds:
        for lex in ls:
            for d2 in d2s[d2s <= d] if rule != "or" else d2s:
                t = (float(d), float(lex), float(d2))
                if np.mean(~passes(rule, real, t)) <= MAX_LOSS:
                    rejected = float(np.mean(~passes(rule, foreign, t)))
                    if rejected > best[0]:
                        best = (rejected, t)
    return best[1]


def report(table: dict[tuple[str, str], np.ndarray], rule: str, t: tuple[float, float, float],
           keeps=None, names: str = "dense, lexical, dense with agreement") -> None:
    """Each pair's share of emptied queries under `keeps(rule, table, t)` (default: this study's
    `passes`), and the worst real loss and the foreign rates."""
    keeps = keeps or passes
    print(f"thresholds ({names}): {t}")
    print(f"{'queries':<15} {'corpus':<15} {'n':>5} {'empty':>7}  kind")
    real, foreign = [], []
    for (q, c), a in sorted(table.items()):
        share = float(np.mean(~keeps(rule, a, t)))
        (real if q == c else foreign).append(share)
        kind = "REAL (lost, target <= 1%)" if q == c else "FOREIGN (empty, target >= 80%)"
        print(f"{q:<15} {c:<15} {len(a):>5} {share:>7.1%}  {kind}")
    line = f"worst real loss {max(real):.1%}"
    if foreign:
        line += f"; foreign empty: min {min(foreign):.1%}, mean {np.mean(foreign):.1%}"
    print(line)


NO_TRAIN = ("cranfield", "musique-small")


def folds(train: dict, test: dict, fold: int) -> tuple[dict, dict]:
    """(calibration, held-out) tables of one of two folds: train plus every other query (`fold` = 0:
    the even ones) of the collections without a train split; the rest of those, and the other
    collections' test queries, held out."""
    def half(a: np.ndarray, keep: int) -> np.ndarray:
        return a[np.arange(len(a)) % 2 == keep]

    cal = dict(train) | {k: half(a, fold) for k, a in test.items() if k[0] in NO_TRAIN}
    held = {k: half(a, 1 - fold) if k[0] in NO_TRAIN else a for k, a in test.items()}
    return cal, held


def kfold(train: dict[tuple[str, str], np.ndarray], test: dict[tuple[str, str], np.ndarray]) -> None:
    for floor_share in (0.85, 0.90):
        for fold in (0, 1):
            cal, held = folds(train, test, fold)
            t = calibrate_balanced(cal, floor_share)
            print(f"\n## balanced, foreign floor {floor_share:.0%}, calibration fold {fold}")
            report(held, "balanced", t)


def main(argv: list[str]) -> None:
    split = argv[0]
    if split == "kfold":
        data = bench.DATA.resolve()
        kfold(tables("train", data), tables("test", data))
        return
    run_split(split, tables(split, bench.DATA.resolve()), RULES, calibrate, THRESHOLDS, report)


def run_split(split: str, table: dict, rules: tuple[str, ...], calibrate, thresholds: Path, report) -> None:
    """On train: each rule's thresholds by `calibrate`, kept in `thresholds`; on test: those, read back
    (never re-chosen). Then each rule's `report`."""
    if split == "train":
        chosen = {rule: calibrate(table, rule) for rule in rules}
        thresholds.write_text(json.dumps(chosen, indent=1))
    else:
        chosen = {k: tuple(v) for k, v in json.loads(thresholds.read_text()).items()}
    for rule in rules:
        print(f"\n## rule: {rule} (thresholds from train)")
        report(table, rule, chosen[rule])


if __name__ == "__main__":
    main(sys.argv[1:])
