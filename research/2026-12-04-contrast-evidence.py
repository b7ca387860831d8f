"""Contrast as evidence in the "nothing relevant" rule (issue 13, item 5).

Today's rule (ragx/search/evidence.py) reads absolute levels: the best chunk cosine and the best BM25
per query term. A query about another collection can still reach a fair cosine when its field is near
(Cranfield's aerodynamics questions against SciFact's abstracts): every chunk of that corpus is about as
close to it as the best one. A real question's answer tends to stand out from the rest of its own
corpus. The variants read that contrast from the dense leg's ranked cosines (its 100 seeds, the pass
`ragx query` makes):

* `or`     -- today's rule: dense >= d or lexical >= l;
* `gap`    -- dense + w * (best cosine - 10th best cosine) >= d, or lexical >= l;
* `z`      -- dense + w * z >= d, or lexical >= l, with z = (best - mean) / std of the 100 seeds' cosines
              (scaled by 0.01 so that w lives on the same grid);
* `share`  -- dense >= d, or lexical >= l, or share >= w: the best BM25 score as a share of the most a
              chunk could score on the query (the sum over its terms of idf * (k1 + 1), a term absent from
              the corpus at its df = 0 idf). Added after the first three came out inert on train (their
              test run, identical to today's rule, was already made): per-term division charges a long
              question for its common words, the share charges it by what each word would be worth.

w = 0 is today's rule, so each variant can only choose it or beat it on its calibration queries.
Two calibrations, as in research/2026-12-04-leg-agreement.md:

* `train`    -- scifact and dendron-vault train queries (real against their own corpus, foreign against
                the other three corpora): the thresholds that reject the most foreign queries while real
                ones lose at most 0.5% (scripts/bench/bench_no_match.py --calibrate's procedure);
* `kfold`    -- those train queries plus one half of Cranfield's and MuSiQue-small's (no train split), the
                fewest real losses (worst collection, then pooled) while every foreign calibration pair
                stays at least 85% empty; those two collections reported on their other half, SciFact and
                the vault on test, for both folds.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-contrast-evidence.py train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-contrast-evidence.py test    # once, after train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-contrast-evidence.py kfold

Evidence tables are cached in $RAGX_CACHE_DIR/research-prf/contrast-evidence-<split>.npz; the train
thresholds in contrast-evidence-thresholds.json beside them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import bench_no_match as bench  # noqa: E402

from lab.studies import harness  # noqa: E402
from lab.studies.research_scripts import load_script  # noqa: E402
from ragx.index.fts_tokens import shared  # noqa: E402
from ragx.scoring.bm25 import K1  # noqa: E402
from ragx.scoring.candidates import Candidates  # noqa: E402
from ragx.search.evidence import signals  # noqa: E402
from ragx.search.lexical import query_words  # noqa: E402

legs = load_script("2026-12-04-leg-agreement.py")  # its report and its 2-fold split
OUT = harness.OUT
THRESHOLDS = OUT / "contrast-evidence-thresholds.json"
RULES = ("or", "gap", "z", "share")
WEIGHTS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0)
MAX_LOSS = 0.005
FOREIGN_FLOOR = 0.85


def features(c: Candidates) -> tuple[float, float, float, float]:
    """(dense, lexical, gap, z): the rule's two signals and the dense leg's contrast."""
    dense, lexical, _ = signals(c)  # the share came later (2026-12-04-contrast-evidence)
    ids = c.dense_ids[0]
    if len(ids) < 10:
        return dense, lexical, 0.0, 0.0
    cos = np.sort(c.qsim[c.local(ids)].astype(np.float64))[::-1]
    gap = float(cos[0] - cos[9])
    z = float((cos[0] - cos.mean()) / cos.std()) if cos.std() > 0 else 0.0
    return dense, lexical, gap, z * 0.01


def bm25_share(c: Candidates, corpus) -> float:
    """The pass's best BM25 score over the most any chunk could score on its query's terms."""
    words = query_words(c.query)
    if not words or not len(c.lexical):
        return 0.0
    with corpus.searcher.reading() as snap:  # joins the pass's read transaction
        lex = snap.lexicon
        n = len(lex.live)
        top = 0.0
        for term in shared().of_words(words):
            df = sum(len(lex._live_postings(part, alive, term)[0]) for part, alive in zip((lex.base, lex.delta), lex._alive))
            idf = np.log((n - df + 0.5) / (df + 0.5))
            top += (idf if idf > 0 else 1e-6) * (K1 + 1.0)
    return float(np.max(c.lexical)) / top if top > 0 else 0.0


def tables(split: str, data: Path) -> dict[tuple[str, str], np.ndarray]:
    return bench.cached_tables(split, data, OUT / f"contrast-evidence-{split}.npz", lambda c, corpus, q, vector: features(c))


def share_tables(split: str, data: Path) -> dict[tuple[str, str], np.ndarray]:
    """`tables` with the BM25 share as a fifth column."""
    return bench.cached_tables(split, data, OUT / f"contrast-evidence-share-{split}.npz",
                               lambda c, corpus, q, vector: (*features(c), bm25_share(c, corpus)))


def passes(rule: str, a: np.ndarray, t: tuple[float, float, float]) -> np.ndarray:
    d, lex, w = t
    if rule == "share":
        return (a[:, 0] >= d) | (a[:, 1] >= lex) | (a[:, 4] >= w)
    extra = {"or": 0.0, "gap": a[:, 2], "z": a[:, 3]}[rule]
    return (a[:, 0] + w * extra >= d) | (a[:, 1] >= lex)


def _weights(rule: str, pooled: np.ndarray) -> tuple[float, ...]:
    if rule == "or":
        return (0.0,)
    if rule == "share":  # inf: the share branch off (today's rule)
        return (float("inf"), *np.unique(np.round(np.quantile(pooled[:, 4], np.linspace(0, 0.3, 31)), 4)).tolist())
    return WEIGHTS


def _grid(rule: str, pooled: np.ndarray, w: float, top: float, n: int):
    extra = {"or": 0.0, "share": 0.0, "gap": pooled[:, 2], "z": pooled[:, 3]}[rule]
    ds = np.unique(np.round(np.quantile(pooled[:, 0] + w * extra, np.linspace(0, top, n)), 4))
    ls = np.unique(np.round(np.quantile(pooled[:, 1], np.linspace(0, 0.6, n)), 4))
    return [(float(d), float(lex), w) for d in ds for lex in ls]


def calibrate(table: dict[tuple[str, str], np.ndarray], rule: str) -> tuple[float, float, float]:
    real = np.vstack([a for (q, c), a in table.items() if q == c])
    foreign = np.vstack([a for (q, c), a in table.items() if q != c])
    best = (-1.0, (0.0, 0.0, 0.0))
    for w in _weights(rule, real):
        for t in _grid(rule, real, w, 0.3, 61):
            if np.mean(~passes(rule, real, t)) <= MAX_LOSS:
                rejected = float(np.mean(~passes(rule, foreign, t)))
                if rejected > best[0]:
                    best = (rejected, t)
    return best[1]


def calibrate_balanced(table: dict[tuple[str, str], np.ndarray], rule: str, floor_share: float = FOREIGN_FLOOR):
    real = {k: a for k, a in table.items() if k[0] == k[1]}
    foreign = [a for k, a in table.items() if k[0] != k[1]]
    pooled = np.vstack(list(real.values()))
    best: tuple | None = None
    for w in _weights(rule, pooled):
        for t in _grid(rule, pooled, w, 0.3, 81):
            floor = min(float(np.mean(~passes(rule, a, t))) for a in foreign)
            if floor < floor_share:
                continue
            worst = max(float(np.mean(~passes(rule, a, t))) for a in real.values())
            key = (worst, float(np.mean(~passes(rule, pooled, t))), -floor)
            if best is None or key < best[0]:
                best = (key, t)
    assert best is not None, "no thresholds keep every foreign pair at the floor"
    return best[1]


def report(table: dict[tuple[str, str], np.ndarray], rule: str, t: tuple[float, float, float]) -> None:
    legs.report(table, rule, t, passes, "dense + w * contrast, lexical, w (share: its threshold)")


def kfold(train: dict[tuple[str, str], np.ndarray], test: dict[tuple[str, str], np.ndarray]) -> None:
    for rule in RULES:
        for fold in (0, 1):
            cal, held = legs.folds(train, test, fold)
            t = calibrate_balanced(cal, rule)
            print(f"\n## {rule}, balanced (foreign floor {FOREIGN_FLOOR:.0%}), calibration fold {fold}")
            report(held, rule, t)


def main(argv: list[str]) -> None:
    split = argv[0]
    data = bench.DATA.resolve()
    if split == "kfold":
        kfold(share_tables("train", data), share_tables("test", data))
        return
    legs.run_split(split, share_tables(split, data), RULES, calibrate, THRESHOLDS, report)


if __name__ == "__main__":
    main(sys.argv[1:])
