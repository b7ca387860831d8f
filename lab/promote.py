"""Promotion: a study's winner becomes the CLI's defaults only if `ragx eval` on every held-out split
finds it no worse: no significant loss against the current defaults nor against the plain hybrid at the
winner's own candidate budget, and within the gate's tolerance of the current defaults. Then
ragx/defaults.toml's [search] section and the regression baselines are rewritten together, with
provenance; the train/test gap of every training set that has a held-out split is printed beside it."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import tomlkit

from ragx.config import DEFAULTS_PATH, load_settings
from ragx.errors import UsageError
from ragx.eval.report import git_commit
from ragx.eval.stats import power
from ragx.scoring.candidates import shared_bm25
from ragx.scoring.params import Params

from .configs import check_not_heldout, dataset_config, label, package_defaults, package_search_defaults, train_sets
from .swap import exclusive, recover, staging_root, swap

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
    from functools import partial

    from ragx.api import open_collection
    from ragx.eval.beir import cache_dir_for
    from ragx.eval.queries import load_queries
    from ragx.eval.suite import evaluate_dataset

    from .shown import IndexProgress, counted

    data_dir = Path(dataset["data_dir"])
    folder = Path(dataset["cache"]) if dataset.get("cache") else cache_dir_for(data_dir)
    corpus, made, _ = open_collection(data_dir, folder, split, reporter=IndexProgress())
    specs = [f"{name}={spec}" for name, spec in configs.items()] if configs else None
    meta = {"dataset": data_dir.resolve().name, "split": split, "command": command, "commit": git_commit(Path(__file__).parent)}
    queries = made.queries[split]
    return counted(f"evaluating {data_dir.name} {split}", len(load_queries(queries)), "queries",
                   partial(evaluate_dataset, corpus, queries, specs, reference, meta))


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


PROVENANCE_START = "# ---- the last promotion (replaced by the next one; every other comment is kept) ----"
PROVENANCE_END = "# ---- end of the last promotion ----"


def write_defaults(params: Params, provenance: list[str], path: Path = DEFAULTS_PATH) -> None:
    """Set the [search] values of defaults.toml in place through tomlkit (a value that does not change is
    not touched; every table, key and comment is kept as written) and replace the last promotion's
    provenance block (between PROVENANCE_START and PROVENANCE_END) with `provenance`."""
    doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    if "search" not in doc:
        doc.add("search", tomlkit.table())
    table: Any = doc["search"]
    for key, value in dataclasses.asdict(params).items():
        if key not in table or table[key] != value:
            table[key] = value
    path.write_text(with_provenance(tomlkit.dumps(doc), provenance), encoding="utf-8")


def with_provenance(text: str, provenance: list[str]) -> str:
    """`text` with its provenance block replaced (or, the first time, added at the top of [search], after
    the promotion marker when there is one)."""
    block = [PROVENANCE_START, *(f"# {line}" if line else "#" for line in provenance), PROVENANCE_END]
    lines = text.split("\n")
    if PROVENANCE_START in lines and PROVENANCE_END in lines:
        start, end = lines.index(PROVENANCE_START), lines.index(PROVENANCE_END)
        return "\n".join(lines[:start] + block + lines[end + 1:])
    at = lines.index("[search]") + 1
    while at < len(lines) and lines[at].startswith("# ") and (MARKER in lines[at] or "documented in ragx/scoring/params.py" in lines[at]):
        at += 1
    return "\n".join(lines[:at] + block + lines[at:])


def winner(cfg) -> tuple[Any, Params, bool, str]:
    """The study's best trial as a candidate for the defaults: (study, candidate params, whether the
    study swept the reranker, why it cannot be promoted or ''). Bad input is a UsageError."""
    import optuna

    from .sweep import storage_url, trial_params

    heldout = list(cfg.promote.heldout or [])
    if not heldout or any(not item.get("dataset") or not item.get("split") for item in heldout):
        raise UsageError("promote.heldout must name at least one {dataset, split}: a winner is never promoted unchecked")
    check_not_heldout(cfg, "promote")  # the study's training data (as configured) is never held-out data
    storage = storage_url(cfg.optuna.storage, Path(cfg.cache_root))
    if cfg.promote.study_name not in optuna.study.get_all_study_names(storage):
        raise UsageError(f"no study named {cfg.promote.study_name!r} in {cfg.optuna.storage or Path(cfg.cache_root) / 'optuna.db'}: "
                         "run `python -m lab sweep` with the same overrides first")
    study = optuna.load_study(study_name=cfg.promote.study_name, storage=storage)
    held = {(label(str(item["dataset"])), str(item["split"])) for item in heldout}
    # and as the sweep recorded it (lab.sweep.run), whatever this run's overrides say
    for split in study.user_attrs.get("train_splits", []):
        for name in study.user_attrs.get("train_sets", []):
            if split == "test" or (name, split) in held:
                raise UsageError(f"promote: study {cfg.promote.study_name!r} was tuned on {name} {split}, "
                                 "a test or held-out split: its winner is never promoted")
    best, old = study.best_trial, current_defaults()
    bm25 = study.user_attrs.get("bm25")
    if bm25 and bm25 != shared_bm25([old]):
        return study, old, False, (f"study {cfg.promote.study_name!r} scored BM25 with {bm25}, not the defaults' "
                                   f"{shared_bm25([old])}; one `ragx eval` run scores BM25 one way, so a BM25 setting is promoted by hand "
                                   "after comparing held-out runs of each (python -m lab.studies.bm25_params, research/2026-12-04-bm25-variants.py)")
    build_name, candidate = trial_params(best.params, old)
    if build_name != "base":
        return study, old, False, (f"the best trial (#{best.number}) uses index build {build_name!r}; index settings "
                                   "are promoted by hand after a full rebuild (restrict the sweep's builds to base to promote scoring only)")
    reranked = "rerank_weight" in best.params  # a study of the reranker's knobs: both sides rerank on held-out
    if reranked and not load_settings(None, warn=False).rerank.model.strip():
        return study, old, True, ("the study swept rerank_weight but no [rerank] model is configured, "
                                  "so the held-out `ragx eval` could not measure the reranker")
    return study, pin_unswept(candidate, old, best.params), reranked, ""


@dataclasses.dataclass
class Check:
    """The held-out check of a candidate: its verdicts and lines, each set's figure, and the pooled
    per-query differences (candidate - current) of the metric."""

    verdicts: list[bool] = dataclasses.field(default_factory=list)
    lines: list[str] = dataclasses.field(default_factory=list)
    tested: dict[str, float] = dataclasses.field(default_factory=dict)
    differences: list[float] = dataclasses.field(default_factory=list)


def check_heldout(cfg, configs: dict[str, str], command: str, say) -> Check:
    """`ragx eval` of current, candidate and hybrid on every held-out split (see the module docstring)."""
    metric, tol, alpha = cfg.promote.metric, float(cfg.promote.tolerance), float(cfg.promote.get("alpha", 0.05))
    out = Check()
    heldout = list(cfg.promote.heldout)
    for k, item in enumerate(heldout, 1):
        where = f"{label(item['dataset'])} {item['split']}"
        say(f"[{k}/{len(heldout)}] held out: evaluating {where} ({', '.join(configs)})")
        doc = eval_heldout(dataset_config(cfg, item["dataset"]), item["split"], configs, reference="candidate", command=command)
        means, per_query = doc["files"]["means"], doc["files"].get("per_query", {})
        out.tested[label(item["dataset"])] = means["candidate"][metric]
        if per_query:
            out.differences += [per_query["candidate"][q][metric] - per_query["current"][q][metric] for q in per_query["candidate"]]
        for name, allowed in [(metric, tol), *dict(cfg.promote.get("guards") or {}).items()]:
            cur, new = means["current"][name], means["candidate"][name]
            ok = new >= cur - float(allowed)
            out.verdicts.append(ok)
            out.lines.append(f"{where}: {name} {cur:.4f} -> {new:.4f} ({'ok' if ok else f'WORSE by more than {allowed}'})")
            say(out.lines[-1])
        for name, (diff, p, lost) in losses(doc, metric, alpha).items():
            out.verdicts.append(not lost)
            out.lines.append(f"{where}: {metric} against {name} {-diff:+.4f} (p {p:.4f}{', a significant LOSS' if lost else ''})")
            say(out.lines[-1])
    return out


def promoted_difference(study, check: Check) -> tuple[float, str]:
    """The difference the promotion claims: the study's gain over the current defaults on its training
    data (recorded by the sweep), else the mean held-out difference itself."""
    best = study.best_trial
    reference = study.user_attrs.get("defaults_value")
    if reference is not None:
        return float(best.value) - float(reference), "the study's gain on its training data"
    return (float(np.mean(check.differences)) if check.differences else 0.0), "the mean held-out difference"


def power_line(cfg, study, check: Check) -> tuple[bool, str]:
    """Whether the held-out check can detect the promoted difference (power >= promote.min_power), and the figure."""
    effect, what = promoted_difference(study, check)
    alpha, least = float(cfg.promote.get("alpha", 0.05)), float(cfg.promote.get("min_power", 0.8))
    d = np.asarray(check.differences)
    pw = power(d, effect, alpha)
    sd = float(np.std(d, ddof=1)) if len(d) > 1 else float("nan")
    line = (f"power {pw:.2f} to detect {effect:+.4f} ({what}) over {len(d)} held-out queries "
            f"(sd of the paired differences {sd:.4f}, alpha {alpha}; at least {least} asked)")
    return pw >= least, line


def stage_and_swap(cfg, repo: Path, candidate: Params, provenance: list[str], command: str, say,
                   defaults_path: Path = DEFAULTS_PATH, hold=lambda step: None) -> None:
    """Write the new defaults, and every baseline and report evaluated under them, into a staging
    folder; then swap them all in at once (lab/swap.py)."""
    staging = staging_root(repo)
    recover(staging)
    staging.mkdir(parents=True)
    staged_defaults = staging / "defaults.toml"
    staged_defaults.write_text(defaults_path.read_text(encoding="utf-8"), encoding="utf-8")
    write_defaults(candidate, provenance, staged_defaults)
    pairs = [(staged_defaults, defaults_path)]
    hold("staged-defaults")
    baselines = sorted((repo / "reports" / "baselines").glob("*.json"))
    with defaults_from(staged_defaults):  # the baselines describe the new defaults, not yet in force
        for k, baseline in enumerate(baselines, 1):
            named = json.loads(baseline.read_text(encoding="utf-8"))
            if not (repo / "configs" / "dataset" / f"{named['dataset']}.yaml").is_file():
                say(f"not updated: {baseline} (no configs/dataset/{named['dataset']}.yaml to evaluate it with)")
                continue
            say(f"[{k}/{len(baselines)}] baseline: evaluating {named['dataset']} {named['split']} under the new defaults")
            doc = eval_heldout(dataset_config(cfg, named["dataset"]), named["split"], None, command=command)
            staged_reports = staging / "reports"
            write_baseline_of(doc, staging / "baselines" / baseline.name, staged_reports)
            pairs.append((staging / "baselines" / baseline.name, baseline))
            pairs += [(p, repo / "reports" / p.name) for p in sorted(staged_reports.glob(f"{doc['dataset']}-{doc['split']}.*"))]
            hold("baseline")
    swap(staging, pairs, hold)
    say(f"wrote {defaults_path} and {len(pairs) - 1} baseline and report files, together")


@contextlib.contextmanager
def defaults_from(path: Path) -> Iterator[None]:
    """For the duration, ragx reads its shipped defaults from `path` (config.load_settings's first layer)."""
    import ragx.config as config

    before = config.DEFAULTS_PATH
    config.DEFAULTS_PATH = path
    try:
        yield
    finally:
        config.DEFAULTS_PATH = before


@package_search_defaults()  # the held-out runs and what is written: the shipped defaults, not an rc's [search]
def promote(cfg, repo: Path, command: str = "python -m lab promote", defaults_path: Path = DEFAULTS_PATH) -> int:
    """`command`: the promotion as it was typed (with its overrides), recorded in what it writes.
    Nothing outside the staging folder changes until every file is ready; then all change together.
    One promotion at a time (lab.swap.exclusive)."""
    with exclusive(staging_root(repo)) as free:
        if not free:
            raise UsageError("another `python -m lab promote` is running in this repository: wait for it to end")
        return _promote(cfg, repo, command, defaults_path)


def _promote(cfg, repo: Path, command: str, defaults_path: Path) -> int:
    from .batches import hold

    def say(line: str) -> None:
        print(f"lab promote: {line}", flush=True)

    restored = recover(staging_root(repo))
    if restored:
        say(f"an interrupted promotion was rolled back: {', '.join(restored)}")
    study, candidate, reranked, refusal = winner(cfg)
    if refusal:
        say(f"refused: {refusal}")
        return 1
    old, best = current_defaults(), study.best_trial
    configs = {"current": spec_of(old, old, reranked), "candidate": spec_of(candidate, old, reranked), "hybrid": hybrid_spec(candidate)}
    check = check_heldout(cfg, configs, command, say)
    hold("heldout")
    metric = cfg.promote.metric
    gaps = train_test_gaps(best.user_attrs, list(train_sets(cfg)), check.tested, metric)
    for line in gaps:
        say(f"train/test gap: {line}")
    if not all(check.verdicts):
        say(f"refused: the winner of {cfg.promote.study_name} loses on a held-out split (lines above)")
        return 1
    powered, line = power_line(cfg, study, check)
    say(line)
    if not powered and not cfg.promote.get("force", False):
        say("refused: the held-out check is too small to detect the promoted difference (promote.force=true promotes anyway)")
        return 1
    provenance = [
        f"promoted {dt.date.today().isoformat()} from study {cfg.promote.study_name} (trial #{best.number}, {'+'.join(train_sets(cfg))} "
        f"{cfg.split}, {metric} {best.user_attrs.get(metric, best.value):.4f}); held-out `ragx eval`, current -> promoted:",
        *check.lines, f"held-out {line}", *(f"train/test gap: {g}" for g in gaps),
    ]
    stage_and_swap(cfg, repo, candidate, provenance, command, say, defaults_path, hold)
    return 0
