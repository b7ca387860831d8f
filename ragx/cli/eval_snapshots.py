"""`ragx eval snapshots DATA_DIR`: file localisation over repository snapshots (ragx/eval/snapshot_run.py),
printed as tables: per repository, pooled per split and over all, the comparisons against the reference,
and each replay step's index time and chunks embedded."""

from pathlib import Path
from typing import Any, Optional

from .. import schemas
from ..errors import UsageError
from ..eval.metrics import CODE_HEADLINE
from ..eval.report import LEGEND, comparison_head, comparison_rows, lexical_lines, main_head, main_rows, metrics_of
from .app import emit_json, err, out


def refuse_other_options(used: dict[str, bool]) -> None:
    given = [opt for opt, on in used.items() if on]
    if given:
        raise UsageError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to `ragx eval beir` or a queries file, "
                         "not to `ragx eval snapshots`")


def run_snapshots(dirs: list[str], split: Optional[str], cache: Optional[Path], specs: Optional[list[str]],
                  reference: Optional[str], repos: Optional[list[str]], json_out: bool, command: str, commit: str) -> None:
    from ..api import Corpus
    from ..config import load_settings
    from ..eval.snapshot_run import folder_for, run
    from ..eval.snapshots import cache_dir_for, load_instances
    from ..eval.suite import parse_configs
    from ..progress import progress
    from .index_cmd import RichReporter

    if len(dirs) != 1:
        raise UsageError("usage: ragx eval snapshots DATA_DIR [--split train|test|all] [--repo OWNER/NAME ...]")
    data_dir = Path(dirs[0])
    if not data_dir.is_dir():
        raise UsageError(f"{data_dir} is not a folder")
    chosen = load_instances(data_dir, split or "all", repos)
    folder = cache or cache_dir_for(data_dir)
    # the settings every working folder's Corpus loads (the trees carry no ragx.toml): configurations over them
    configs = parse_configs(specs, load_settings(folder_for(folder, next(iter(chosen))), warn=False).search, reference)
    n = sum(len(v) for v in chosen.values())
    err.print(f"{data_dir.resolve().name}: {n} instances of {len(chosen)} repositories; working folders in {folder}")
    with progress("replaying instances", total=n, unit="instances", console=err, transient=True) as advance:
        doc = run(data_dir, chosen, folder, configs, reference, Corpus.open, advance, RichReporter())
    console = err if json_out else out
    print_run(doc, console)
    if json_out:
        emit_json(schemas.EVAL_SNAPSHOTS, {"command": command, "commit": commit, **doc})


def print_run(doc: dict[str, Any], console) -> None:
    from .eval_cmd import _show, _table

    for d in [*doc["repositories"], *doc["pooled"]]:
        title = f"{d['dataset']} ({d['split']}): {d['n_queries']} instances, files; reference {doc['reference']}"
        _show(console, _table(title, main_head(metrics_of(d)), main_rows(d)))
    for d in doc["pooled"] or doc["repositories"]:
        _show(console, _table(f"{d['dataset']}: against {doc['reference']}, per instance", comparison_head(),
                              comparison_rows(d, CODE_HEADLINE)))
        for line in lexical_lines(d, CODE_HEADLINE):
            console.print(f"lexical check ({d['dataset']}): {line}")
    console.print(LEGEND, style="dim")
    _show(console, _table("replay: each instance's tree, then the incremental index", _STEP_HEAD,
                          [_step_row(s) for steps in doc["steps"].values() for s in steps]))


_STEP_HEAD = ["instance", "tree +/~/-", "index s", "embed s", "files", "chunks", "embedded", "of which cached", "reused", "eval s"]


def _step_row(s: dict[str, Any]) -> list[str]:
    t, x = s["tree"], s["index"]
    label = s["instance"] + (" (first index)" if s["fresh"] else "")
    return [label, f"{t['added']}/{t['modified']}/{t['deleted']}", f"{x['seconds']:.1f}", f"{x['embed_seconds']:.1f}",
            str(x["files"]), str(x["chunks"]), str(x["embedded_chunks"]), str(s["vectors_from_cache"]), str(x["reused_chunks"]),
            f"{s['eval_seconds']:.1f}"]

