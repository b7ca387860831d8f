"""Sweeps on several workers and machines: one Optuna study in an RDB (PostgreSQL for several
machines), heartbeats so that a dead worker's trial is failed and retried, a study-wide trial
budget, and an audit of the study against the MLflow runs that tracked it.

Why the budget loop instead of `study.optimize(n_trials=...)` alone: a worker's `n_trials` counts
its own trials, so a worker that dies leaves the study short. With `study_trials=N` every worker runs
one trial at a time until the study holds N COMPLETE trials; while the study's COMPLETE + RUNNING
trials already reach N it starts none but waits for them (a RUNNING trial whose worker died goes stale
after the grace period, is failed and re-queued as WAITING by the retry callback, and is then picked
up by a survivor).

The check and the start of a trial are one step under the study's budget lock (a PostgreSQL advisory
lock, or a file lock beside a SQLite study): without it two workers that both see N-1 COMPLETE trials
both start one and the study ends with N+1. The lock is released as soon as the trial exists (first
thing in the objective), so trials still run in parallel.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any


def rdb_storage(url: str, optuna_cfg) -> Any:
    """An RDBStorage with heartbeats and retry of trials whose worker stopped beating."""
    import warnings

    import optuna
    from optuna.storages import RDBStorage

    retry_cls = getattr(optuna.storages, "RetryHeartbeatStaleTrialCallback", None) or optuna.storages.RetryFailedTrialCallback
    interval = optuna_cfg.get("heartbeat_interval")
    # pool_pre_ping: a worker outlives server restarts and idle-connection reaping
    engine = {"pool_pre_ping": True} if url.startswith("postgresql") else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # heartbeats: "experimental" since 2.8
        kwargs: dict[str, Any] = {}
        if interval:
            kwargs = {"heartbeat_interval": int(interval), "grace_period": int(optuna_cfg.get("grace_period") or 4 * int(interval))}
            key = "heartbeat_stale_trial_callback" if retry_cls.__name__.startswith("RetryHeartbeat") else "failed_trial_callback"
            kwargs[key] = retry_cls(max_retry=optuna_cfg.get("max_retry"))
        return RDBStorage(url, engine_kwargs=engine, **kwargs)


def rdb_of(study) -> Any:
    """The study's RDBStorage, or None. Optuna wraps an RDBStorage in a caching layer (`_CachedStorage`)
    that hides the engine and the heartbeat settings: read them from the storage underneath."""
    storage = getattr(study._storage, "_backend", study._storage)
    return storage if hasattr(storage, "engine") else None


def state_counts(study) -> Counter:
    return Counter(t.state.name for t in study.get_trials(deepcopy=False))


def optimize(study, objective, callbacks, per_worker: int | None, study_trials: int | None, poll: float = 2.0) -> int:
    """Run trials one at a time (objective style; sweeps run batches: lab/batches.py) until this worker
    ran `per_worker` or the study holds `study_trials` COMPLETE ones. Stale trials are failed (and so
    re-queued) under the budget lock, and WAITING trials count against the budget: a retry is always
    run, before any new trial, and never crowded out by survivors filling the budget first."""
    ran = 0
    lock = BudgetLock(study) if study_trials is not None else None
    while per_worker is None or ran < per_worker:
        if lock is not None and study_trials is not None:
            lock.acquire()
            fail_stale(study)
            counts = state_counts(study)
            if not counts["WAITING"] and counts["COMPLETE"] + counts["RUNNING"] >= study_trials:
                lock.release()
                if counts["COMPLETE"] >= study_trials:
                    break
                time.sleep(poll)  # the rest is running (or will be re-queued once its worker is found dead)
                continue
        else:
            fail_stale(study)
        # the next trial is a re-queued (WAITING) one if any: Optuna runs those before it samples new ones
        try:
            study.optimize(_released_on_start(objective, lock), n_trials=1, callbacks=callbacks, gc_after_trial=False)
        finally:
            if lock is not None:
                lock.release()
        ran += 1
    return ran


def _released_on_start(objective: Callable, lock: BudgetLock | None) -> Callable:
    """The objective, releasing the budget lock once Optuna has created (and so counted) its trial."""
    if lock is None:
        return objective

    def started(trial):
        lock.release()
        return objective(trial)

    return started


class BudgetLock:
    """One worker at a time between "the study is short of its budget" and "my trial is RUNNING".
    PostgreSQL: a session advisory lock keyed by the study's name (the server drops it if the worker
    dies). SQLite: an flock on a file beside the database (the kernel drops it if the worker dies).
    In-memory storage lives in one process: there is nobody to race."""

    def __init__(self, study) -> None:
        rdb = rdb_of(study)
        engine: Any = rdb.engine if rdb is not None else None
        self._dialect = engine.dialect.name if engine is not None else None
        self._engine, self._key = engine, f"ragx-budget:{study.study_name}"
        self._conn: Any = None
        self._file: Any = None
        if self._dialect == "sqlite" and engine.url.database not in (None, "", ":memory:"):
            self._path: Path | None = Path(f"{engine.url.database}.budget-lock")
        else:
            self._path = None

    def acquire(self) -> None:
        import sqlalchemy

        if self._dialect == "postgresql":
            self._conn = self._engine.connect()
            self._conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(hashtext(:k))"), {"k": self._key})
        elif self._path is not None:
            import fcntl

            self._file = open(self._path, "a")
            fcntl.flock(self._file, fcntl.LOCK_EX)

    def release(self) -> None:
        """Idempotent: the objective releases on start, `optimize` again after a trial that never started."""
        import sqlalchemy

        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(hashtext(:k))"), {"k": self._key})
            conn.close()
        if self._file is not None:
            f, self._file = self._file, None
            f.close()  # closing the descriptor drops the flock


def fail_stale(study) -> None:
    """Fail (and so re-queue, through the retry callback) the RUNNING trials whose worker died."""
    import warnings

    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
    _fail_never_beaten(study)


def _fail_never_beaten(study) -> None:
    """Optuna only fails a RUNNING trial whose heartbeat went stale; a worker killed between creating its
    trial and its first heartbeat leaves a trial with no heartbeat at all, which Optuna would leave
    RUNNING forever (and the study-wide budget would wait on it). Such a trial older than the grace
    period is failed here, with the same callback."""
    import copy
    from datetime import datetime

    import optuna
    import sqlalchemy

    storage = rdb_of(study)
    grace = storage and (storage.grace_period or 2 * (storage.heartbeat_interval or 0))
    if not grace:
        return
    now = datetime.now()
    old = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
           if t.datetime_start and (now - t.datetime_start).total_seconds() > grace]
    if not old:
        return
    with storage.engine.connect() as conn:  # Optuna's own heartbeat table (schema of its RDB storage)
        beating = {row[0] for row in conn.execute(sqlalchemy.text("SELECT trial_id FROM trial_heartbeats"))}
    callback = storage.get_heartbeat_stale_trial_callback()
    for t in old:
        if t._trial_id in beating:
            continue  # Optuna's own stale check covers it
        try:
            if storage.set_trial_state_values(t._trial_id, state=optuna.trial.TrialState.FAIL) and callback:
                callback(study, copy.deepcopy(storage.get_trial(t._trial_id)))
        except optuna.exceptions.UpdateFinishedTrialError:
            pass  # another worker failed it first


def audit_study(study) -> dict[str, Any]:
    """What the storage holds: trials by state, retries, per-worker counts, and duplicates (none expected)."""
    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    numbers = [t.number for t in trials]
    param_sets = Counter(tuple(sorted(t.params.items())) for t in complete)
    retried = {t.number: t.system_attrs.get("failed_trial") for t in trials if "failed_trial" in t.system_attrs}
    starts = [t.datetime_start for t in complete if t.datetime_start]
    ends = [t.datetime_complete for t in complete if t.datetime_complete]
    minutes = (max(ends) - min(starts)).total_seconds() / 60 if complete else 0.0
    return {
        "study": study.study_name,
        "trials": len(trials),
        "states": dict(state_counts(study)),
        "duplicate_numbers": len(numbers) - len(set(numbers)),
        "duplicate_complete_params": sum(n - 1 for n in param_sets.values() if n > 1),
        "retries": {str(k): v for k, v in retried.items()},
        "failed": [t.number for t in trials if t.state.name == "FAIL"],
        "complete_by_worker": dict(Counter(str(t.user_attrs.get("worker")) for t in complete)),
        "wall_minutes": round(minutes, 3),
        "mean_trial_seconds": _mean([(t.datetime_complete - t.datetime_start).total_seconds() for t in complete]),
        "mean_rescore_seconds": _mean([t.user_attrs["rescore_seconds"] for t in complete if "rescore_seconds" in t.user_attrs]),
        "trials_per_minute": round(len(complete) / minutes, 2) if minutes else None,
        "complete_numbers": sorted(t.number for t in complete),
    }


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def audit_mlflow(tracking_uri: str, experiment: str, study_name: str) -> dict[str, Any]:
    """The study's trials as MLflow saw them: every worker run's `objective` history, by trial number."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return {"runs": 0, "logged_trials": 0, "steps": []}
    runs = client.search_runs([exp.experiment_id], filter_string=f"tags.study = '{study_name}'", max_results=1000)
    steps = []
    for r in runs:
        steps += [m.step for m in client.get_metric_history(r.info.run_id, "objective")]
    return {
        "tracking_uri": tracking_uri,
        "runs": len(runs),
        "run_status": dict(Counter(r.info.status for r in runs)),
        "logged_trials": len(steps),
        "duplicate_steps": len(steps) - len(set(steps)),
        "steps": sorted(steps),
    }


