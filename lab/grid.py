"""A grid over the sweep space, walked in an order that keeps each batch's trials on one structure.

Optuna's GridSampler draws unvisited points at random, so a batch of 32 would hold 32 structures
(fusion and propagation settings) and none of them could be ranked together. This sampler numbers the
grid with the build and the structural knobs outermost and the weights (lab/vectorised.py's WEIGHTS)
innermost: consecutive points differ only in their weights and share one Layout, so a batch is scored
in one go. Each worker starts at a block of its own (seeded) and walks up from there, skipping every
point the study already holds (its trials carry their `grid_id`), wrapping around at the end; once every
point is taken it revisits them in the same order (a grid has no new point to give).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.study import Study
from optuna.trial import FrozenTrial

from .vectorised import WEIGHTS


def axis(lo: Any, hi: Any, points: int, whole: bool) -> list:
    """`points` evenly spaced values from lo to hi (whole numbers: rounded, each once)."""
    if whole:
        return sorted({int(v) for v in np.round(np.linspace(int(lo), int(hi), points))})
    return [float(v) for v in np.linspace(float(lo), float(hi), points)]


def grid_axes(space: dict[str, list], builds: list[str], points: int, whole: dict[str, bool]) -> dict[str, list]:
    """The grid's axes, outermost first: the build (when there are several), structural knobs, then weights."""
    axes: dict[str, list] = {"build": list(builds)} if len(builds) > 1 else {}
    names = sorted(space, key=lambda n: (n in WEIGHTS, n))
    axes |= {n: axis(space[n][0], space[n][1], points, whole[n]) for n in names}
    return axes


class OrderedGrid(BaseSampler):
    """Every point of `axes` (name -> values, outermost first), in order, from a per-worker start."""

    def __init__(self, axes: dict[str, list], seed: int = 0) -> None:
        self.names = list(axes)
        self.points = list(itertools.product(*axes.values()))
        inner = int(np.prod([len(v) for n, v in axes.items() if n in WEIGHTS])) if any(n in WEIGHTS for n in axes) else 1
        blocks = max(1, len(self.points) // max(1, inner))
        self.start = int(np.random.default_rng(seed).integers(blocks)) * inner
        self.ids: dict[int, int] = {}  # trial id -> its grid point

    def __len__(self) -> int:
        return len(self.points)

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return {}

    def sample_relative(self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return {}

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        held = [t.system_attrs["grid_id"] for t in study._storage.get_all_trials(study._study_id, deepcopy=False) if "grid_id" in t.system_attrs]
        taken, n = set(held), len(self.points)
        walk = ((self.start + k) % n for k in range(n))
        grid_id = next((g for g in walk if g not in taken), (self.start + len(held)) % n)  # all taken: round again
        self.ids[trial._trial_id] = grid_id
        study._storage.set_trial_system_attr(trial._trial_id, "grid_id", grid_id)

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution) -> Any:
        return self.points[self.ids[trial._trial_id]][self.names.index(param_name)]
