"""Promotion: a study's winner becomes the CLI's defaults only if `ragx eval` on the held-out splits
says it is no worse than the current defaults. Then ragx/defaults.toml's [search] section and the
regression baselines are rewritten together, with provenance."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import tomlkit

from ragx.config import DEFAULTS_PATH, load_settings
from ragx.eval.report import git_commit
from ragx.scoring.params import Params

MARKER = "---- [search]: written by `python -m lab promote` ----"


def current_defaults() -> Params:
    """The search settings the CLI and `ragx eval` run with: `config.load_settings`, the one place that
    says which defaults are in force (defaults.toml, then ~/.ragxrc when it has a [search] section)."""
    return load_settings(None, warn=False).search


def eval_heldout(dataset: dict[str, Any], split: str, configs: dict[str, str] | None) -> dict[str, Any]:
    """What `ragx eval beir DATA_DIR --split SPLIT -c name=spec ...` computes for one dataset, in this
    process: the same collection cache, the same `Corpus.evaluate` and the same paired tests."""
    from ragx.eval.beir import cache_dir_for, open_collection
    from ragx.eval.suite import evaluate_dataset

    data_dir = Path(dataset["data_dir"])
    corpus, made, _ = open_collection(data_dir, Path(dataset["cache"]) if dataset.get("cache") else cache_dir_for(data_dir), split)
    specs = [f"{name}={spec}" for name, spec in configs.items()] if configs else None
    meta = {"dataset": data_dir.resolve().name, "split": split, "command": "python -m lab promote", "commit": git_commit(Path(__file__).parent)}
    return evaluate_dataset(corpus, made.queries[split], specs, None, meta)


def write_baseline_of(doc: dict[str, Any], baseline: Path, reports: Path) -> None:
    """Rewrite one regression baseline (and its report) from an evaluation of the new defaults."""
    from ragx.eval.gate import DEFAULT_TOLERANCE, write_baseline
    from ragx.eval.markdown import write_report

    write_baseline(baseline, doc["dataset"], doc["split"], doc["files"]["means"], DEFAULT_TOLERANCE, doc["command"], doc.get("budgets"))
    write_report(doc, reports, f"{doc['dataset']}-{doc['split']}")


def pin_unswept(candidate: Params, old: Params, swept: dict[str, Any]) -> Params:
    """`top` always, and `rerank_weight`/`shortlist` unless the study swept them, keep their current
    values. A study sweeps those two only with a reranker configured, when the rerank-score cache
    (lab/rerank.py) makes their offline re-scoring exact against `ragx eval`."""
    return candidate.replace(**{k: getattr(old, k) for k in ("top", "rerank_weight", "shortlist") if k == "top" or k not in swept})


def spec_of(params: Params, base: Params, reranked: bool = False) -> str:
    """An eval spec on the `graph` preset (which turns rerank off): the settings that differ from `base`,
    and with `reranked` (the study swept the reranker) the rerank weight in any case."""
    changed = {k: v for k, v in dataclasses.asdict(params).items() if getattr(base, k) != v or (reranked and k == "rerank_weight")}
    return ",".join(["graph", *(f"{k}={v}" for k, v in changed.items())])


def write_defaults(params: Params, provenance: list[str], path: Path = DEFAULTS_PATH) -> None:
    """Replace the [search] table of defaults.toml through tomlkit: every other table, key and comment
    is kept as written; the new table carries its provenance as comments."""
    doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    table = tomlkit.table()
    for line in [MARKER, "(each knob is documented in ragx/scoring/params.py)", *provenance]:
        table.add(tomlkit.comment(line))
    for key, value in dataclasses.asdict(params).items():
        table.add(key, value)
    if "search" in doc:
        del doc["search"]
    doc.add("search", table)
    path.write_text(tomlkit.dumps(doc), encoding="utf-8")


def promote(cfg, repo: Path) -> int:
    import optuna
    from hydra import compose, initialize_config_dir

    from .sweep import storage_url, trial_params

    study = optuna.load_study(study_name=cfg.promote.study_name, storage=storage_url(cfg.optuna.storage, Path(cfg.cache_root)))
    best = study.best_trial
    old = current_defaults()
    build_name, candidate = trial_params(best.params, old)
    if build_name != "base":
        print(f"lab promote: refused: the best trial (#{best.number}) uses index build {build_name!r}; index settings "
              "are promoted by hand after a full rebuild (restrict the sweep's builds to base to promote scoring only)")
        return 1
    candidate = pin_unswept(candidate, old, best.params)
    reranked = "rerank_weight" in best.params  # a study of the reranker's knobs: both sides rerank on held-out
    if reranked and not load_settings(None, warn=False).rerank.model.strip():
        print("lab promote: refused: the study swept rerank_weight but no [rerank] model is configured, "
              "so the held-out `ragx eval` could not measure the reranker")
        return 1
    spec = spec_of(candidate, old, reranked)
    current = spec_of(old, old, reranked)
    metric, tol = cfg.promote.metric, float(cfg.promote.tolerance)
    verdicts, lines = [], []
    for item in cfg.promote.heldout:
        with initialize_config_dir(config_dir=str(repo / "configs"), version_base="1.3"):
            ds = compose(config_name="lab", overrides=[f"dataset={item['dataset']}"]).dataset
        doc = eval_heldout(ds, item["split"], {"current": current, "candidate": spec})
        means = doc["files"]["means"]
        for name, allowed in [(metric, tol), *dict(cfg.promote.get("guards") or {}).items()]:
            cur, new = means["current"][name], means["candidate"][name]
            ok = new >= cur - float(allowed)
            verdicts.append(ok)
            lines.append(f"{item['dataset']} {item['split']}: {name} {cur:.4f} -> {new:.4f} ({'ok' if ok else 'WORSE'})")
            print(lines[-1], flush=True)
    if not all(verdicts):
        print(f"lab promote: refused: the winner of {cfg.promote.study_name} is worse than the current defaults on a held-out split")
        return 1
    today = dt.date.today().isoformat()
    provenance = [
        f"promoted {today} from study {cfg.promote.study_name} (trial #{best.number}, {cfg.dataset.name} {cfg.split}, "
        f"{metric} {best.user_attrs.get(metric, best.value):.4f}); held-out `ragx eval`, current -> promoted:",
        *lines,
    ]
    write_defaults(candidate, provenance)
    print(f"wrote {DEFAULTS_PATH}")
    for item in cfg.promote.heldout + [{"dataset": "musique-small", "split": "test"}]:
        with initialize_config_dir(config_dir=str(repo / "configs"), version_base="1.3"):
            ds = compose(config_name="lab", overrides=[f"dataset={item['dataset']}"]).dataset
        baseline = repo / "reports" / "baselines" / f"{item['dataset']}-{item['split']}.json"
        if baseline.exists():  # evaluated afresh: Corpus.open reads the defaults just written
            write_baseline_of(eval_heldout(ds, item["split"], None), baseline, repo / "reports")
            print(f"updated {baseline}")
    return 0
