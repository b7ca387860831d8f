"""Trials in batches (lab/batches.py): the same floats as one trial at a time, one transaction per batch,
nothing half-recorded on kill -9, retries before new trials, and an audit that fails on leftovers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("polars")
pytest.importorskip("optuna")

from fakes import indexed_topic_corpus

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def passes(tmp_path, fake_model):
    from lab.passes import build_cache, load_cache
    from ragx.scoring.candidates import PassCaps

    words = ["telescope orbit", "bread oven yeast", "sail keel", "comet flour", "harbour nebula light"]
    corpus, queries = indexed_topic_corpus(tmp_path, 8, {w: [f"cooking-{i % 8}.md", f"sailing-{(i * 3) % 8}.md"] for i, w in enumerate(words)})
    folder = build_cache(corpus, queries, PassCaps(dense_n=60, lexical_n=60, hops=3, query_floor=0.0), tmp_path / "cache")
    loaded, meta = load_cache(folder)
    return loaded, meta, {q.id: q.files for q in queries}, corpus.settings.search


def test_a_batch_scores_each_configuration_digit_for_digit_as_one_at_a_time(passes):
    from lab.rescore import rescore, rescore_means
    from ragx.eval.metrics import Evaluator

    loaded, meta, qrels, defaults = passes
    many = [defaults, defaults.replace(hops=2, decay=0.7, query_floor=0.1), defaults.replace(dense_weight=0.0, file_chunks=3),
            defaults.replace(lexical_n=0, lexical_weight=0.0, rrf_k=5.0)]
    together = rescore_means(loaded, many, Evaluator(qrels), meta["paths"])
    alone = [rescore(loaded, p, qrels, meta["paths"]).means for p in many]
    assert together == alone
    assert len({json.dumps(m, sort_keys=True) for m in alone}) > 1  # the configurations really differ


# A worker on a toy objective, with the batch engine and a local MLflow store; argv: optuna URL, study,
# mlflow URI, worker name, study budget, batch size.
WORKER = textwrap.dedent("""
    import sys, optuna, mlflow
    from lab.batches import run_batches
    from lab.sweep import track_trials
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url, name, uri, worker, budget, batch = sys.argv[1:7]
    study = optuna.create_study(study_name=name, storage=url, load_if_exists=True, direction="maximize")
    mlflow.set_tracking_uri(uri)
    exp = mlflow.get_experiment_by_name("ragx-lab") or mlflow.get_experiment(mlflow.create_experiment("ragx-lab"))
    run = mlflow.MlflowClient().create_run(exp.experiment_id, tags={"study": name})
    def evaluate_many(xs):
        return [(x, {"worker": worker, "mlflow_run": run.info.run_id, "nDCG@10": x}) for x in xs]
    n = run_batches(study, optuna.samplers.RandomSampler(seed=hash(worker) % 1000), lambda t: t.suggest_float("x", 0, 1),
                    evaluate_many, lambda written: track_trials(run.info.run_id, written),
                    batch=int(batch), per_worker=None, study_trials=int(budget), poll=0.2)
    print("wrote", n, flush=True)
""")


def start(tmp_path: Path, name: str, worker: str, budget: int, batch: int, hold: str = "") -> subprocess.Popen:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAGX_LAB_HOLD": hold}
    args = [sys.executable, str(script), f"sqlite:///{tmp_path / 'optuna.db'}", name, f"sqlite:///{tmp_path / 'mlflow.db'}", worker, str(budget), str(batch)]
    return subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)


def killed_at(proc: subprocess.Popen, phase: str) -> None:
    assert proc.stderr is not None
    line = ""
    while not line.startswith("lab: holding at") and proc.poll() is None:
        line = proc.stderr.readline()  # MLflow's and Optuna's log lines come first
    assert line.startswith(f"lab: holding at {phase}"), line
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def audit(tmp_path: Path, name: str) -> tuple[int, dict, str]:
    args = [sys.executable, "-m", "lab", "study", f"optuna.study_name={name}", f"optuna.storage=sqlite:///{tmp_path / 'optuna.db'}",
            f"mlflow.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}", f"cache_root={tmp_path / 'cache'}"]
    done = subprocess.run(args, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300, cwd=REPO)
    return done.returncode, json.loads(done.stdout.strip().splitlines()[-1]), done.stderr.strip()


def test_workers_killed_mid_batch_and_between_storage_and_tracking_leave_a_whole_study(tmp_path):
    """Worker A is killed inside its batch (nothing stored), worker B after storing its batch and
    before tracking it; C fills the budget. The audit logs B's batch to MLflow and passes."""
    import optuna

    optuna.create_study(study_name="drill", storage=f"sqlite:///{tmp_path / 'optuna.db'}", direction="maximize")
    a = start(tmp_path, "drill", "A", 40, 8, hold="evaluate:60")
    killed_at(a, "evaluate")
    b = start(tmp_path, "drill", "B", 40, 8, hold="tracking:60")
    killed_at(b, "tracking")
    study = optuna.load_study(study_name="drill", storage=f"sqlite:///{tmp_path / 'optuna.db'}")
    assert [t.user_attrs["worker"] for t in study.trials] == ["B"] * 8  # A stored nothing, B its whole batch
    c = start(tmp_path, "drill", "C", 40, 8)
    assert c.wait(timeout=120) == 0
    code, out, line = audit(tmp_path, "drill")
    assert code == 0 and len(line.splitlines()) == 1 and line.startswith("lab study: OK"), line
    assert out["states"] == {"COMPLETE": 40} and out["duplicate_numbers"] == 0
    assert out["repaired"] == sorted(t.number for t in study.trials if t.user_attrs["worker"] == "B")
    assert out["mlflow"]["logged_trials"] == 40 and out["mlflow"]["matches_complete_trials"]


