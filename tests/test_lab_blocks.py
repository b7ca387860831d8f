"""Blocks of trials that share a structure (lab/batches.py Mirror.ask, `optuna.block`): with TPE and
random, each block's first trial is sampled in full and the rest keep its structure and draw only the
weights, so a batch of 32 holds 32 / block structures for lab/vectorised.py to rank; block 1 samples
every trial in full, as before."""

from __future__ import annotations

import optuna
import pytest

from lab.batches import run_batches
from lab.configs import compose, package_defaults
from lab.sweep import block_of, make_sampler, structural, suggest
from lab.vectorised import structure

SPACE = {"heat_weight": [0.0, 1.0], "dense_weight": [0.0, 1.0], "file_chunks": [1, 3], "hops": [0, 3], "rrf_k": [1.0, 120.0], "decay": [0.1, 1.0]}


def sweep(sampler, block: int, trials: int = 64, batch: int = 16) -> list[list]:
    defaults = package_defaults()
    study = optuna.create_study(direction="maximize")
    batches: list[list] = []

    def evaluate_many(proposals):
        batches.append(proposals)
        return [(p.dense_weight - abs(p.rrf_k - 60) / 60 - p.hops / 3, {}) for p in proposals]

    run_batches(study, sampler, lambda t: suggest(t, SPACE, defaults), evaluate_many, lambda written: None,
                batch=batch, per_worker=trials, study_trials=None, block=block, shared=structural)
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))) == trials
    return batches


@pytest.mark.parametrize("kind", ["tpe", "random"])
def test_each_block_shares_one_structure_and_draws_its_own_weights(kind):
    batches = sweep(make_sampler({"sampler": kind}, seed=1), block=4)
    for b in batches:
        blocks = [b[i:i + 4] for i in range(0, len(b), 4)]
        assert all(len({structure(p) for p in blk}) == 1 for blk in blocks)  # one structure a block
        assert len({structure(p) for p in b}) == len(blocks)                   # a new one for each block
        assert all(len({(p.heat_weight, p.dense_weight) for p in blk}) == 4 for blk in blocks)  # weights drawn per trial


def test_block_one_samples_every_trial_in_full():
    batches = sweep(make_sampler({"sampler": "random"}, seed=1), block=1)
    assert all(len({structure(p) for p in b}) == len(b) for b in batches)


def test_tpe_in_blocks_still_learns_structure_and_weights():
    """After its start-up trials TPE leans to the good region: rrf_k (a structural knob, drawn once a
    block) near 60, dense_weight (drawn per trial) high."""
    import numpy as np

    batches = sweep(make_sampler({"sampler": "tpe"}, seed=2), block=4, trials=128)
    first, late = batches[0], [p for b in batches[-2:] for p in b]
    assert np.mean([abs(p.rrf_k - 60) for p in late]) < 0.5 * np.mean([abs(p.rrf_k - 60) for p in first])
    assert np.mean([p.dense_weight for p in late]) > np.mean([p.dense_weight for p in first]) + 0.2


def test_block_is_checked_and_kept_to_tpe_and_random():
    from ragx.errors import UsageError

    assert block_of(compose(["optuna.block=8"]).optuna) == 8
    assert block_of(compose(["optuna.block=8", "optuna.sampler=grid"]).optuna) == 1
    assert block_of(compose(["optuna.block=8", "optuna.sampler=qmc"]).optuna) == 1
    with pytest.raises(UsageError, match="optuna.block"):
        block_of(compose(["optuna.block=0"]).optuna)
