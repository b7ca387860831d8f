"""One sweep objective over several training sets at once (issue 13, item 1).

`train_sets` (configs/lab.yaml) names the dataset configs a sweep tunes on, each read at `split`. A
trial is re-scored on every set from its cached passes, and scored as

    objective = mean over sets of the sweep's objective  -  guard * max over sets of max(0, ref_s - objective_s)

where ref_s is the current defaults' objective on set s, re-scored from the same passes: a setting that
gains on average by losing one collection pays for the loss. With one set the guard is left out: it
would only transform that set's figure monotonically, never change which trial wins.

Every set's metrics are kept on the trial as `<set>/<metric>` (MLflow: `<set>/nDCG_at_10`), the mean
over sets under the metric's own name, each set's objective as `<set>/objective` and the worst drop
as `worst_drop`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ragx.eval.metrics import Evaluator
from ragx.scoring.params import Params

from .configs import dataset_config, train_sets
from .rescore import rescore_means, rescore_runs
from .vectorised import Layouts


def objective_value(means: dict[str, float], objective: str) -> float:
    """A metric name, or several joined by '+' (their sum), e.g. 'nDCG@10+R@100'."""
    return sum(means[name.strip()] for name in objective.split("+"))


def load_training(cfg, load_passes: Callable[..., dict[str, dict[str, Any]]], reporter=None) -> dict[str, dict[str, dict[str, Any]]]:
    """set name -> build name -> its passes, labels and scorer (`load_passes` for that set's dataset)."""
    return {label: load_passes(cfg, reporter, dataset_config(cfg, name)) for label, name in train_sets(cfg).items()}


def builds_of(sets: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Every (set, build)'s data under one key each, `<set>/<build>`."""
    return {f"{s}/{b}": d for s, builds in sets.items() for b, d in builds.items()}


def qrels_of(builds: dict[str, dict[str, Any]]) -> dict[str, dict[str, int]]:
    """A set's labels (every build of it holds the same queries)."""
    return {q.id: q.files for q in next(iter(builds.values()))["queries"]}


class Objective:
    """The trial objective over the training sets; `references` are the current defaults' values."""

    def __init__(self, sets: dict[str, dict[str, dict[str, Any]]], objective: str, defaults: Params, guard: float):
        self.sets, self.objective, self.guard = sets, objective, float(guard)
        self.qrels = {s: qrels_of(builds) for s, builds in sets.items()}  # once, not per trial
        self.evaluators = {s: Evaluator(q) for s, q in self.qrels.items()}
        # per set and build: the structures recently ranked (lab/vectorised.py), kept across batches
        self.layouts = {(s, b): Layouts(d["passes"], d["meta"]["paths"]) for s, builds in sets.items() for b, d in builds.items()}
        base = next(iter(next(iter(sets.values()))))  # the first build: the sweep's base index
        self.references = ({s: objective_value(self.set_means(s, base, defaults), objective) for s in sets}
                           if len(sets) > 1 else {})

    def set_means(self, name: str, build: str, params: Params) -> dict[str, float]:
        """One set's metrics under `params`, re-scored offline on `build`'s passes."""
        d = self.sets[name][build]
        return rescore_means(d["passes"], [params], self.evaluators[name], d["meta"]["paths"], d["scorer"], self.layouts[name, build])[0]

    def __call__(self, params: Params, build: str) -> tuple[float, dict[str, float]]:
        per_set = {s: self.set_means(s, build, params) for s in self.sets}
        return self.combine(per_set)

    def many(self, proposals: list[tuple[str, Params]]) -> list[tuple[float, dict[str, float]]]:
        """(objective, attributes) of each (build, params), the same floats as calling the objective on
        each: every set's configurations of one build measured in one `rescore_means` call."""
        per_set: list[dict[str, dict[str, float]]] = [{} for _ in proposals]
        for build in dict.fromkeys(b for b, _ in proposals):
            picked = [k for k, (b, _) in enumerate(proposals) if b == build]
            for s, builds in self.sets.items():
                d = builds[build]
                means = rescore_means(d["passes"], [proposals[k][1] for k in picked], self.evaluators[s], d["meta"]["paths"], d["scorer"],
                                      self.layouts[s, build])
                for k, m in zip(picked, means):
                    per_set[k][s] = m
        return [self.combine(p) for p in per_set]

    def per_query_many(self, many: list[Params], build: str) -> tuple[list[float], list[np.ndarray]]:
        """Each setting's objective, and its objective per query (the metrics of the objective summed;
        every set's queries in label order, pooled), from one re-scored batch per set."""
        per_set: list[dict[str, dict[str, float]]] = [{} for _ in many]
        rows: list[list[list[float]]] = [[] for _ in many]
        for s, builds in self.sets.items():
            d = builds[build]
            for k, run in enumerate(rescore_runs(d["passes"], many, d["meta"]["paths"], d["scorer"], self.layouts[s, build])):
                means, per_query = self.evaluators[s](run)
                per_set[k][s] = means
                rows[k].append([objective_value(per_query[q], self.objective) for q in self.qrels[s]])
        return [self.combine(p)[0] for p in per_set], [np.concatenate(r) for r in rows]

    def combine(self, per_set: dict[str, dict[str, float]]) -> tuple[float, dict[str, float]]:
        """(objective, attributes) from each set's metrics (see the module docstring)."""
        names = list(next(iter(per_set.values())))
        attrs = {m: float(np.mean([means[m] for means in per_set.values()])) for m in names}
        if len(per_set) == 1:
            return objective_value(attrs, self.objective), attrs
        values = {s: objective_value(means, self.objective) for s, means in per_set.items()}
        worst = max(max(0.0, self.references[s] - v) for s, v in values.items())
        attrs |= {f"{s}/{m}": v for s, means in per_set.items() for m, v in means.items()}
        attrs |= {f"{s}/objective": v for s, v in values.items()}
        attrs["worst_drop"] = worst
        return float(np.mean(list(values.values()))) - self.guard * worst, attrs
