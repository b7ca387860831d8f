"""`python -m lab COMMAND [hydra overrides]`

    cache    build (or refresh) the pass caches of a dataset split for every build of the sweep
    sweep    run an Optuna study on cached passes, tracked in MLflow; then sensitivity + plots
             (worker=N for extra workers on the same study; trials=N this worker's trials;
             study_trials=N: run until the study holds N complete trials; report=false skips the plots)
    study    audit a study: its trials by state, retries, duplicates, and the trials MLflow recorded
    models   index the dataset once per embedding model (models=[...], entries of model_catalog; vectors cached per
             model identity), then every preset's metrics, cross-model significance, chunks/s, query latency,
             vector memory/disk and window splits: a table, a plot, one MLflow run per model
    promote  check the study's best parameters on the held-out splits with `ragx eval`, and write
             them into ragx/defaults.toml (and the regression baselines) only if they are no worse

Overrides are Hydra's KEY=VALUE on configs/lab.yaml (configs/ holds it, configs/dataset/ and configs/sweep/),
e.g. `python -m lab sweep dataset=scifact split=train sweep=quick`, `sweep.n_trials=300`, `guard=0.5`,
`optuna.storage=postgresql://...`; `train_sets=[scifact,dendron-vault]` tunes one objective over several
training sets at once. Sweeps tune on training splits only: a split named `test`, or one `promote.heldout`
lists, is refused (held-out splits are promotion's). The lab reads the shipped search defaults
(ragx/defaults.toml), never the [search] of ~/.ragxrc. README.md, "The lab", has the rest.
Several machines: scripts/tools/lab_cluster.sh (PostgreSQL study, MLflow server, shared pass caches).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

from .configs import REPO, compose, package_search_defaults

__all__ = ["compose", "main"]


def option(overrides: list[str], name: str, default: str) -> str:
    for o in overrides:
        if o.startswith(name + "="):
            return o.split("=", 1)[1]
    return default


def cmd_cache(cfg, overrides) -> int:
    from .shown import IndexProgress
    from .sweep import load_passes
    from .training import builds_of, load_training

    started = time.perf_counter()
    data = builds_of(load_training(cfg, load_passes, IndexProgress()))
    for name, d in data.items():
        print(f"{name}: {len(d['passes'])} passes cached ({d['meta']['seconds']:.1f} s to compute), corpus {d['corpus'].root if d['corpus'] else '(shared, no index)'}")
    print(f"done in {time.perf_counter() - started:.1f} s")
    return 0


def cmd_sweep(cfg, overrides) -> int:
    import mlflow

    from .sensitivity import sensitivity
    from .sweep import IMPORTANCE, PARAM_TYPES, live_eval_seconds, run, save_plots, start_tracking, trial_params

    worker = int(option(overrides, "worker", "0"))
    trials = option(overrides, "trials", "")
    study_trials = option(overrides, "study_trials", "")
    out = run(cfg, worker=worker, n_trials=int(trials) if trials else None, study_trials=int(study_trials) if study_trials else None)
    study, data = out["study"], out["data"]
    print(f"worker {worker}: {out['trials']} trials re-scored offline in {out['seconds']:.1f} s "
          f"({out['seconds'] / max(out['trials'], 1) * 1000:.0f} ms per trial); study has {len(study.trials)} trials")
    best = study.best_trial
    print(f"best trial #{best.number}: {cfg.sweep.objective} = {best.value:.4f}  params {json.dumps(best.params)}")
    for s, ref in out["evaluate"].references.items():  # several training sets: each one's figure against the defaults'
        mine = best.user_attrs[f"{s}/objective"]
        print(f"  {s} {cfg.split}: {cfg.sweep.objective} {mine:.4f} (current defaults {ref:.4f}, {mine - ref:+.4f})")
    if any(d.get("scorer") is not None for d in data.values()):
        print(f"cross-encoder pairs computed: {out['rerank']['computed']}, read from the score cache: {out['rerank']['hits']}", flush=True)
    if option(overrides, "report", "true") != "true" or cfg.get("passes_from") == "shared":
        return 0  # no report asked, or a worker without an index (its report would need a live evaluation)
    build_name, best_params = trial_params(best.params, out["defaults"])
    space = {k: list(v) for k, v in cfg.sweep.space.items()}
    sens = sensitivity(out["evaluate"], build_name, best_params, space, {n: PARAM_TYPES[n] in (int, "int") for n in space})
    live = {s: live_eval_seconds(builds[build_name]["corpus"], builds[build_name]["queries"], out["defaults"]) for s, builds in out["sets"].items()}
    live_s = sum(seconds for seconds, _ in live.values())
    folder = REPO / cfg.reports / cfg.optuna.study_name  # an absolute `reports` stays as it is
    plots = save_plots(study, folder, sens, best.value, cfg.sweep.objective, pooled=len(out["sets"]) > 1)
    summary = {
        "study": cfg.optuna.study_name,
        "dataset": "+".join(out["sets"]),
        "train_sets": list(out["sets"]),
        "split": cfg.split,
        "objective": cfg.sweep.objective,
        "guard": out["evaluate"].guard if len(out["sets"]) > 1 else None,
        "defaults_objective_per_set": out["evaluate"].references,
        "trials_in_study": len(study.trials),
        "this_worker": {"worker": worker, "trials": out["trials"], "seconds": out["seconds"]},
        "live_eval_seconds_one_config": live_s,  # summed over the training sets
        "defaults_on_split": {s: means for s, (_, means) in live.items()},
        "best": {"number": best.number, "value": best.value, "params": best.params, "metrics": best.user_attrs},
        "sensitivity": sens,
        "importances": _importances(study),
        "importances_evaluator": IMPORTANCE,
        "pass_cache_seconds": {b: data[b]["meta"]["seconds"] for b in data},
        "rerank_pairs": out["rerank"],  # cross-encoder pairs this worker's trials computed / read from the cache
        "mlflow_run": out["run_id"],
    }
    (folder / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    start_tracking(cfg)
    with mlflow.start_run(run_id=out["run_id"]):
        for p in plots:
            mlflow.log_artifact(str(p), "plots")
        mlflow.log_artifact(str(folder / "summary.json"))
    print(f"one live evaluation of {'+'.join(out['sets'])} {cfg.split}: {live_s:.1f} s; "
          f"{out['trials']} trials offline: {out['seconds']:.1f} s; wrote {folder}")
    return 0


def _importances(study) -> dict[str, float]:
    import optuna

    from .sweep import importance_evaluator

    try:
        return {k: float(v) for k, v in optuna.importance.get_param_importances(study, evaluator=importance_evaluator()).items()}
    except Exception:  # noqa: BLE001 - too few completed trials
        return {}


def cmd_promote(cfg, overrides) -> int:
    import shlex

    from .promote import promote

    return promote(cfg, REPO, command=shlex.join(["python", "-m", "lab", "promote", *overrides]))


def cmd_study(cfg, overrides) -> int:
    """Create the study if missing (one process creates the storage's tables before workers race to),
    repair what can be repaired (COMPLETE trials MLflow lacks are logged from the study's record), and
    print the audit as JSON on stdout and its verdict as one line on stderr: exit 1 when a trial is
    left WAITING or RUNNING, a COMPLETE one is still missing from MLflow, or a number is duplicated."""
    import mlflow  # noqa: F401 - configures its loggers on import: quieted below
    import optuna

    from .cluster import audit_mlflow, audit_study, repair_mlflow, verdict
    from .sweep import storage_url

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for noisy in ("mlflow", "alembic"):  # a new local store's migrations: the verdict is the one line on stderr
        logging.getLogger(noisy).setLevel(logging.WARNING)
    storage = storage_url(cfg.optuna.storage, Path(cfg.cache_root), cfg.optuna)
    study = optuna.create_study(study_name=cfg.optuna.study_name, storage=storage, direction="maximize", load_if_exists=True)
    uri, experiment = cfg.mlflow.tracking_uri, cfg.mlflow.experiment
    out = audit_study(study)
    out["repaired"] = repair_mlflow(study, uri, experiment, audit_mlflow(uri, experiment, cfg.optuna.study_name)["steps"])
    out["mlflow"] = audit_mlflow(uri, experiment, cfg.optuna.study_name)
    out["mlflow"]["matches_complete_trials"] = out["mlflow"]["steps"] == out["complete_numbers"]
    ok, line = verdict(out)
    print(json.dumps(out, default=str))
    print(line, file=sys.stderr)
    return 0 if ok else 1


def cmd_models(cfg, overrides) -> int:
    from .models import run

    run(cfg, REPO)
    return 0


COMMANDS = {"models": cmd_models, "cache": cmd_cache, "sweep": cmd_sweep, "study": cmd_study, "promote": cmd_promote}


def check_run_options(overrides: list[str]) -> None:
    """worker=, trials=, study_trials= take whole numbers (worker from 0, the others from 1); report= true/false."""
    from ragx.errors import UsageError

    for name, low in (("worker", 0), ("trials", 1), ("study_trials", 1)):
        value = option(overrides, name, str(low))
        if not value.isdigit() or int(value) < low:
            raise UsageError(f"{name}={value!r}: a whole number from {low} up")
    if option(overrides, "report", "true") not in ("true", "false"):
        raise UsageError(f"report={option(overrides, 'report', '')!r}: true or false")


def main(argv: list[str]) -> int:
    """The lab's one error boundary: bad input (a Hydra override or config that does not exist, a split
    a dataset lacks, a run option that is not a number) is one line on stderr and exit 2."""
    if any(a in ("-h", "--help") for a in argv) or argv[:1] == ["help"]:
        print(__doc__)
        return 0
    if not argv or argv[0] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 2
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from ragx.errors import RagxError

    overrides = argv[1:]
    from .swap import exclusive, recover, staging_root

    with exclusive(staging_root(REPO)) as free:  # a promotion killed mid-swap: its old files back first
        restored = recover(staging_root(REPO)) if free else []  # (never one a live promotion is making)
    if restored:
        print(f"lab: an interrupted promotion was rolled back ({len(restored)} files restored)", file=sys.stderr)
    try:
        check_run_options(overrides)
        cfg = compose(overrides)
        with package_search_defaults():  # the shipped search defaults, not the rc's [search] (lab/configs.py)
            return COMMANDS[argv[0]](cfg, overrides)
    except RagxError as exc:
        print(f"lab: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except (HydraException, OmegaConfBaseException) as exc:  # an override or config Hydra cannot read
        message = " ".join(str(exc).split()).split(" Config search path:")[0]  # Hydra's search path: noise here
        print(f"lab: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
