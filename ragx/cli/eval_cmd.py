"""`ragx eval`: labelled queries over the corpus, several pipeline configurations side by side, each
compared per query with a reference configuration.

    ragx eval QUERIES.jsonl [--config ...]                       over the current corpus
    ragx eval beir DATA_DIR [DATA_DIR ...] [--split test] [...]   BEIR folders: materialised, indexed (cached),
                                                                  evaluated, one summary across them
    ragx eval snapshots DATA_DIR [--split S] [--repo R]          repository snapshots (swe-loc): each instance's
                                                                  tree indexed incrementally, its issue evaluated

Every input (options, configurations, baselines, output paths, the BEIR folders' layout) is checked
before anything is materialised, indexed or evaluated: bad input costs one line and exit 2, never a run.
"""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

import shlex
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Optional

import typer

from .. import schemas
from ..errors import UsageError
from ..eval.gate import DEFAULT_TOLERANCE, budget_changes, check, write_baseline
from ..eval.presets import DEFAULT_CONFIGS, PRESETS, REFERENCE_BM25
from ..progress import progress
from .app import JsonOpt, RootOpt, app, emit_json, err, invocation, out

if TYPE_CHECKING:  # rich and the report code (numpy, ir_measures) load when a run prints, never for --help
    from rich.table import Table

CONFIG_HELP = (f"name=preset,key=value,... (repeatable). Presets: {', '.join([*PRESETS, REFERENCE_BM25])}; "
               "budget=graph|N|own sets the candidates per query (dense, bm25 and hybrid default to graph's); "
               "values are checked as `ragx config set` checks them. "
               f"Default: {', '.join(DEFAULT_CONFIGS)}.")


@app.command("eval")
def eval_command(
    target: Annotated[list[str], typer.Argument(help="QUERIES.jsonl, or: beir DATA_DIR [DATA_DIR ...], or: snapshots DATA_DIR", show_default=False)],
    root: RootOpt = None,
    split: Annotated[Optional[str], typer.Option("--split", help="BEIR split to evaluate (beir mode; default: test).", show_default=False)] = None,
    cache: Annotated[Optional[Path], typer.Option("--cache", help="Where beir mode keeps the folder and its index (one DATA_DIR only).")] = None,
    config: Annotated[Optional[list[str]], typer.Option("--config", "-c", help=CONFIG_HELP)] = None,
    reference: Annotated[Optional[str], typer.Option("--reference", help="Configuration the others are tested against (default: hybrid, the plain hybrid at equal budget).")] = None,
    json_out: JsonOpt = False,
    report: Annotated[Optional[Path], typer.Option("--report", help="Write <dataset>-<split>.md and .png (and summary-<split>.md with several datasets) into this folder.")] = None,
    gate: Annotated[Optional[Path], typer.Option("--gate", help="Baseline JSON (a folder of <dataset>-<split>.json with several datasets): exit 1 if a metric drops by more than the tolerance.")] = None,
    tolerance: Annotated[Optional[float], typer.Option("--tolerance", help=f"Gate tolerance (default: the baseline's, else {DEFAULT_TOLERANCE}).")] = None,
    write_baseline_to: Annotated[Optional[Path], typer.Option("--write-baseline", help="Record this run's means as a baseline file (a folder with several datasets).")] = None,
    gap: Annotated[bool, typer.Option("--gap", help="Also run each collection's train split (where it has one) and show train and train - test per configuration (beir mode).")] = False,
    repo: Annotated[Optional[list[str]], typer.Option("--repo", help="snapshots mode: only this repository (OWNER/NAME; repeatable).", show_default=False)] = None,
) -> None:
    """Evaluate retrieval (nDCG@10, R@5, R@10, R@100, MRR@10, MAP@100) for several configurations in one run,
    with candidates scored per query and paired significance tests against a reference configuration.
    `ragx eval snapshots DATA_DIR`: file localisation (Acc@1/5/10, R@5, R@10, MRR) over repository snapshots."""
    from ..eval.report import git_commit
    from ..eval.suite import document, evaluate_dataset

    command = shlex.join(["ragx", *invocation])
    if target[0] == "snapshots":
        from .eval_snapshots import refuse_other_options, run_snapshots

        refuse_other_options({"--root": root is not None, "--report": report is not None, "--gate": gate is not None,
                              "--tolerance": tolerance is not None, "--write-baseline": write_baseline_to is not None, "--gap": gap})
        run_snapshots(target[1:], split, cache, config, reference, repo, json_out, command, git_commit(Path(__file__).resolve().parent))
        raise typer.Exit(0)
    if repo:
        raise UsageError("--repo applies to `ragx eval snapshots DATA_DIR`")
    # Every input is checked before anything is materialised, indexed or evaluated.
    planned = _plan(target, root, split, cache, gap, config, reference)
    _check_outputs(planned, report, gate, tolerance, write_baseline_to)
    commit = git_commit(Path(__file__).resolve().parent)  # ragx's own checkout, not the caller's folder
    docs = []
    for ds in planned:
        corpus, queries, train = ds.open()
        meta = {"dataset": ds.name, "split": ds.split, "command": command, "commit": commit}
        doc = _with_progress(f"evaluating {ds.name}", queries, partial(evaluate_dataset, corpus, queries, ds.configs, reference, meta))
        if gap and train is not None:
            from ..eval.gap import train_gap

            doc["gap"] = _with_progress(f"evaluating {ds.name} train", train, partial(train_gap, corpus, train, ds.configs, doc))
        _print_dataset(doc, err if json_out else out)
        docs.append(doc)
    if len(docs) > 1:
        _print_summary(docs, err if json_out else out)
    if gap:
        _print_gap(docs, err if json_out else out)
    _write_reports(docs, report, command)
    code = _baselines_and_gates(docs, planned, tolerance, command)
    if json_out:
        emit_json(schemas.EVAL, document(docs, command, commit))
    raise typer.Exit(code)


