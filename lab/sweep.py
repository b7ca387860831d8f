"""Optuna sweeps over the scoring knobs (and a small grid of index builds), re-scored offline from
pass caches (and, for rerank_weight and shortlist, the rerank-score cache: lab/rerank.py), tracked in
MLflow (one run per study worker: params, the index manifests, every trial's metrics by step, plots
and the best parameters as artefacts)."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any, cast

from ragx.eval.presets import EvalConfig
from ragx.scoring.candidates import PassCaps, shared_bm25
from ragx.scoring.params import Params

from .batches import run_batches
from .builds import build, prepare
from .caches import read_ref, shared_passes
from .cluster import rdb_storage
from .configs import check_not_heldout, package_defaults, package_search_defaults, train_sets
from .passes import load_cache
from .rerank import shortlist_scorer
from .sensitivity import sensitivity_plot
from .shown import IndexProgress
from .training import Objective, builds_of, load_training
from .vectorised import WEIGHTS

PARAM_TYPES = {f.name: f.type for f in dataclasses.fields(Params)}


def storage_url(spec: str | None, cache_root: Path, optuna_cfg=None) -> Any:
    """None -> a SQLite file in the cache; 'journal:PATH' -> a journal file; anything else: an RDB URL
    (postgresql://user:password@host:port/db for several machines). With `optuna_cfg`, an RDB storage
    gets heartbeats and the retry of trials whose worker died (lab.cluster.rdb_storage)."""
    import optuna

    if not spec:
        cache_root.mkdir(parents=True, exist_ok=True)
        spec = f"sqlite:///{(cache_root / 'optuna.db').resolve()}"
    if spec.startswith("journal:"):
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend

        return JournalStorage(JournalFileBackend(spec.removeprefix("journal:")))
    if "://" not in spec:
        from ragx.errors import UsageError

        raise UsageError(f"optuna.storage={spec!r}: null (a SQLite file in cache_root), journal:PATH or an RDB URL "
                         "(sqlite:///PATH, postgresql://...)")
    from sqlalchemy.exc import ArgumentError

    try:
        return rdb_storage(spec, optuna_cfg) if optuna_cfg is not None else optuna.storages.RDBStorage(spec)
    except ArgumentError as exc:  # an unknown scheme or a malformed URL: bad input, not a traceback
        from ragx.errors import UsageError

        raise UsageError(f"optuna.storage={spec!r}: not a database URL SQLAlchemy can open ({exc})") from None


def pass_root(cfg) -> Path:
    """Where pass caches live: `pass_cache` (a folder every worker can read, e.g. on NFS) or the cache root."""
    return Path(cfg.get("pass_cache") or Path(cfg.cache_root) / "passes")


def caps_of(cfg) -> PassCaps:
    """The pass caps the config asks for, each a number of PassCaps' own type, or for a text cap one
    of the values its search setting allows (config.CHOICES; a usage error otherwise)."""
    from ragx.config import CHOICES
    from ragx.errors import UsageError

    values = dict(cfg.caps)
    for f in dataclasses.fields(PassCaps):
        if f.name not in values:
            continue
        if f.type in (str, "str"):
            choices = CHOICES[f"search.{f.name}"]
            if not isinstance(values[f.name], str) or not choices.allows(values[f.name]):
                raise UsageError(f"caps.{f.name}={values[f.name]!r}: one of {', '.join(choices.values())}")
            continue
        value, whole = values[f.name], f.type in (int, "int")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (whole and not isinstance(value, int)) or value < 0:
            raise UsageError(f"caps.{f.name}={value!r}: a {'whole ' if whole else ''}number from 0 up")
    unknown = sorted(set(values) - {f.name for f in dataclasses.fields(PassCaps)})
    if unknown:
        raise UsageError(f"caps: unknown key(s) {', '.join(unknown)}")
    return PassCaps(**values)


def load_passes(cfg, reporter=None, dataset=None) -> dict[str, dict[str, Any]]:
    """Per build: cached passes (built under a lock when no worker has yet), file paths and labels, of
    `dataset` (default: the run's `dataset`) at the run's split.

    With `passes_from=shared` a worker opens no index at all: it loads the caches that the refs in the
    shared pass folder name (written by `python -m lab cache` on the machine that holds the index);
    its `corpus` is then None."""
    dataset = cfg.dataset if dataset is None else dataset
    root = pass_root(cfg)
    caps = caps_of(cfg)
    names = {b["name"]: f"{dataset.name}-{cfg.split}-{b['name']}" for b in cfg.sweep.builds}
    out: dict[str, dict[str, Any]] = {}
    if cfg.get("passes_from", "index") == "shared":
        for b, name in names.items():
            passes, meta = load_cache(read_ref(root, name))
            labelled = [_Labelled(qid, files) for qid, files in meta["labels"].items()]
            out[b] = {"passes": passes, "meta": meta, "corpus": None, "queries": labelled, "scorer": None}
        return out
    base, queries = prepare(dataset, cfg.split, reporter)
    for b in cfg.sweep.builds:
        corpus = build(base, b["name"], dict(b.get("settings") or {}), Path(cfg.cache_root) / "builds" / dataset.name, reporter)
        folder, built = shared_passes(corpus, queries, caps, root, names[b["name"]])
        if built:
            print(f"lab: cached passes for build {b['name']} in {folder}", flush=True)
        passes, meta = load_cache(folder)
        scorer = shortlist_scorer(corpus)
        out[b["name"]] = {"passes": passes, "meta": meta, "corpus": corpus, "queries": queries, "scorer": scorer}
    return out


def check_rerank_space(space: dict[str, list], data: dict[str, dict[str, Any]]) -> None:
    """A space that can give rerank_weight > 0 needs a reranker (and chunk texts) for every build."""
    if "rerank_weight" in space and float(space["rerank_weight"][1]) > 0:
        lacking = [b for b, d in data.items() if d.get("scorer") is None]
        if lacking:  # bad input: one line, exit 2
            print(f"lab: the sweep space has rerank_weight but build(s) {lacking} have no reranker: set [rerank] model "
                  "(e.g. in ~/.ragxrc) and run with passes_from=index (rerank scores need the chunk texts)", file=sys.stderr)
            raise SystemExit(2)


@dataclasses.dataclass
class _Labelled:
    """The part of a labelled query a sweep needs (its labels), rebuilt from a cache's meta."""

    id: str
    files: dict[str, int]


def suggest(trial, space: dict[str, list], defaults: Params) -> Params:
    changes = {}
    for name, (lo, hi) in space.items():
        kind = PARAM_TYPES[name]
        if kind in (int, "int"):
            changes[name] = trial.suggest_int(name, int(lo), int(hi))
        else:
            changes[name] = trial.suggest_float(name, float(lo), float(hi))
    return defaults.replace(**changes)


def trial_params(best: dict[str, Any], defaults: Params) -> tuple[str, Params]:
    build_name = best.get("build", "base")
    return build_name, defaults.replace(**{k: v for k, v in best.items() if k in PARAM_TYPES})


def check_sweep_config(cfg) -> None:
    """The sweep's settings, checked before any pass is built: a usage error (exit 2) names the first bad one."""
    from ragx.errors import UsageError
    from ragx.eval.metrics import METRIC_NAMES

    check_not_heldout(cfg, "sweep")
    objective = str(cfg.sweep.objective)
    unknown = [n.strip() for n in objective.split("+") if n.strip() not in METRIC_NAMES]
    if unknown:
        raise UsageError(f"sweep.objective={objective!r}: unknown metric {unknown[0]!r} (one of {', '.join(METRIC_NAMES)}, or several joined by '+')")
    guard = cfg.get("guard", 1.0)
    if isinstance(guard, bool) or not isinstance(guard, (int, float)) or guard < 0:
        raise UsageError(f"guard={guard!r}: a number from 0 up")
    n = cfg.sweep.get("n_trials")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise UsageError(f"sweep.n_trials={n!r}: a whole number from 1 up")
    for name, bounds in dict(cfg.sweep.space).items():
        if name not in PARAM_TYPES:
            raise UsageError(f"sweep.space.{name}: not a search setting (ragx/scoring/params.py names them)")
        values: list[Any] = list(bounds) if not isinstance(bounds, (str, int, float)) else [bounds]
        whole = PARAM_TYPES[name] in (int, "int")
        if (len(values) != 2 or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values)
                or (whole and any(not isinstance(v, int) for v in values))):
            raise UsageError(f"sweep.space.{name}={values!r}: a range [low, high] of two {'whole ' if whole else ''}numbers")
        if values[0] > values[1]:
            raise UsageError(f"sweep.space.{name}={values!r}: an empty range (low above high)")
    block_of(cfg.optuna)  # says what a block may be (a usage error)
    spec = cfg.optuna.storage
    if spec and "://" not in str(spec) and not str(spec).startswith("journal:"):
        storage_url(str(spec), Path(cfg.cache_root))  # says what a storage may be (a usage error)
    check_caps_serve(caps_of(cfg), dict(cfg.sweep.space), package_defaults())


def check_caps_serve(caps: PassCaps, space: dict[str, Any], defaults: Params) -> None:
    """The cached pass must hold every candidate a trial can ask for: seeds and hops up to the space's
    highs (or the defaults' value where the sweep leaves them alone), neighbours down to its lowest
    query floor. A narrower pass would score trials on fewer candidates than `ragx query` takes with
    the same settings, silently."""
    from ragx.errors import UsageError

    for name in ("dense_n", "lexical_n", "hops"):
        need = int(space[name][1]) if name in space else int(getattr(defaults, name))
        if need > getattr(caps, name):
            raise UsageError(f"caps.{name}={getattr(caps, name)} is narrower than the sweep asks ({name} up to {need}): "
                             f"raise caps.{name} or narrow the space")
    floor = float(space["query_floor"][0]) if "query_floor" in space else defaults.query_floor
    if caps.hops and floor < caps.query_floor:
        raise UsageError(f"caps.query_floor={caps.query_floor} is above the sweep's lowest query_floor ({floor}): "
                         "the pass would miss neighbours a trial admits")


def sampler_seed(seed: int, worker: int, trials_in_study: int) -> int:
    """TPE's seed: the configured seed and the worker for a fresh study (a rerun of a fresh study is
    reproducible), and also the trials the study already holds, so a resumed study (a second launch, a
    worker restarted) does not replay the random start-up points it drew before."""
    return int(seed) + worker + 1_000_003 * trials_in_study


def _open_study(cfg, worker: int, sets: list[str], bm25: dict):
    """The study (created, or loaded to resume) with this worker's sampler and what it is tuned on."""
    import optuna

    study = optuna.create_study(
        study_name=cfg.optuna.study_name,
        storage=storage_url(cfg.optuna.storage, Path(cfg.cache_root), cfg.optuna),
        direction="maximize",
        load_if_exists=True,
    )
    # what the study was tuned on: promotion refuses a study whose training data is held out
    study.set_user_attr("train_sets", sorted(set(study.user_attrs.get("train_sets", [])) | set(sets)))
    study.set_user_attr("train_splits", sorted(set(study.user_attrs.get("train_splits", [])) | {str(cfg.split)}))
    study.set_user_attr("bm25", bm25)
    return study


def _batch_functions(evaluate, space: dict, defaults, builds: list[str], me: str, run_id: str):
    """(propose, evaluate_many) for lab.batches.run_batches: a trial's build and params suggested; a
    batch re-scored together, each trial's metrics, worker, MLflow run and share of the time kept."""

    def propose(trial) -> tuple[str, Params]:
        name = trial.suggest_categorical("build", builds) if len(builds) > 1 else builds[0]
        return name, suggest(trial, space, defaults)

    def evaluate_many(proposals: list[tuple[str, Params]]) -> list[tuple[float, dict[str, Any]]]:
        began = time.perf_counter()
        results = evaluate.many(proposals)
        each = (time.perf_counter() - began) / len(proposals)  # vs the trial's wall time: overheads
        return [(v, {"worker": me, "mlflow_run": run_id, "rescore_seconds": each, **attrs}) for v, attrs in results]

    return propose, evaluate_many


@package_search_defaults()
def run(cfg, worker: int = 0, n_trials: int | None = None, study_trials: int | None = None, sets: dict | None = None) -> dict[str, Any]:
    """One worker of a study. `n_trials`: this worker's trials; `study_trials`: run until the study holds
    that many COMPLETE trials (then `n_trials` is only a cap); neither: sweep.n_trials for this worker.
    `sets`: the training data already loaded (`load_training`), e.g. by a benchmark."""
    import mlflow
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    check_sweep_config(cfg)  # before any pass is built
    sets = sets if sets is not None else load_training(cfg, load_passes, IndexProgress())
    data = builds_of(sets)
    # the shipped defaults, never an rc's [search] (lab.configs.package_search_defaults), with the BM25
    # the passes were scored with (caps.bm25_*): what every trial's lexical scores are
    bm25 = shared_bm25([caps_of(cfg)])
    defaults = package_defaults().replace(**bm25)
    builds = list(next(iter(sets.values())))
    objective_name = cfg.sweep.objective
    space = {k: list(v) for k, v in cfg.sweep.space.items()}
    check_rerank_space(space, data)
    evaluate = Objective(sets, objective_name, defaults, cfg.get("guard", 1.0))
    names = "+".join(sets)

    study = _open_study(cfg, worker, list(sets), bm25)
    sampler = make_sampler(cfg.optuna, sampler_seed(int(cfg.optuna.seed), worker, len(study.trials)), space, builds)
    before = rerank_counts(data)  # pairs this worker computes or reads: its trials' and the defaults' below
    # the current defaults' objective on the same training data: the gain a promotion claims (lab/promote.py)
    study.set_user_attr("defaults_value", evaluate(defaults, builds[0])[0])
    start_tracking(cfg)
    per_worker = n_trials if n_trials is not None else (None if study_trials else int(cfg.sweep.n_trials))
    with mlflow.start_run(run_name=f"{cfg.optuna.study_name}-w{worker}") as active:
        run_id = active.info.run_id
        _log_run(cfg, names, per_worker, study_trials, builds, space, evaluate, data, worker)
        propose, evaluate_many = _batch_functions(evaluate, space, defaults, builds, f"{socket.gethostname()}/{worker}", run_id)
        started, cpu = time.perf_counter(), time.process_time()
        timings: dict[str, float] = {}
        trials = run_batches(study, sampler, propose, evaluate_many, lambda written: track_trials(run_id, written),
                             batch=int(cfg.optuna.get("batch") or 1), per_worker=per_worker, study_trials=study_trials,
                             block=block_of(cfg.optuna), shared=structural, timings=timings)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        counts = {k: v - before[k] for k, v in rerank_counts(data).items()}
        mlflow.log_metric("sweep_seconds", seconds)
        mlflow.log_metrics({"rerank_pairs_computed": counts["computed"], "rerank_pairs_cached": counts["hits"]})
        mlflow.log_metric("trials_run", trials)
        best = study.best_trial
        mlflow.log_metrics({f"best_{k}": v for k, v in metric_names(best.user_attrs).items()})
        mlflow.log_text(best_params_toml(best.params, best.user_attrs, cfg), "best_params.toml")
    return {"study": study, "seconds": seconds, "trials": trials, "timings": timings, "cpu_seconds": cpu, "run_id": run_id, "sets": sets, "data": data, "defaults": defaults,
            "rerank": counts, "evaluate": evaluate}


def _log_run(cfg, names: str, per_worker, study_trials, builds: list[str], space: dict, evaluate, data: dict, worker: int) -> None:
    """The worker's MLflow run: what it tunes, on what, and the index manifests of its passes."""
    import mlflow

    mlflow.set_tags({"study": cfg.optuna.study_name, "dataset": names, "split": cfg.split, "worker": worker,
                     "host": socket.gethostname(), "pid": os.getpid()})
    mlflow.log_params({"dataset": names, "split": cfg.split, "objective": cfg.sweep.objective, "n_trials": per_worker, "study_trials": study_trials,
                       "caps": json.dumps(dict(cfg.caps)), "builds": ",".join(builds), "space": json.dumps(space),
                       "guard": evaluate.guard, "references": json.dumps(evaluate.references)})
    mlflow.log_dict({key: d["meta"]["index"] for key, d in data.items()}, "index_manifests.json")


def block_of(optuna_cfg) -> int:
    """`optuna.block`: trials of a batch that share one structure (tpe and random; 1 for qmc and grid, whose
    points are their own: a grid's batch shares its structure already)."""
    from ragx.errors import UsageError

    block = optuna_cfg.get("block", 1)
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise UsageError(f"optuna.block={block!r}: a whole number from 1 up")
    return block if str(optuna_cfg.get("sampler") or "tpe") in ("tpe", "random") else 1


def structural(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters a block of trials shares: the build and every knob that changes the structure
    (lab/vectorised.py: all but its WEIGHTS), so that the block is ranked in one go."""
    return {k: v for k, v in params.items() if k not in WEIGHTS}


def make_sampler(optuna_cfg, seed: int, space: dict[str, list] | None = None, builds: list[str] | None = None) -> Any:
    """`optuna.sampler`: tpe (a batch's trials spread by the constant liar), random, qmc (scrambled
    Sobol points, seeded per worker so that workers draw different points), or grid (`optuna.grid_points`
    values per knob of `space`, walked so that a batch shares its structure: lab/grid.py)."""
    import optuna

    from ragx.errors import UsageError

    kind = str(optuna_cfg.get("sampler") or "tpe")
    if kind == "grid":
        from .grid import OrderedGrid, grid_axes

        points = optuna_cfg.get("grid_points") or 5
        if isinstance(points, bool) or not isinstance(points, int) or points < 2:
            raise UsageError(f"optuna.grid_points={points!r}: a whole number from 2 up")
        whole = {n: PARAM_TYPES[n] in (int, "int") for n in space or {}}
        return OrderedGrid(grid_axes(space or {}, builds or ["base"], points, whole), seed)
    if kind == "tpe":
        return optuna.samplers.TPESampler(seed=seed, constant_liar=True)
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if kind == "qmc":
        return optuna.samplers.QMCSampler(seed=seed, scramble=True, warn_independent_sampling=False)
    raise UsageError(f"optuna.sampler={kind!r}: tpe, random, qmc or grid")


def track_trials(run_id: str, trials: list[Any], client: Any = None) -> None:
    """Every written trial's objective and numeric attributes at step = its number, in as few
    `log_batch` calls as MLflow allows (1,000 values each)."""
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    now = int(time.time() * 1000)
    metrics = [Metric(key, float(value), now, t.number)
               for t in trials for key, value in {"objective": t.value, **metric_names(t.user_attrs)}.items()]
    client = client or MlflowClient()
    for start in range(0, len(metrics), 1000):
        client.log_batch(run_id, metrics=metrics[start:start + 1000], synchronous=True)


def rerank_counts(data: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Cross-encoder pairs computed and read from the score cache so far, over every build's scorer
    (builds of one corpus share one reranker: each counted once)."""
    scorers = {id(d["scorer"].reranker): d["scorer"] for d in data.values() if d.get("scorer") is not None}
    return {"computed": sum(s.reranker.computed for s in scorers.values()), "hits": sum(s.reranker.hits for s in scorers.values())}


def metric_names(values: dict[str, float]) -> dict[str, float]:
    """The numeric user attributes (not e.g. `worker`); MLflow metric names can't hold '@': nDCG@10 -> nDCG_at_10."""
    return {k.replace("@", "_at_"): v for k, v in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def start_tracking(cfg) -> None:
    """Point MLflow at the configured store. A local SQLite store gets its folder and a local artefact
    root; a tracking server (http://...) keeps artefacts where it was told to (its shared root)."""
    import mlflow
    from mlflow.exceptions import MlflowException

    uri = cfg.mlflow.tracking_uri
    if uri.startswith("sqlite:///"):
        Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    mlflow.set_tracking_uri(uri)
    if mlflow.get_experiment_by_name(cfg.mlflow.experiment) is None:
        location = None
        if not uri.startswith(("http://", "https://")):
            artifacts = Path(cfg.mlflow.artifacts).resolve()
            artifacts.mkdir(parents=True, exist_ok=True)
            location = artifacts.as_uri()
        try:
            mlflow.create_experiment(cfg.mlflow.experiment, artifact_location=location)
        except MlflowException:  # another worker created it in between
            if mlflow.get_experiment_by_name(cfg.mlflow.experiment) is None:
                raise
    mlflow.set_experiment(cfg.mlflow.experiment)


def best_params_toml(params: dict[str, Any], metrics: dict[str, float], cfg) -> str:
    lines = [f"# best trial of study {cfg.optuna.study_name} ({'+'.join(train_sets(cfg))} {cfg.split})"]
    lines += [f"# {k} = {v:.4f}" for k, v in metrics.items() if isinstance(v, (int, float))]
    lines.append("[search]")
    lines += [f"{k} = {json.dumps(v)}" for k, v in params.items() if k in PARAM_TYPES]
    if "build" in params:
        lines.append(f"# build = {params['build']!r}")
    return "\n".join(lines) + "\n"


def live_eval_seconds(corpus, queries, params: Params) -> tuple[float, dict[str, float]]:
    """Time one live evaluation of the split (passes + scoring + metrics), as `ragx eval` would run it."""
    started = time.perf_counter()
    doc = corpus.evaluate(queries, [EvalConfig("live", "graph", params, expand=False)])
    return time.perf_counter() - started, doc["files"]["means"]["live"]


IMPORTANCE = "fANOVA (optuna.importance.FanovaImportanceEvaluator, seed 0)"  # the one evaluator of every importance


def importance_evaluator():
    import optuna

    return optuna.importance.FanovaImportanceEvaluator(seed=0)


def save_plots(study, folder: Path, sens: dict[str, dict[str, list]], best_value: float, objective: str, pooled: bool = False) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure
    from optuna.visualization import matplotlib as ovm

    folder.mkdir(parents=True, exist_ok=True)
    made = []
    plots: list[tuple[str, Any, dict[str, Any], str]] = [("history", ovm.plot_optimization_history, {}, "optimization history"),
             ("importances", ovm.plot_param_importances, {"evaluator": importance_evaluator()}, f"importances: {IMPORTANCE}")]
    for name, fn, kwargs, title in plots:
        try:
            ax: Any = fn(study, **kwargs)  # optuna annotates Axes; some plots return an array of Axes
            fig = cast(Figure, ax.figure if hasattr(ax, "figure") else ax[0].figure)  # a top-level figure
            fig.set_size_inches(8, 4.5)
            fig.axes[0].set_title(title, fontsize=10)
            fig.tight_layout()
            fig.savefig(folder / f"{name}.png", dpi=110)
            plt.close(fig)
            made.append(folder / f"{name}.png")
        except Exception as exc:  # noqa: BLE001 - a plot that cannot be drawn (too few trials) is skipped
            print(f"lab: no {name} plot ({exc})", flush=True)
    made.append(sensitivity_plot(sens, best_value, objective, pooled, folder / "sensitivity.png"))
    return made