def repair_mlflow(study, tracking_uri: str, experiment: str, logged: list[int]) -> list[int]:
    """Log to MLflow the COMPLETE trials it lacks (a worker killed between storing a batch and tracking
    it), from the study's own record: into the worker's run the trial names (`mlflow_run`), or else a
    `repair` run of the study. Returns the trial numbers logged."""
    import optuna
    from mlflow.tracking import MlflowClient

    from .sweep import track_trials

    have = set(logged)
    missing = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)) if t.number not in have]
    if not missing:
        return []
    client = MlflowClient(tracking_uri)
    by_run: dict[str, list[Any]] = {}
    for t in missing:
        by_run.setdefault(str(t.user_attrs.get("mlflow_run") or ""), []).append(t)
    for run_id, trials in by_run.items():
        if not run_id or not _run_exists(client, run_id):
            exp = client.get_experiment_by_name(experiment)
            exp_id = exp.experiment_id if exp is not None else client.create_experiment(experiment)
            run = client.create_run(exp_id, tags={"study": study.study_name, "repair": "true"}, run_name=f"{study.study_name}-repair")
            client.set_terminated(run.info.run_id)
            run_id = run.info.run_id
        track_trials(run_id, trials, client)
    return sorted(t.number for t in missing)


def _run_exists(client, run_id: str) -> bool:
    from mlflow.exceptions import MlflowException

    try:
        client.get_run(run_id)
        return True
    except MlflowException:
        return False


