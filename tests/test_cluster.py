"""Sweeps beyond one machine: shared content-addressed pass caches raced by two processes, a worker
killed mid-trial (its trial failed by the heartbeat and retried once, none counted twice), and the
whole cluster for real (PostgreSQL + MLflow server + workers, via scripts/tools/lab_cluster.sh)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("polars")
pytest.importorskip("optuna")

from fakes import HashEmbedder, indexed_topic_corpus

from lab.caches import content_key, read_ref, shared_passes
from lab.passes import build_cache, code_hash, index_fingerprint, load_cache
from ragx.api import Corpus
from ragx.scoring.candidates import PassCaps

REPO = Path(__file__).resolve().parent.parent
CAPS = PassCaps(dense_n=30, lexical_n=30, hops=2, query_floor=0.1)


@pytest.fixture
def corpus_and_queries(tmp_path, fake_model):
    words = ["telescope orbit", "bread oven yeast", "sail keel", "comet flour"]
    return indexed_topic_corpus(tmp_path, 8, {w: [f"cooking-{i}.md"] for i, w in enumerate(words)})


def _racer(corpus_root, queries, root, barrier, results, locks: bool):
    """One worker (a fresh process): wait for the other, then ask for the same cache at the same moment."""
    import fcntl

    import ragx.models.registry as registry

    registry.make_embedder = lambda *a, **k: HashEmbedder()

    if not locks:  # a filesystem whose locks do nothing: only the atomic rename protects the cache
        fcntl.flock = lambda *a, **k: None

    def slow_build(corpus, qs, caps, folder):
        out = build_cache(corpus, qs, caps, folder)
        time.sleep(0.5)  # hold the window open: the other worker arrives while this one builds
        return out

    barrier.wait()
    folder, built = shared_passes(Corpus(corpus_root), queries, CAPS, root, "tiny-train-base", build=slow_build)
    results.put((str(folder), built, os.getpid()))


@pytest.mark.parametrize("locks", [True, False], ids=["locked", "no-locks"])
def test_two_processes_racing_for_one_cache_leave_one_complete_cache(corpus_and_queries, tmp_path, locks):
    corpus, queries = corpus_and_queries
    ctx = multiprocessing.get_context("spawn")  # not fork: polars' thread pool does not survive a fork
    barrier, results = ctx.Barrier(2), ctx.Queue()
    shared = tmp_path / "shared"
    procs = [ctx.Process(target=_racer, args=(corpus.root, queries, shared, barrier, results, locks)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    got = [results.get(timeout=5) for _ in procs]
    folders = {g[0] for g in got}
    assert len(folders) == 1  # both workers use the same cache
    if locks:
        assert sorted(g[1] for g in got) == [False, True]  # one built it, the other waited and read it
    assert sorted(p.name for p in shared.iterdir() if ".tmp-" in p.name) == []  # no half-written leftovers
    folder = Path(folders.pop())
    assert read_ref(shared, "tiny-train-base") == folder
    passes, meta = load_cache(folder)
    fresh, _ = load_cache(build_cache(corpus, queries, CAPS, tmp_path / "again"))
    assert [p.qid for p in passes] == [q.id for q in queries]
    assert all((a.nodes == b.nodes).all() and (a.qsim == b.qsim).all() for a, b in zip(passes, fresh))


def test_cache_key_follows_index_caps_code_and_queries(corpus_and_queries):
    corpus, queries = corpus_and_queries
    index, code = index_fingerprint(corpus), code_hash()
    key = content_key(index, CAPS, code, queries)
    assert key == content_key(dict(index), CAPS, code, list(queries))  # content, not identity
    assert key != content_key({**index, "generation": -1}, CAPS, code, queries)
    assert key != content_key(index, PassCaps(31, 30, 2, 0.1), code, queries)
    assert key != content_key(index, CAPS, code + "x", queries)
    assert key != content_key(index, CAPS, code, queries[:-1])


# A worker of a study whose every trial takes a while: the kill lands mid-trial.
WORKER = textwrap.dedent("""
    import sys, time, optuna
    from omegaconf import OmegaConf
    from lab.cluster import optimize, rdb_storage
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url, name, seconds, worker = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    if len(sys.argv) > 6:  # a start time shared by every worker: they all check the budget at once
        time.sleep(max(0.0, float(sys.argv[6]) - time.time()))
    cfg = OmegaConf.create({"heartbeat_interval": 1, "grace_period": 5, "max_retry": 2})
    study = optuna.create_study(study_name=name, storage=rdb_storage(url, cfg), load_if_exists=True)
    def objective(trial):
        trial.set_user_attr("worker", worker)
        x = trial.suggest_float("x", 0, 1)
        time.sleep(seconds)
        return x
    optimize(study, objective, [], None, int(sys.argv[5]), poll=0.5)
