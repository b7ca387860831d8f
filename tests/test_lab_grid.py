"""The grid sampler (lab/grid.py): every point once, batches that share one structure (so that
lab/vectorised.py ranks each batch in one go), and workers that start apart and skip what is taken."""

from __future__ import annotations

import optuna

from lab.batches import run_batches
from lab.configs import package_defaults
from lab.grid import OrderedGrid, grid_axes
from lab.sweep import PARAM_TYPES, suggest
from lab.vectorised import structure

SPACE = {"heat_weight": [0.0, 1.0], "dense_weight": [0.2, 1.0], "hops": [0, 2], "rrf_k": [10.0, 60.0]}


def sweep(study, seed: int, budget: int, batch: int = 8, per_worker: int | None = None) -> list[list]:
    defaults = package_defaults()
    axes = grid_axes(SPACE, ["base"], 3, {n: PARAM_TYPES[n] in (int, "int") for n in SPACE})
    batches: list[list] = []

    def evaluate_many(proposals):
        batches.append(proposals)
        return [(p.dense_weight - p.heat_weight, {"worker": str(seed)}) for p in proposals]

    run_batches(study, OrderedGrid(axes, seed), lambda t: suggest(t, SPACE, defaults), evaluate_many, lambda written: None,
                batch=batch, per_worker=per_worker, study_trials=budget, poll=0.05)
    return batches


def point(t) -> tuple:
    return tuple(t.params[n] for n in sorted(SPACE))


def test_the_grid_visits_every_point_once_with_each_batch_on_one_structure(tmp_path):
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'o.db'}", direction="maximize")
    batches = sweep(study, seed=3, budget=81)  # 3 values of 4 knobs
    done = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(done) == 81 and len({point(t) for t in done}) == 81
    assert sorted(t.system_attrs["grid_id"] for t in done) == list(range(81))
    # 9 structures of 9 weight points each, batches of 8: a batch spans at most two structures, and only
    # where it crosses from one structure to the next (random points would give ~7 per batch)
    spans = [len({structure(p) for p in b}) for b in batches]
    assert max(spans) <= 2 and sum(spans) <= len(batches) + 9


def test_two_workers_start_apart_and_never_repeat_a_taken_point(tmp_path):
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'o.db'}", direction="maximize")
    sweep(study, seed=0, budget=81, per_worker=40)
    sweep(study, seed=1, budget=81)
    done = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(done) == 81 and len({point(t) for t in done}) == 81
    assert {t.user_attrs["worker"] for t in done} == {"0", "1"}


def test_grid_axes_put_the_weights_innermost_and_round_whole_numbers():
    axes = grid_axes({"hops": [0, 3], "dense_weight": [0.0, 1.0], "rrf_k": [1.0, 2.0]}, ["a", "b"], 3, {"hops": True, "dense_weight": False, "rrf_k": False})
    assert list(axes) == ["build", "hops", "rrf_k", "dense_weight"]
    assert axes["hops"] == [0, 2, 3] and axes["dense_weight"] == [0.0, 0.5, 1.0]