def _with_progress(label: str, queries: Path, run):
    """`run(progress=advance)` with its queries counted (ragx/progress.py: a bar on a terminal, plain
    lines with rate and ETA elsewhere); the file is read once more for the count, a few ms."""
    from ..eval.queries import load_queries

    with progress(label, total=len(load_queries(queries)), unit="queries", console=err, transient=True) as advance:
        return run(progress=advance)


@dataclass
class _Planned:
    """One dataset of the run, every input about it checked; `open` does the work (materialise, index)."""

    name: str
    split: str
    configs: list                                  # parsed EvalConfig, over this corpus's settings
    open: Callable[[], tuple[Any, Path, Optional[Path]]]   # -> (Corpus, queries file, train queries or None)
    baseline_out: Optional[Path] = None            # --write-baseline: where this dataset's goes
    gate_path: Optional[Path] = None               # --gate: this dataset's baseline, read before the run
    baseline: Optional[dict[str, Any]] = None


BEIR_ONLY = "{} {} to `ragx eval beir DATA_DIR ...`, not to a queries file"


def _plan(target: list[str], root, split: Optional[str], cache: Optional[Path], gap: bool, specs: Optional[list[str]],
          reference: Optional[str]) -> list[_Planned]:
    """Each collection named on the command line, checked (its options, its layout, the configurations
    over its settings) without materialising, indexing or evaluating anything."""
    from ..eval.suite import parse_configs

    if target[0] != "beir":
        if len(target) != 1:
            raise UsageError("usage: ragx eval QUERIES.jsonl (or: ragx eval beir DATA_DIR [DATA_DIR ...])")
        given = [opt for opt, used in (("--split", split is not None), ("--cache", cache is not None), ("--gap", gap)) if used]
        if given:
            raise UsageError(BEIR_ONLY.format(", ".join(given), "applies" if len(given) == 1 else "apply"))
        from ..api import Corpus

        corpus, queries = Corpus.open(root, need_index=True), Path(target[0])
        configs = parse_configs(specs, corpus.settings.search, reference)
        return [_Planned(corpus.root.name, queries.stem, configs, lambda: (corpus, queries, None))]
    if root is not None:
        raise UsageError("--root applies to `ragx eval QUERIES.jsonl`; `ragx eval beir` indexes each DATA_DIR in a folder of its own")
    dirs = [Path(t) for t in target[1:]]
    if not dirs:
        raise UsageError("usage: ragx eval beir DATA_DIR [DATA_DIR ...] [--split SPLIT]")
    if cache is not None and len(dirs) > 1:
        raise UsageError("--cache names one collection's folder: give one DATA_DIR with it")
    names = [d.resolve().name for d in dirs]
    if len(set(names)) != len(names):
        raise UsageError(f"two DATA_DIRs share a name ({', '.join(names)}): reports and baselines are named after it")
    from ..config import load_settings
    from ..eval.beir import cache_dir_for, check_collection, corpus_dir_of

    split = "test" if split is None else split
    if gap and split == "train":
        raise UsageError("--gap sets the train split beside the one evaluated: give it with --split other than train")
    planned = []
    for data_dir, name in zip(dirs, names):
        check_collection(data_dir, [split])
        folder = cache or cache_dir_for(data_dir)
        # the settings Corpus.open(<the materialised folder>) will load: configurations are parsed over them
        settings = load_settings(corpus_dir_of(folder), warn=False)
        configs = parse_configs(specs, settings.search, reference)
        planned.append(_Planned(name, split, configs, partial(_open_beir, data_dir, folder, split, gap)))
    return planned