""")


def kill_drill(url: str, tmp_path: Path, after: float, target: int = 3) -> dict:
    """Two workers on one study; worker A is killed with SIGKILL inside a trial (`after` seconds after
    the trial shows RUNNING: 0 may land before its first heartbeat); B finishes the study. The budget is
    small, so B reaches it (COMPLETE + the dead RUNNING one) before the grace period ends: it must then
    wait, and run the re-queued trial."""
    import optuna

    from lab.cluster import audit_study, rdb_storage

    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    name = f"drill-{os.getpid()}-{time.time_ns()}"
    storage = rdb_storage(url, {"heartbeat_interval": None})  # the schema first: workers must not race to create it
    a = subprocess.Popen([sys.executable, str(script), url, name, "30", "A", str(target)], env=env)
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            study = optuna.load_study(study_name=name, storage=storage)
            if study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
                break
        except KeyError:
            pass
        assert a.poll() is None, "worker A ended before it ran a trial"
        time.sleep(0.1)
    else:
        pytest.fail("worker A never ran a trial")
    time.sleep(after)
    os.kill(a.pid, signal.SIGKILL)
    a.wait()
    b = subprocess.run([sys.executable, str(script), url, name, "0.05", "B", str(target)], env=env, timeout=120)
    assert b.returncode == 0
    return audit_study(optuna.load_study(study_name=name, storage=storage))


def never_beaten_drill(url: str, tmp_path: Path, target: int = 3) -> dict:
    """A worker that died between creating its trial and its first heartbeat: the trial is RUNNING with
    no heartbeat row at all, which Optuna's own stale check never sees. Worker B must still fail it
    after the grace period, re-queue it once and finish the study."""
    import optuna

    from lab.cluster import audit_study, rdb_storage

    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    name = f"never-beat-{os.getpid()}-{time.time_ns()}"
    storage = rdb_storage(url, {"heartbeat_interval": None})
    optuna.create_study(study_name=name, storage=storage).ask()  # asked, never told, never beaten
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    b = subprocess.run([sys.executable, str(script), url, name, "0.05", "B", str(target)], env=env, timeout=120)
    assert b.returncode == 0
    return audit_study(optuna.load_study(study_name=name, storage=storage))


def check_drill(audit: dict, target: int = 3) -> None:
    assert audit["states"] == {"FAIL": 1, "COMPLETE": target}  # nothing left RUNNING or WAITING
    assert audit["failed"] == [0] and list(audit["retries"].values()) == [0]  # the killed trial, retried once
    assert audit["duplicate_numbers"] == 0 and audit["duplicate_complete_params"] == 0
    assert audit["complete_by_worker"] == {"B": target}


def budget_race(url: str, tmp_path: Path, workers: int = 4, budget: int = 1) -> dict:
    """`workers` workers wake at the same instant on an empty study whose budget is smaller than their
    number: each sees 0 COMPLETE + 0 RUNNING, and without one lock around "check, then start a trial"
    each would start one and the study would end over its budget."""
    import optuna

    from lab.cluster import audit_study, rdb_storage

    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    name = f"race-{os.getpid()}-{time.time_ns()}"
    storage = rdb_storage(url, {"heartbeat_interval": None})
    optuna.create_study(study_name=name, storage=storage)
    start_at = time.time() + 8  # after every worker has imported optuna and loaded the study
    procs = [subprocess.Popen([sys.executable, str(script), url, name, "1.0", f"W{i}", str(budget), str(start_at)], env=env)
             for i in range(workers)]
    assert [p.wait(timeout=120) for p in procs] == [0] * workers
    return audit_study(optuna.load_study(study_name=name, storage=storage))


def test_a_trial_whose_worker_died_before_its_first_heartbeat_is_failed_and_retried(tmp_path):
    check_drill(never_beaten_drill(f"sqlite:///{tmp_path / 'optuna.db'}", tmp_path))


def test_workers_starting_together_never_run_past_the_study_budget(tmp_path):
    audit = budget_race(f"sqlite:///{tmp_path / 'optuna.db'}", tmp_path)
    assert audit["states"] == {"COMPLETE": 1} and audit["duplicate_numbers"] == 0


@pytest.mark.parametrize("after", [0.0, 2.5], ids=["at-start", "after-heartbeats"])
def test_worker_killed_mid_trial_is_failed_retried_once_and_study_completes(tmp_path, after):
    check_drill(kill_drill(f"sqlite:///{tmp_path / 'optuna.db'}", tmp_path, after))


# --- the cluster for real: PostgreSQL + MLflow server + workers -------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    state = Path(tempfile.mkdtemp(prefix="ragx-cluster-", dir="/tmp"))
    state.chmod(0o755)  # PostgreSQL runs as the `postgres` user when we are root
    env = {**os.environ, "LAB_CLUSTER_DIR": str(state), "LAB_PG_PORT": str(free_port()), "LAB_MLFLOW_PORT": str(free_port()),
           "LAB_PYTHON": sys.executable}
    script = [shutil.which("bash"), str(REPO / "scripts" / "tools" / "lab_cluster.sh")]
    up = subprocess.run([*script, "up"], env=env, capture_output=True, text=True, timeout=600)
    if up.returncode == 3:
        shutil.rmtree(state, ignore_errors=True)
        pytest.skip(f"PostgreSQL cannot be installed on this machine: {up.stderr.strip()}")
    try:
        assert up.returncode == 0, up.stderr
        urls = dict(line.removeprefix("export ").split("=", 1) for line in (state / "env").read_text().splitlines())
        yield {"env": env, "script": script, "state": state, "urls": {k: v.strip("'") for k, v in urls.items()}}
    finally:
        subprocess.run([*script, "down", "--purge"], env=env, capture_output=True, timeout=120)


def tiny_beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    topics = ["rivers", "mountains", "boats", "bread", "stars"]
    docs = {f"d{i}": f"{t} " * 3 + f"document {i} about {t}" for i, t in enumerate(topics * 4)}
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": k, "title": k, "text": v}) for k, v in docs.items()) + "\n")
    (folder / "queries.jsonl").write_text("\n".join(json.dumps({"_id": f"q{i}", "text": t}) for i, t in enumerate(["rivers", "boats", "stars"])) + "\n")
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\nq1\td2\t1\nq2\td4\t1\n")
    return folder


@pytest.mark.cluster
@pytest.mark.model
def test_cluster_two_workers_share_one_postgres_study_tracked_by_the_mlflow_server(cluster, tmp_path):
    data = tiny_beir(tmp_path / "tiny")
    overrides = ["sweep=quick", "dataset.name=tiny", f"dataset.data_dir={data}", f"dataset.cache={tmp_path / 'folder'}",
                 f"cache_root={tmp_path / 'cache'}", "optuna.study_name=ci-cluster", "study_trials=12",
                 "optuna.batch=4", "trials=6"]  # batches of 4, at most 6 trials a worker: both workers write
    # (the cap, not the scheduler, shares the budget: a worker that starts late, under load, still finds
    # 6 trials left, so the split below is exact however the two are scheduled)
    run = subprocess.run([*cluster["script"], "run", "2", *overrides], env=cluster["env"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    audit = json.loads(run.stdout.strip().splitlines()[-1])
    assert audit["states"] == {"COMPLETE": 12} and audit["duplicate_numbers"] == 0
    assert audit["complete_by_worker"] == {f"{socket.gethostname()}/{i}": 6 for i in range(2)}
    ml = audit["mlflow"]
    assert ml["tracking_uri"].startswith("http://127.0.0.1:") and ml["runs"] == 2
    assert ml["logged_trials"] == 12 and ml["matches_complete_trials"] and ml["duplicate_steps"] == 0
    assert cluster["urls"]["RAGX_LAB_STORAGE"].startswith("postgresql")
    # the workers loaded the one shared pass cache (passes_from=shared), built once by `lab cache`
    assert [p.name for p in (cluster["state"] / "passes" / "refs").iterdir()] == ["tiny-train-base"]


@pytest.mark.cluster
def test_cluster_workers_starting_together_never_run_past_the_budget_on_postgres(cluster, tmp_path):
    audit = budget_race(cluster["urls"]["RAGX_LAB_STORAGE"], tmp_path)
    assert audit["states"] == {"COMPLETE": 1} and audit["duplicate_numbers"] == 0


@pytest.mark.cluster
def test_cluster_worker_killed_mid_trial_on_postgres(cluster, tmp_path):
    check_drill(kill_drill(cluster["urls"]["RAGX_LAB_STORAGE"], tmp_path, 2.5))


def test_folders_of_builds_killed_on_this_host_are_removed_by_the_next_build(corpus_and_queries, tmp_path):
    corpus, queries = corpus_and_queries
    shared = tmp_path / "shared"
    shared.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no longer runs
    key = content_key(index_fingerprint(corpus), CAPS, code_hash(), queries)
    host = socket.gethostname()
    left = shared / f"tiny-train-base-{key}.tmp-{host}-{dead.pid}"
    old_key = shared / f"tiny-train-base-0123.tmp-{host}-{dead.pid}"  # a build of an older key, killed too
    live = shared / f"tiny-train-base-0123.tmp-{host}-{os.getpid()}"  # a live process's: kept
    other_host = shared / f"tiny-train-base-{key}.tmp-elsewhere-{dead.pid}"  # another machine's: not ours to judge
    for folder in (left, old_key, live, other_host):
        folder.mkdir()
    folder, built = shared_passes(corpus, queries, CAPS, shared, "tiny-train-base")
    assert built and folder.exists()
    assert not left.exists() and not old_key.exists() and live.exists() and other_host.exists()