def test_the_audit_fails_in_one_line_on_a_trial_left_waiting(tmp_path):
    import optuna

    study = optuna.create_study(study_name="leftover", storage=f"sqlite:///{tmp_path / 'optuna.db'}", direction="maximize")
    study.enqueue_trial({"x": 0.5})  # planted: a retry nobody ran
    code, out, line = audit(tmp_path, "leftover")
    assert code == 1 and out["states"] == {"WAITING": 1}
    assert len(line.splitlines()) == 1 and line.startswith("lab study: FAILED") and "1 WAITING" in line


def test_a_retry_runs_before_new_trials_and_counts_against_the_budget(tmp_path):
    import optuna

    study = optuna.create_study(study_name="retry", storage=f"sqlite:///{tmp_path / 'optuna.db'}", direction="maximize")
    study.enqueue_trial({"x": 0.125})  # what the retry callback leaves for a trial whose worker died
    proc = start(tmp_path, "retry", "A", 5, 3)
    assert proc.wait(timeout=120) == 0
    trials = optuna.load_study(study_name="retry", storage=f"sqlite:///{tmp_path / 'optuna.db'}").trials
    assert [t.state.name for t in trials] == ["COMPLETE"] * 5
    assert trials[0].params == {"x": 0.125} and trials[0].value == 0.125


def test_a_batch_is_stored_in_one_transaction_and_reads_back_as_optuna_writes_it(tmp_path, monkeypatch):
    """What Optuna reads back of a bulk-written batch equals what its own `add_trials` writes; a failure
    in the middle of writing a batch leaves none of it."""
    import optuna

    import lab.trial_store as trial_store

    dist = {"x": optuna.distributions.FloatDistribution(0, 1), "n": optuna.distributions.IntDistribution(1, 3),
            "b": optuna.distributions.CategoricalDistribution(["base", "k4"])}
    trials = [optuna.trial.create_trial(params={"x": i / 10, "n": 1 + i % 3, "b": ["base", "k4"][i % 2]}, distributions=dist,
                                        value=[i / 10, float("inf")][i == 4], user_attrs={"worker": "w", "nDCG@10": i / 7},
                                        system_attrs={"grid_id": i}) for i in range(5)]
    theirs = optuna.create_study(study_name="theirs", storage=f"sqlite:///{tmp_path / 'theirs.db'}")
    theirs.add_trials(trials)
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'optuna.db'}")
    study = optuna.create_study(study_name="tx", storage=storage, direction="maximize")
    real = trial_store._attrs
    monkeypatch.setattr(trial_store, "_attrs", lambda *a: 1 / 0)  # after the trials' own rows are inserted
    with pytest.raises(ZeroDivisionError):
        trial_store.add_complete(study, trials)
    assert study.trials == []
    monkeypatch.setattr(trial_store, "_attrs", real)
    assert [t.number for t in trial_store.add_complete(study, trials)] == [0, 1, 2, 3, 4]
    assert [t.number for t in trial_store.add_complete(study, trials[:2])] == [5, 6]

    def fields(t):
        return (t.number, t.state, t.value, t.params, t.distributions, t.user_attrs, t.system_attrs, t.datetime_start, t.datetime_complete)

    assert [fields(t) for t in study.trials[:5]] == [fields(t) for t in theirs.trials]
