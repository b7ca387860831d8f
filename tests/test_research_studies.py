"""The study helpers of issue 13: adaptive fusion weights (ragx/search/adaptive.py) and the lab's
paired significance test (lab/studies/stats.py)."""

import numpy as np
import pytest

from ragx.search.adaptive import adaptive_weights, decisiveness


def test_tau_zero_keeps_the_fixed_weights():
    q, lex = np.array([0.9, 0.5, 0.4]), np.array([3.0, 0.0, 1.0])
    assert adaptive_weights(q, lex, 0.6, 0.4, tau=0.0) == (0.6, 0.4)


def test_a_decisive_leg_gains_weight_and_the_sum_is_kept():
    flat_dense = np.full(20, 0.5) + np.linspace(0, 0.01, 20)      # no chunk stands out
    sharp_lexical = np.r_[10.0, np.full(19, 1.0)]                  # one chunk clearly best
    g, d = adaptive_weights(flat_dense, sharp_lexical, 0.5, 0.5, tau=1.0)
    assert d > 0.5 > g
    assert g + d == pytest.approx(1.0)


def test_decisiveness_of_too_few_values_is_zero():
    assert decisiveness(np.array([0.7]), 10) == 0.0
    assert decisiveness(np.array([2.0, 1.0]), 10) == pytest.approx(0.5, rel=1e-6)


def test_paired_test_flags_a_broken_change_and_not_a_noop():
    pytest.importorskip("scipy")
    from lab.studies.stats import holm, paired

    rng = np.random.default_rng(1)
    base = rng.uniform(0.2, 0.9, 200)
    noop = paired(base.copy(), base)
    broken = paired(np.clip(base - rng.uniform(0.0, 0.2, 200), 0, 1), base)
    noisy = paired(np.clip(base + rng.normal(0, 0.05, 200), 0, 1), base)
    holm([noop, broken, noisy])
    assert noop.p == 1.0 and not noop.significant and noop.ties == 200
    assert broken.significant and broken.delta < 0 and broken.ci_high < 0
    assert not noisy.significant


def test_the_research_ledger_names_every_study():
    """research/README.md links every note under research/ and names every script (a script by its own
    name or its note's): a study nobody can find is lost."""
    from pathlib import Path

    research = Path(__file__).resolve().parent.parent / "research"
    ledger = (research / "README.md").read_text(encoding="utf-8")
    notes = [p.name for p in sorted(research.glob("*.md")) if p.name != "README.md" and f"({p.name})" not in ledger]
    scripts = [p.name for p in sorted(research.glob("*.py")) if p.name not in ledger and f"({p.stem}.md)" not in ledger]
    missing = notes + scripts
    assert missing == []
