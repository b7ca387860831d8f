"""Paired significance for per-query metrics: a two-sided paired randomisation (sign-flip) test from
scipy.stats.permutation_test, a bootstrap 95% CI of the mean difference (scipy.stats.bootstrap), and
Holm's step-down correction across the comparisons of one table. The harness's ragx/eval/stats.py is
the product version; this one serves the offline studies until the lead unifies them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

TIE = 1e-9


@dataclass
class Comparison:
    mean_a: float
    mean_b: float
    delta: float           # mean(a - b)
    ci_low: float
    ci_high: float
    p: float               # raw two-sided p
    wins: int
    ties: int
    losses: int
    p_holm: float = float("nan")

    @property
    def significant(self) -> bool:
        return self.p_holm < 0.05

    def mark(self) -> str:
        if not self.significant:
            return ""
        return "▲" if self.delta > 0 else "▼"


def _mean_stat(d, axis=-1):
    return np.mean(d, axis=axis)


def paired(a: np.ndarray, b: np.ndarray, resamples: int = 9999, seed: int = 0) -> Comparison:
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = a - b
    wins, losses = int((d > TIE).sum()), int((d < -TIE).sum())
    if np.all(np.abs(d) <= TIE):
        return Comparison(a.mean(), b.mean(), 0.0, 0.0, 0.0, 1.0, 0, len(d), 0)
    rng = np.random.default_rng(seed)
    # Sign flips of the paired differences = permuting each query's two labels.
    p = stats.permutation_test((d,), _mean_stat, permutation_type="samples", n_resamples=resamples,
                               alternative="two-sided", vectorized=True, random_state=rng).pvalue
    ci = stats.bootstrap((d,), _mean_stat, n_resamples=2000, confidence_level=0.95, method="percentile",
                         vectorized=True, random_state=rng).confidence_interval
    return Comparison(a.mean(), b.mean(), d.mean(), float(ci.low), float(ci.high), float(p), wins, len(d) - wins - losses, losses)


def holm(comparisons: list[Comparison]) -> list[Comparison]:
    """Holm step-down adjusted p-values, in place (family = the list given)."""
    m = len(comparisons)
    order = np.argsort([c.p for c in comparisons])
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * comparisons[i].p))
        comparisons[i].p_holm = running
    return comparisons