def verdict(audit: dict[str, Any]) -> tuple[bool, str]:
    """The audit in one line: whether the study is whole (no WAITING or RUNNING trial left, every
    COMPLETE trial in MLflow, no duplicate), and what is wrong if not."""
    states, ml = audit["states"], audit["mlflow"]
    missing = sorted(set(audit["complete_numbers"]) - set(ml["steps"]))
    problems = [f"{states[s]} {s} trial(s) left" for s in ("WAITING", "RUNNING") if states.get(s)]
    if missing:
        problems.append(f"{len(missing)} COMPLETE trial(s) missing from MLflow (#{', #'.join(map(str, missing[:10]))})")
    if audit["duplicate_numbers"] or ml.get("duplicate_steps"):
        problems.append(f"duplicates: {audit['duplicate_numbers']} trial numbers, {ml.get('duplicate_steps', 0)} MLflow steps")
    repaired = f"; repaired: {len(audit['repaired'])} trial(s) logged to MLflow" if audit.get("repaired") else ""
    head = f"study {audit['study']}: {states.get('COMPLETE', 0)} COMPLETE, {states.get('FAIL', 0)} FAIL, MLflow {ml['logged_trials']}"
    if problems:
        return False, f"lab study: FAILED: {head}: {'; '.join(problems)}{repaired}"
    return True, f"lab study: OK: {head}, nothing left WAITING or RUNNING{repaired}"
