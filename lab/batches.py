"""Trials in batches: sampled together, re-scored together, written in one transaction, tracked in one call.

A trial of a sweep costs milliseconds to re-score, so what used to dominate it was bookkeeping: Optuna's
storage took one transaction per parameter, attribute and state change, and MLflow one call per trial.
A batch instead:

1. under the study's budget lock: fails trials whose worker died (re-queued WAITING by the retry
   callback), claims WAITING trials first (a retry runs before any new trial), and counts the room the
   budget leaves for new ones (COMPLETE + RUNNING + WAITING count against it);
2. samples the new trials on an in-memory mirror of the study (the sampler sees every COMPLETE trial of
   every worker; TPE with `constant_liar` spreads a batch instead of asking the same point n times),
   each proposed as soon as it is asked; with `block` > 1, in blocks whose first trial is sampled in
   full and whose others keep its shared (structural) parameters, so that a block is ranked in one go;
3. re-scores all of them at once (`evaluate_many`);
4. writes the new trials COMPLETE in one storage transaction (`trial_store.add_complete`), under the
   lock again, never past the budget; the claimed retries are told COMPLETE;
5. logs every written trial's metrics to MLflow in one `log_batch` per 1,000 values.

A worker killed before step 4 leaves nothing of its batch in the study (the batch is re-run by whoever
fills the budget); killed inside it, the one transaction is rolled back; killed between 4 and 5, the
study holds trials MLflow lacks, which `lab study` (the audit) logs from the study's own record.

`RAGX_LAB_HOLD=PHASE:SECONDS` (the failure drill only) makes the worker print `lab: holding at PHASE` and
sleep there once, at `evaluate` (inside a batch) or `tracking` (stored, not yet tracked).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .cluster import BudgetLock, fail_stale, state_counts
from .trial_store import add_complete


@dataclass
class Plan:
    """What one batch runs: claimed retries (real trials of the study) and how many new trials to sample."""

    retries: list[Any] = field(default_factory=list)
    new: int = 0
    done: bool = False


def hold(phase: str) -> None:
    """The failure drill's pause (see the module docstring); nothing unless RAGX_LAB_HOLD names `phase`."""
    spec = os.environ.get("RAGX_LAB_HOLD", "")
    if not spec.startswith(phase + ":"):
        return
    os.environ.pop("RAGX_LAB_HOLD")  # once
    print(f"lab: holding at {phase} (pid {os.getpid()})", file=sys.stderr, flush=True)
    time.sleep(float(spec.split(":", 1)[1]))


def plan_batch(study, want: int, study_trials: int | None, lock: BudgetLock | None) -> Plan:
    """Step 1 of the module docstring, under the budget lock when the study has a budget."""
    import optuna

    if lock is not None:
        lock.acquire()
    try:
        fail_stale(study)
        retries: list[Any] = []
        while len(retries) < want:
            waiting = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,))
            if not waiting:
                break
            retries.append(study.ask())  # Optuna pops WAITING trials before it creates a new one
        if study_trials is None:
            return Plan(retries, want - len(retries))
        counts = state_counts(study)
        room = study_trials - counts["COMPLETE"] - counts["RUNNING"] - counts["WAITING"]
        new = max(0, min(want - len(retries), room))
        return Plan(retries, new, done=not retries and new == 0 and counts["COMPLETE"] >= study_trials)
    finally:
        if lock is not None:
            lock.release()


