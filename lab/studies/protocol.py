"""Train/test protocol shared by every study: a grid of configurations is measured once per split;
the configuration is chosen on train (the train split, or the other folds of a 5-fold CV over the
queries of a test-only collection) and its held-out per-query values are reported.

A `Bench` is one collection: its train and test splits (or one split and its folds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import data
from .evaluate import measure

COLLECTIONS = ("scifact", "dendron-vault", "cranfield", "musique-small")


@dataclass
class Bench:
    collection: str
    train: data.Split | None     # None: cross-validated
    test: data.Split

    @property
    def cv(self) -> bool:
        return self.train is None

    def folds(self) -> np.ndarray:
        return np.array([data.fold_of(q) for q in self.test.qids])


def load_benches(collections=COLLECTIONS) -> dict[str, Bench]:
    out = {}
    for coll in collections:
        sp = data.SPLITS[coll]
        train = data.load(coll, "train") if "train" in sp else None
        out[coll] = Bench(coll, train, data.load(coll, "test"))
    return out


Grid = dict[str, Callable]   # config label -> scorer


def measure_grid(split: data.Split, grid: Grid, metric_names=("nDCG@10", "R@5", "R@10", "R@100")) -> dict[str, dict[str, np.ndarray]]:
    out = {}
    for label, scorer in grid.items():
        m = measure(split, scorer)
        out[label] = {k: m[k] for k in metric_names}
    return out


@dataclass
class Heldout:
    chosen: list[str]                     # configuration(s) chosen (one per fold under CV)
    values: dict[str, np.ndarray]         # metric -> per-query held-out values (test qids order)
    train_mean: float                     # objective of the chosen config on its training data (mean over folds)


def select(bench: Bench, train_res, test_res, objective: str = "nDCG@10") -> Heldout:
    return choose(train_res, test_res, None if not bench.cv else bench.folds(), objective)


def choose(train_res, test_res, folds: np.ndarray | None, objective: str = "nDCG@10") -> Heldout:
    """The configuration best on train (`folds` None), or per fold on the other folds of the test queries."""
    labels = list(test_res)
    if folds is None:
        best = max(labels, key=lambda lab: (train_res[lab][objective].mean(), -labels.index(lab)))
        return Heldout([best], dict(test_res[best]), float(train_res[best][objective].mean()))
    metrics = next(iter(test_res.values())).keys()
    values = {m: np.zeros(len(folds)) for m in metrics}
    chosen, train_means = [], []
    for f in range(data.CV_FOLDS):
        tr, te = folds != f, folds == f
        best = max(labels, key=lambda lab: (test_res[lab][objective][tr].mean(), -labels.index(lab)))
        chosen.append(best)
        train_means.append(test_res[best][objective][tr].mean())
        for m in metrics:
            values[m][te] = test_res[best][m][te]
    return Heldout(chosen, values, float(np.mean(train_means)))
