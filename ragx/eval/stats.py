"""Paired significance of per-query differences between two configurations, with scipy.

For one metric, the per-query differences d = config - reference are tested with a paired
randomization test (scipy.stats.permutation_test, permutation_type="samples": every resample swaps
the two configurations' scores on a random subset of queries, i.e. flips the sign of those d),
statistic = mean(d), two-sided. The 95% confidence interval of mean(d) is scipy's BCa bootstrap.
Across configurations the p-values of one metric are corrected with Benjamini-Hochberg
(scipy.stats.false_discovery_control). Seeds are fixed: the same inputs give the same figures.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

RESAMPLES = 4999
SEED = 0
LEVEL = 0.95            # confidence level of the interval
ALPHA = 0.05            # significance level of the corrected p-value
P_FLOOR = 2 / (RESAMPLES + 1)  # the smallest two-sided p the randomization test can give
TIE = 1e-9              # |d| at or below this is a tie (metrics are floats from trec_eval)
METHOD = (f"paired randomization test (scipy.stats.permutation_test, {RESAMPLES} resamples, two-sided), "
          f"{int(LEVEL * 100)}% BCa bootstrap CI of the mean difference, Benjamini-Hochberg across configurations, "
          f"alpha {ALPHA}, seed {SEED}")


@dataclass
class Comparison:
    diff: float                  # mean(config - reference)
    ci: tuple[float, float]      # LEVEL confidence interval of the mean difference
    p: float                     # two-sided p-value of the paired randomization test
    p_adjusted: float            # after the correction across configurations (= p until corrected)
    wins: int
    ties: int
    losses: int
    significant: bool = False    # p_adjusted < ALPHA

    def to_json(self) -> dict:
        return {**asdict(self), "ci": list(self.ci)}


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def paired(config: np.ndarray, reference: np.ndarray) -> Comparison:
    """Compare per-query scores aligned by query (same order, same length)."""
    from scipy import stats

    x, y = np.asarray(config, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or len(x) == 0:
        raise ValueError("paired comparison needs two equally long, non-empty score vectors")
    d = x - y
    wins, losses = int(np.sum(d > TIE)), int(np.sum(d < -TIE))
    ties = len(d) - wins - losses
    if len(d) == 1:
        # One query: its two sign flips, d and -d, are equally extreme, so the exact two-sided p is 1
        # (scipy's test refuses a single observation).
        p = 1.0
    else:
        test = stats.permutation_test((x, y), _mean_diff, permutation_type="samples", vectorized=True,
                                      n_resamples=RESAMPLES, alternative="two-sided", rng=np.random.default_rng(SEED))
        p = float(min(1.0, test.pvalue))
    if np.ptp(d) <= TIE:
        # Every query differs by the same amount (typically 0): the bootstrap distribution is a single
        # point and scipy's BCa interval is undefined; the interval is that point.
        ci = (float(d[0]), float(d[0]))
    else:
        boot = stats.bootstrap((d,), _mean, vectorized=True, n_resamples=RESAMPLES, confidence_level=LEVEL,
                               method="BCa", rng=np.random.default_rng(SEED))
        ci = (float(boot.confidence_interval.low), float(boot.confidence_interval.high))
    return Comparison(float(d.mean()), ci, p, p, wins, ties, losses)


def correct(comparisons: list[Comparison]) -> None:
    """Benjamini-Hochberg over one family (one metric, every configuration against the reference)."""
    from scipy import stats

    if not comparisons:
        return
    adjusted = stats.false_discovery_control([c.p for c in comparisons], method="bh")
    for c, q in zip(comparisons, np.atleast_1d(adjusted).tolist()):
        c.p_adjusted = float(min(1.0, q))
        c.significant = c.p_adjusted < ALPHA


def power(differences: np.ndarray, effect: float, alpha: float = ALPHA) -> float:
    """The chance that a two-sided paired test at `alpha` over these many queries detects a true mean
    difference of `effect`, with the spread of the observed per-query `differences`: the paired t-test's
    power from the noncentral t distribution (the randomization test above approaches the t-test at
    these sample sizes). 0 with fewer than two queries; 1 for a nonzero effect on differences that
    never vary."""
    from scipy import stats

    d = np.asarray(differences, dtype=np.float64)
    n = len(d)
    if n < 2 or effect == 0:
        return 0.0 if n < 2 else float(alpha)
    sd = float(np.std(d, ddof=1))
    if sd <= TIE:
        return 1.0
    df, shift = n - 1, abs(effect) * np.sqrt(n) / sd
    crit = stats.t.ppf(1 - alpha / 2, df)
    return float(stats.nct.sf(crit, df, shift) + stats.nct.cdf(-crit, df, shift))