class Mirror:
    """An in-memory copy of the study's COMPLETE trials for the sampler: asking there writes nothing to the storage."""

    def __init__(self, study, sampler) -> None:
        import optuna

        self.study = study
        self.sampler = sampler
        self.local = optuna.create_study(direction=study.direction, sampler=sampler)
        self.seen: set[int] = set()

    def ask(self, n: int, propose: Callable[[Any], Any], block: int = 1,
            shared: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> tuple[list[Any], list[Any]]:
        """`n` new trials and their proposals, each proposed as soon as it is asked (the constant liar
        then sees its parameters). With `block` > 1 and `shared`, trials come in blocks: the block's first
        trial is sampled in full, the others keep its `shared(params)` and the sampler draws only the rest
        (Optuna's PartialFixedSampler around the same sampler)."""
        import optuna

        done = self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        fresh = [t for t in done if t._trial_id not in self.seen]
        self.local.add_trials(fresh)
        self.seen.update(t._trial_id for t in fresh)
        trials: list[Any] = []
        proposals: list[Any] = []
        try:
            for k in range(n):
                lead = trials[k - k % block] if shared is not None and k % block else None  # the block's first trial
                self.local.sampler = partial_fixed(shared(lead.params), self.sampler) if shared is not None and lead is not None else self.sampler
                trials.append(self.local.ask())
                proposals.append(propose(trials[-1]))
        finally:
            self.local.sampler = self.sampler
        return trials, proposals

    def forget(self, trials: Sequence[Any]) -> None:
        """The local placeholders of a written batch: their stored copies come back through `ask`."""
        import optuna

        for t in trials:
            self.local.tell(t, state=optuna.trial.TrialState.FAIL)


def partial_fixed(fixed: dict[str, Any], sampler) -> Any:
    """`sampler` drawing every parameter but `fixed` (Optuna's PartialFixedSampler, marked experimental)."""
    import warnings

    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.PartialFixedSampler(fixed, sampler)


def frozen(trial, value: float, attrs: dict[str, Any], started: float) -> Any:
    """A COMPLETE trial for the storage: the mirror trial's parameters, its system attributes (a grid
    sampler's grid id), the value and every attribute, timed from the batch's start."""
    import datetime as dt

    import optuna

    done = trial.study._storage.get_trial(trial._trial_id)
    return optuna.trial.FrozenTrial(
        number=-1, trial_id=-1, state=optuna.trial.TrialState.COMPLETE, value=value, values=None,
        datetime_start=dt.datetime.fromtimestamp(started), datetime_complete=dt.datetime.now(),
        params=dict(done.params), distributions=dict(done.distributions), user_attrs=attrs,
        system_attrs=dict(done.system_attrs), intermediate_values={},
    )


def tell_retries(study, retries: list[Any], results: list[tuple[float, dict[str, Any]]]) -> list[Any]:
    """The claimed retries told COMPLETE (attributes first: a kill in between leaves them RUNNING, and retried)."""
    out = []
    for trial, (value, attrs) in zip(retries, results):
        for key, v in attrs.items():
            trial.set_user_attr(key, v)
        out.append(study.tell(trial, value))
    return out


def write_batch(study, plan: Plan, new: list[Any], results: list[tuple[float, dict[str, Any]]], started: float,
                study_trials: int | None, lock: BudgetLock | None) -> list[Any]:
    """Step 4: the retries told, then as many new trials as the budget still has room for, in one transaction."""
    told = tell_retries(study, plan.retries, results[: len(plan.retries)])
    fresh = [frozen(t, v, a, started) for t, (v, a) in zip(new, results[len(plan.retries):])]
    if lock is not None:
        lock.acquire()
    try:
        if study_trials is not None:
            counts = state_counts(study)
            fresh = fresh[: max(0, study_trials - counts["COMPLETE"] - counts["RUNNING"] - counts["WAITING"])]
        return told + add_complete(study, fresh)
    finally:
        if lock is not None:
            lock.release()


def run_batches(study, sampler, propose: Callable[[Any], Any], evaluate_many: Callable[[list[Any]], list[tuple[float, dict[str, Any]]]],
                track: Callable[[list[Any]], None], *, batch: int, per_worker: int | None, study_trials: int | None,
                poll: float = 2.0, block: int = 1, shared: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                timings: dict[str, float] | None = None) -> int:
    """Run batches until this worker wrote `per_worker` trials or the study holds `study_trials` COMPLETE
    ones. `propose(trial)`: the trial's parameters (it calls the trial's suggest_*); `evaluate_many`:
    (value, attributes) per proposal; `track(trials)`: the written trials, numbered, to MLflow.
    `block`, `shared`: new trials in blocks that share `shared(params)` (Mirror.ask). `timings`: seconds
    spent planning, sampling, scoring, storing and tracking are added to it."""
    lock = BudgetLock(study) if study_trials is not None else None
    mirror = Mirror(study, sampler)
    clock = Phases(timings)
    ran = 0
    while per_worker is None or ran < per_worker:
        want = batch if per_worker is None else min(batch, per_worker - ran)
        plan = clock("plan", plan_batch, study, want, study_trials, lock)
        if plan.done:
            break
        if not plan.retries and not plan.new:
            time.sleep(poll)  # the rest of the budget is RUNNING elsewhere (or will be re-queued once found dead)
            continue
        new, proposed = clock("sample", mirror.ask, plan.new, propose, block, shared)
        started = time.time()
        with heartbeats(study, plan.retries):
            proposals = [propose(t) for t in plan.retries] + proposed
            hold("evaluate")
            results = clock("score", evaluate_many, proposals)
        written = clock("store", write_batch, study, plan, new, results, started, study_trials, lock)
        mirror.forget(new)
        hold("tracking")
        clock("track", track, written)
        ran += len(written)
    return ran


class Phases:
    """Adds each call's wall time to `timings[phase]` (nothing kept without a dict)."""

    def __init__(self, timings: dict[str, float] | None) -> None:
        self.timings = timings

    def __call__(self, phase: str, fn: Callable[..., Any], *args: Any) -> Any:
        began = time.perf_counter()
        try:
            return fn(*args)
        finally:
            if self.timings is not None:
                self.timings[phase] = self.timings.get(phase, 0.0) + time.perf_counter() - began


class heartbeats:
    """Heartbeats for the claimed retries (the only trials of a batch that are RUNNING in the storage)
    while the batch runs, so that a live worker's retry is never taken for a dead one."""

    def __init__(self, study, trials: list[Any]) -> None:
        from optuna.storages._heartbeat import get_heartbeat_thread

        storage = study._storage
        self.threads = [get_heartbeat_thread(t._trial_id, storage) for t in trials]

    def __enter__(self) -> None:
        for t in self.threads:
            t.start()

    def __exit__(self, *exc) -> None:
        for t in self.threads:
            t.join()