def _open_beir(data_dir: Path, folder: Path, split: str, gap: bool) -> tuple[Any, Path, Optional[Path]]:
    """Materialise and index one BEIR collection: (Corpus, its split's queries, its train queries or None).
    The train file is there only with --gap, for a collection that has a train split other than `split`."""
    from ..api import open_collection
    from .index_cmd import RichReporter

    corpus, made, index_report = open_collection(data_dir, folder, split, reporter=RichReporter(), also=("train",) if gap else ())
    err.print(f"{data_dir.resolve().name}: {made.documents} documents in {made.corpus_dir} ({made.written} written); "
              f"index: {index_report.chunks} chunks, {index_report.embedded_chunks} embedded now, {index_report.seconds:.1f} s")
    train = made.queries.get("train") if split != "train" else None
    return corpus, made.queries[split], train


def _check_outputs(planned: list[_Planned], report: Optional[Path], gate: Optional[Path], tolerance: Optional[float],
                   write_to: Optional[Path]) -> None:
    """--report, --gate, --tolerance and --write-baseline, checked before the run; each dataset's gate
    baseline is read and matched against the run here."""
    from ..eval.gate import check_matches, check_tolerance, read_baseline
    from ..eval.metrics import METRIC_NAMES
    from ..eval.suite import per_dataset_path

    check_tolerance(tolerance)
    if tolerance is not None and gate is None and write_to is None:
        raise UsageError("--tolerance applies to --gate (or to the baseline --write-baseline records)")
    if report is not None:
        from ..eval.plots import require

        require()
        _writable(report, "--report", folder=True)
    for ds in planned:
        if write_to is not None:
            ds.baseline_out = per_dataset_path(write_to, ds.name, ds.split, len(planned), "--write-baseline")
            _writable(ds.baseline_out, "--write-baseline", folder=False)
        if gate is not None:
            ds.gate_path = per_dataset_path(gate, ds.name, ds.split, len(planned), "--gate")
            ds.baseline = read_baseline(ds.gate_path)
            check_matches(ds.baseline, ds.gate_path, ds.name, ds.split, [c.name for c in ds.configs], METRIC_NAMES)


def _writable(path: Path, what: str, folder: bool) -> None:
    """Refuse an output path that cannot be what it must be: a file where a folder goes (or the reverse),
    or below a file."""
    if path.exists():
        if folder and not path.is_dir():
            raise UsageError(f"{what} {path} is a file: give a folder (it is created if missing)")
        if not folder and path.is_dir():
            raise UsageError(f"{what} {path} is a folder: give a file")
        return
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{what} {path}: {parent} is a file, not a folder")
            return


def _table(title: str, head: list[str], rows: list[list[str]]) -> "Table":
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for i, h in enumerate(head):
        table.add_column(h, justify="left" if i == 0 or h == "metric" else "right")
    for row in rows:
        table.add_row(*row)
    return table


def _show(console, table: "Table") -> None:
    """Never cut a figure to fit a narrow (or absent) terminal: let the line run long instead."""
    from rich.measure import Measurement

    wanted = Measurement.get(console, console.options.update_width(10_000), table).maximum
    width = console.width
    console.width = max(width, wanted)  # print(width=...) alone is capped at the console's width
    try:
        console.print(table)
    finally:
        console.width = width


