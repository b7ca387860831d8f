"""The train/test gap: the same configurations on a collection's train split, beside its test figures.

A configuration tuned on train that holds up has a gap near 0; a large positive gap is the overfitting
the defaults must not carry. Collections with no train split have no gap to show: their figures are
held out as a whole (the defaults were never tuned on them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .metrics import METRIC_NAMES


def train_gap(corpus, train_queries: Path, specs: list | None, test_doc: dict[str, Any], progress=None) -> dict[str, Any]:
    """The train split's means for every configuration of `test_doc`, and train − test per metric."""
    train = corpus.evaluate(train_queries, specs, progress=progress)
    test_means, train_means = test_doc["files"]["means"], train["files"]["means"]
    return {
        "split": "train",
        "n_queries": train["n_queries"],
        "means": train_means,
        "gap": {name: {m: train_means[name][m] - test_means[name][m] for m in METRIC_NAMES}
                for name in test_means if name in train_means},
    }


def gap_head(docs: list[dict[str, Any]]) -> list[str]:
    return ["config", *(f"{d['dataset']} train / gap" for d in docs)]


def gap_rows(docs: list[dict[str, Any]], metric: str) -> list[list[str]]:
    """Config × dataset: the train mean and train − test; "no train split" where a set has none."""
    names = [n for n in docs[0]["files"]["means"] if all(n in d["files"]["means"] for d in docs)]
    rows = []
    for name in names:
        cells = []
        for d in docs:
            g = d.get("gap")
            if g is None or name not in g["gap"]:
                cells.append("no train split")
            else:
                cells.append(f"{g['means'][name][metric]:.4f} / {g['gap'][name][metric]:+.4f}")
        rows.append([name, *cells])
    return rows


def has_gap(docs: list[dict[str, Any]]) -> bool:
    return any(d.get("gap") for d in docs)
