"""Promotion: a study's winner becomes the CLI's defaults only if `ragx eval` on every held-out split
finds it no worse: no significant loss against the current defaults nor against the plain hybrid at the
winner's own candidate budget, and within the gate's tolerance of the current defaults. Then
ragx/defaults.toml's [search] section and the regression baselines are rewritten together, with
provenance; the train/test gap of every training set that has a held-out split is printed beside it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import tomlkit

from ragx.config import DEFAULTS_PATH, load_settings
from ragx.errors import UsageError
from ragx.eval.report import git_commit
from ragx.scoring.candidates import shared_bm25
from ragx.scoring.params import Params

from .configs import check_not_heldout, dataset_config, label, package_defaults, package_search_defaults, train_sets

MARKER = "---- [search]: written by `python -m lab promote` ----"


def current_defaults() -> Params:
    """The shipped search defaults, ragx/defaults.toml's [search] (read by `config.load_settings`): what a
    promotion replaces. An rc's [search] is one machine's preference, never part of them
    (lab.configs.package_search_defaults)."""
    return package_defaults()


def eval_heldout(dataset: dict[str, Any], split: str, configs: dict[str, str] | None, reference: str | None = None,
                 command: str = "python -m lab promote") -> dict[str, Any]:
    """What `ragx eval beir DATA_DIR --split SPLIT -c name=spec ... [--reference NAME]` computes for one
    dataset, in this process: the same collection cache, the same `Corpus.evaluate` and the same paired tests."""
    from ragx.api import open_collection
    from ragx.eval.beir import cache_dir_for
    from ragx.eval.suite import evaluate_dataset

    data_dir = Path(dataset["data_dir"])
    corpus, made, _ = open_collection(data_dir, Path(dataset["cache"]) if dataset.get("cache") else cache_dir_for(data_dir), split)
    specs = [f"{name}={spec}" for name, spec in configs.items()] if configs else None
    meta = {"dataset": data_dir.resolve().name, "split": split, "command": command, "commit": git_commit(Path(__file__).parent)}
    return evaluate_dataset(corpus, made.queries[split], specs, reference, meta)


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
    """An eval spec on the `default` preset (the shipped pipeline as configured, graph on or off, rerank
    off): the settings that differ from `base`, and with `reranked` (the study swept the reranker) the
    rerank weight in any case."""
    changed = {k: v for k, v in dataclasses.asdict(params).items() if getattr(base, k) != v or (reranked and k == "rerank_weight")}
    return ",".join(["default", *(f"{k}={v}" for k, v in changed.items())])


def hybrid_spec(params: Params) -> str:
    """The plain hybrid (no graph, no anchors, no reranker) at `params`' candidate budget: the same seeds
    when `params` has no graph stage (so the very same candidates), else at most as many candidates as
    `params` can admit per query (an upper bound: the hybrid gets no fewer than the winner)."""
    if params.hops == 0:
        return f"hybrid,dense_n={params.dense_n},lexical_n={params.lexical_n},budget=own"
    from ragx.eval.budget import most_admitted

    return f"hybrid,budget={most_admitted(params)}"


def losses(doc: dict[str, Any], metric: str, alpha: float) -> dict[str, tuple[float, float, bool]]:
    """Per compared config of an eval doc whose reference is the candidate: (its mean minus the
    candidate's, p, whether the candidate loses significantly to it: the config is ahead with p < alpha)."""
    out = {}
    for name, metrics in doc["comparisons"]["configs"].items():
        diff, p = float(metrics[metric]["diff"]), float(metrics[metric]["p"])
        out[name] = (diff, p, diff > 0 and p < alpha)
    return out


def train_test_gaps(best_attrs: dict[str, Any], sets: list[str], heldout: dict[str, float], metric: str) -> list[str]:
    """`<set>: train X -> test Y (gap)` for each training set that has a held-out figure."""
    lines = []
    for s in sets:
        train = best_attrs.get(f"{s}/{metric}", best_attrs.get(metric) if len(sets) == 1 else None)
        if train is not None and s in heldout:
            lines.append(f"{s}: {metric} train {train:.4f} -> test {heldout[s]:.4f} (gap {train - heldout[s]:+.4f})")
    return lines


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


def _study(cfg, heldout: list):
    """The study to promote from, refused (UsageError) when it is missing or was tuned on a test or
    held-out split (as the sweep recorded it, lab.sweep.run, whatever this run's overrides say)."""
    import optuna

    from .sweep import storage_url

    storage = storage_url(cfg.optuna.storage, Path(cfg.cache_root))
    if cfg.promote.study_name not in optuna.study.get_all_study_names(storage):
        raise UsageError(f"no study named {cfg.promote.study_name!r} in {cfg.optuna.storage or Path(cfg.cache_root) / 'optuna.db'}: "
                         "run `python -m lab sweep` with the same overrides first")
    study = optuna.load_study(study_name=cfg.promote.study_name, storage=storage)
    held = {(label(str(item["dataset"])), str(item["split"])) for item in heldout}
    for split in study.user_attrs.get("train_splits", []):
        for name in study.user_attrs.get("train_sets", []):
            if split == "test" or (name, split) in held:
                raise UsageError(f"promote: study {cfg.promote.study_name!r} was tuned on {name} {split}, "
                                 "a test or held-out split: its winner is never promoted")
    return study


def _candidate(cfg, study, old: Params) -> tuple[Params | None, bool]:
    """The best trial's params over the defaults and whether it swept the reranker; None (after a line
    saying why) when such a winner is promoted by hand, not here."""
    from .sweep import trial_params

    best = study.best_trial
    bm25 = study.user_attrs.get("bm25")
    if bm25 and bm25 != shared_bm25([old]):
        print(f"lab promote: refused: study {cfg.promote.study_name!r} scored BM25 with {bm25}, not the defaults' "
              f"{shared_bm25([old])}; one `ragx eval` run scores BM25 one way, so a BM25 setting is promoted by hand "
              "after comparing held-out runs of each (python -m lab.studies.bm25_params, research/2026-12-04-bm25-variants.py)")
        return None, False
    build_name, candidate = trial_params(best.params, old)
    if build_name != "base":
        print(f"lab promote: refused: the best trial (#{best.number}) uses index build {build_name!r}; index settings "
              "are promoted by hand after a full rebuild (restrict the sweep's builds to base to promote scoring only)")
        return None, False
    candidate = pin_unswept(candidate, old, best.params)
    reranked = "rerank_weight" in best.params  # a study of the reranker's knobs: both sides rerank on held-out
    if reranked and not load_settings(None, warn=False).rerank.model.strip():
        print("lab promote: refused: the study swept rerank_weight but no [rerank] model is configured, "
              "so the held-out `ragx eval` could not measure the reranker")
        return None, False
    return candidate, reranked


def _held_out(cfg, heldout: list, configs: dict, command: str) -> tuple[list[bool], list[str], dict[str, float]]:
    """Each held-out split evaluated: (one verdict per check, the lines saying them, the candidate's metric per set)."""
    metric, tol, alpha = cfg.promote.metric, float(cfg.promote.tolerance), float(cfg.promote.get("alpha", 0.05))
    verdicts, lines, tested = [], [], {}
    for item in heldout:
        doc = eval_heldout(dataset_config(cfg, item["dataset"]), item["split"], configs, reference="candidate", command=command)
        means = doc["files"]["means"]
        tested[label(item["dataset"])] = means["candidate"][metric]
        where = f"{label(item['dataset'])} {item['split']}"
        for name, allowed in [(metric, tol), *dict(cfg.promote.get("guards") or {}).items()]:
            cur, new = means["current"][name], means["candidate"][name]
            ok = new >= cur - float(allowed)
            verdicts.append(ok)
            lines.append(f"{where}: {name} {cur:.4f} -> {new:.4f} ({'ok' if ok else f'WORSE by more than {allowed}'})")
            print(lines[-1], flush=True)
        for name, (diff, p, lost) in losses(doc, metric, alpha).items():
            verdicts.append(not lost)
            lines.append(f"{where}: {metric} against {name} {-diff:+.4f} (p {p:.4f}{', a significant LOSS' if lost else ''})")
            print(lines[-1], flush=True)
    return verdicts, lines, tested


def _update_baselines(cfg, repo: Path, command: str) -> None:
    """Every regression baseline describes the old defaults now, held out here or not (CI gates on them)."""
    for baseline in sorted((repo / "reports" / "baselines").glob("*.json")):
        named = json.loads(baseline.read_text(encoding="utf-8"))
        if not (repo / "configs" / "dataset" / f"{named['dataset']}.yaml").is_file():
            print(f"not updated: {baseline} (no configs/dataset/{named['dataset']}.yaml to evaluate it with)")
            continue
        # evaluated afresh: Corpus.open reads the defaults just written
        write_baseline_of(eval_heldout(dataset_config(cfg, named["dataset"]), named["split"], None, command=command), baseline, repo / "reports")
        print(f"updated {baseline}")


@package_search_defaults()  # the held-out runs and what is written: the shipped defaults, not an rc's [search]
def promote(cfg, repo: Path, command: str = "python -m lab promote") -> int:
    """`command`: the promotion as it was typed (with its overrides), recorded in what it writes."""
    heldout = list(cfg.promote.heldout or [])
    if not heldout or any(not item.get("dataset") or not item.get("split") for item in heldout):
        raise UsageError("promote.heldout must name at least one {dataset, split}: a winner is never promoted unchecked")
    check_not_heldout(cfg, "promote")  # the study's training data (as configured) is never held-out data
    study = _study(cfg, heldout)
    old = current_defaults()
    candidate, reranked = _candidate(cfg, study, old)
    if candidate is None:
        return 1
    configs = {"current": spec_of(old, old, reranked), "candidate": spec_of(candidate, old, reranked), "hybrid": hybrid_spec(candidate)}
    verdicts, lines, tested = _held_out(cfg, heldout, configs, command)
    metric, best = cfg.promote.metric, study.best_trial
    gaps = train_test_gaps(best.user_attrs, list(train_sets(cfg)), tested, metric)
    for line in gaps:
        print(f"train/test gap: {line}", flush=True)
    if not all(verdicts):
        print(f"lab promote: refused: the winner of {cfg.promote.study_name} loses on a held-out split (lines above)")
        return 1
    provenance = [
        f"promoted {dt.date.today().isoformat()} from study {cfg.promote.study_name} (trial #{best.number}, "
        f"{'+'.join(train_sets(cfg))} {cfg.split}, {metric} {best.user_attrs.get(metric, best.value):.4f}); "
        "held-out `ragx eval`, current -> promoted:",
        *lines,
        *(f"train/test gap: {line}" for line in gaps),
    ]
    write_defaults(candidate, provenance)
    print(f"wrote {DEFAULTS_PATH}")
    _update_baselines(cfg, repo, command)
    return 0