def _print_dataset(doc: dict[str, Any], console) -> None:
    from ..eval.metrics import HEADLINE
    from ..eval.report import LEGEND, comparison_head, comparison_rows, lexical_lines, main_head, main_rows

    ref, s = doc["comparisons"]["reference"], doc["seconds"]
    _show(console, _table(f"{doc['dataset']} {doc['split']}: {doc['n_queries']} queries, files; reference {ref}", main_head(), main_rows(doc)))
    _show(console, _table(f"{doc['dataset']}: against {ref}, per query", comparison_head(), comparison_rows(doc, HEADLINE)))
    from ..eval.kinds import kind_rows

    head, rows = kind_rows(doc, "nDCG@10")
    if rows:
        _show(console, _table(f"{doc['dataset']}: nDCG@10 by query type", head, rows))
    for line in lexical_lines(doc, HEADLINE):
        console.print(f"lexical check: {line}")
    console.print(LEGEND, style="dim")
    err.print(f"{doc['dataset']}: {s['total']:.1f} s ({s['passes']:.1f} s retrieval passes, {s['scoring']:.1f} s scoring, "
              f"{s['reference_bm25']:.1f} s reference BM25, {doc['stats_seconds']:.1f} s significance tests)")


def _print_summary(docs: list[dict[str, Any]], console) -> None:
    from ..eval.metrics import HEADLINE
    from ..eval.report import LEGEND, summary_head, summary_rows

    for metric in HEADLINE:
        _show(console, _table(f"summary: {metric} (mean over {len(docs)} datasets)", summary_head(docs), summary_rows(docs, metric)))
    console.print(LEGEND, style="dim")


def _print_gap(docs: list[dict[str, Any]], console) -> None:
    from ..eval.gap import gap_head, gap_rows
    from ..eval.metrics import HEADLINE

    for metric in HEADLINE:
        _show(console, _table(f"train / train - test gap: {metric}", gap_head(docs), gap_rows(docs, metric)))


def _write_reports(docs: list[dict[str, Any]], folder: Path | None, command: str) -> None:
    if folder is None:
        return
    from ..eval.markdown import write_report, write_summary

    for doc in docs:
        md, png = write_report(doc, folder, f"{doc['dataset']}-{doc['split']}")
        err.print(f"wrote {md} and {png}")
    if len(docs) > 1:
        md, png = write_summary(docs, folder, f"summary-{docs[0]['split']}", command)
        err.print(f"wrote {md} and {png}")


def _baselines_and_gates(docs: list[dict[str, Any]], planned: list[_Planned], tolerance: float | None, command: str) -> int:
    code = 0
    for doc, ds in zip(docs, planned):
        means, dataset, split = doc["files"]["means"], doc["dataset"], doc["split"]
        signatures = {c.name: c.budget_signature() for c in ds.configs}
        if ds.baseline_out is not None:
            path = ds.baseline_out
            write_baseline(path, dataset, split, means, DEFAULT_TOLERANCE if tolerance is None else tolerance, command,
                           doc.get("budgets"), signatures)
            err.print(f"wrote baseline {path}")
        if ds.baseline is None:
            continue
        result = check(ds.baseline, means, tolerance)
        changed = budget_changes(ds.baseline, signatures)
        doc["gate"] = {"baseline": str(ds.gate_path), "passed": result.passed, "tolerance": result.tolerance, "rows": result.rows,
                       "budget_changes": changed}
        for config, what in changed.items():
            err.print(f"[yellow]gate {dataset}: {config}'s candidate budget is not the baseline's ({what}): "
                      "its rows compare different budgets; record a new baseline if the change is meant[/]")
        for r in result.rows:
            if not r["ok"]:
                current = "missing" if r["current"] is None else f"{r['current']:.4f}"
                err.print(f"[red]gate {dataset}: {r['config']} {r['metric']} {current} < baseline {r['baseline']:.4f} - {result.tolerance}[/]")
        err.print(f"gate {dataset}: {'passed' if result.passed else 'FAILED'} ({len(result.rows)} checks, tolerance {result.tolerance})")
        code = code or (0 if result.passed else 1)
    return code
