"""`ragx eval`: labelled queries over the corpus, several pipeline configurations side by side.

    ragx eval QUERIES.jsonl [--config ...]             over the current corpus
    ragx eval beir DATA_DIR [--split test] [...]       a BEIR folder: materialised, indexed (cached), evaluated
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .. import schemas
from ..api import Corpus
from ..errors import UsageError
from ..eval.gate import DEFAULT_TOLERANCE, check, read_baseline, write_baseline
from ..eval.metrics import METRIC_NAMES
from ..eval.report import git_commit, table_rows, write_report
from .app import JsonOpt, RootOpt, app, emit_json, err, invocation, out
from .index_cmd import RichReporter


@app.command("eval")
def eval_command(
    target: Annotated[list[str], typer.Argument(help="QUERIES.jsonl, or: beir DATA_DIR", show_default=False)],
    root: RootOpt = None,
    split: Annotated[str, typer.Option("--split", help="BEIR split to evaluate (beir mode).")] = "test",
    cache: Annotated[Optional[Path], typer.Option("--cache", help="Where beir mode keeps the folder and its index.")] = None,
    config: Annotated[Optional[list[str]], typer.Option("--config", "-c", help="name=preset,key=value,... (repeatable); presets: dense, bm25, hybrid, graph, full. Default: dense, bm25, hybrid, graph.")] = None,
    json_out: JsonOpt = False,
    report: Annotated[Optional[Path], typer.Option("--report", help="Write <dataset>-<split>.md and .png into this folder (e.g. reports).")] = None,
    gate: Annotated[Optional[Path], typer.Option("--gate", help="Baseline JSON: exit 1 if a metric drops by more than the tolerance.")] = None,
    tolerance: Annotated[Optional[float], typer.Option("--tolerance", help=f"Gate tolerance (default: the baseline's, else {DEFAULT_TOLERANCE}).")] = None,
    write_baseline_to: Annotated[Optional[Path], typer.Option("--write-baseline", help="Record this run's means as a baseline file.")] = None,
) -> None:
    """Evaluate retrieval (nDCG@10, R@10, R@100, MRR@10, MAP@100) for several configurations in one run."""
    command = shlex.join(["ragx", *invocation])
    if target[0] == "beir":
        if len(target) != 2:
            raise UsageError("usage: ragx eval beir DATA_DIR [--split SPLIT]")
        from ..eval.beir import cache_dir_for, materialise

        data_dir = Path(target[1])
        folder = cache or cache_dir_for(data_dir)
        made = materialise(data_dir, folder, [split])
        err.print(f"{made.documents} documents in {made.corpus_dir} ({made.written} written)")
        corpus = Corpus.open(made.corpus_dir)
        report_ = corpus.index(reporter=RichReporter())
        err.print(f"index: {report_.chunks} chunks, {report_.embedded_chunks} embedded now, {report_.seconds:.1f} s")
        queries, dataset = made.queries[split], data_dir.resolve().name
    else:
        if len(target) != 1:
            raise UsageError("usage: ragx eval QUERIES.jsonl (or: ragx eval beir DATA_DIR)")
        corpus = Corpus.open(root, need_index=True)
        queries, dataset, split = Path(target[0]), corpus.root.name, Path(target[0]).stem

    columns = (TextColumn("evaluating"), BarColumn(), MofNCompleteColumn(), TextColumn("queries"), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task("eval", total=None)
        doc = corpus.evaluate(queries, config, progress=lambda n: progress.advance(task, n))
    doc |= {"dataset": dataset, "split": split, "command": command, "commit": git_commit()}

    table = Table(title=f"{dataset} {split}: {doc['n_queries']} queries, files", title_justify="left")
    table.add_column("config")
    for m in METRIC_NAMES:
        table.add_column(m, justify="right")
    for row in table_rows(doc["files"]["means"]):
        table.add_row(*row)
    (err if json_out else out).print(table)

    if report is not None:
        md, png = write_report(doc, report, f"{dataset}-{split}")
        err.print(f"wrote {md} and {png}")
    if write_baseline_to is not None:
        write_baseline(write_baseline_to, dataset, split, doc["files"]["means"], tolerance or DEFAULT_TOLERANCE, command)
        err.print(f"wrote baseline {write_baseline_to}")
    code = 0
    if gate is not None:
        result = check(read_baseline(gate), doc["files"]["means"], tolerance)
        doc["gate"] = {"baseline": str(gate), "passed": result.passed, "tolerance": result.tolerance, "rows": result.rows}
        for r in result.rows:
            if not r["ok"]:
                current = "missing" if r["current"] is None else f"{r['current']:.4f}"
                err.print(f"[red]gate: {r['config']} {r['metric']} {current} < baseline {r['baseline']:.4f} - {result.tolerance}[/]")
        err.print(f"gate {'passed' if result.passed else 'FAILED'} ({len(result.rows)} checks, tolerance {result.tolerance})")
        code = 0 if result.passed else 1
    if json_out:
        emit_json(schemas.EVAL, doc)
    raise typer.Exit(code)
