"""`ragx index`: bring the index up to date with the corpus (incremental unless --full)."""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

import dataclasses
from typing import Annotated, Callable, ContextManager

import typer

from .. import schemas
from ..api import Corpus
from ..log import warn
from ..progress import progress
from .app import JsonOpt, RootOpt, app, counted, emit_json, err


class RichReporter:
    """An index run's progress on stderr (ragx/progress.py: a bar on a terminal, plain lines elsewhere)."""

    def embedding(self, total: int) -> ContextManager[Callable[[int], None]]:
        return progress("embedding", total=total, unit="texts", console=err)  # texts: chunks and anchor texts

    def warn(self, message: str) -> None:
        warn(message)


def _resumed(n: int) -> str:
    return f", {counted(n, 'chunk')} resumed from an interrupted run's journal" if n else ""


@app.command("index")
def index_command(
    root: RootOpt = None,
    full: Annotated[bool, typer.Option("--full", help="Rebuild everything instead of updating what changed.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Index new and changed files, drop deleted ones, and repair the graph around them."""
    corpus = Corpus.open(root)
    err.print(f"indexing {corpus.root}")
    report = corpus.index(full=full, reporter=RichReporter())
    what = "rebuilt" if full else "updated"
    err.print(
        f"{what}: files {report.new} new, {report.changed} changed, {report.deleted} deleted, "
        f"{report.unchanged} unchanged{f', {len(report.problems)} not read' if report.problems else ''}"
        f"{f', {report.skipped} skipped (ragx status says why)' if report.skipped else ''}; "
        f"{counted(report.embedded_chunks, 'chunk')} embedded from {counted(len(report.embedded_files), 'file')}"
        f"{f' ({report.reused_chunks} more reused a vector of the same text)' if report.reused_chunks else ''}"
        f"{_resumed(report.resumed_chunks)}; "
        f"index holds {counted(report.files, 'file')}, {counted(report.chunks, 'chunk')}, {counted(report.edges, 'edge')}, "
        f"{counted(report.communities, 'community', 'communities')}; "
        f"{report.seconds:.1f} s ({report.chunks_per_second:.1f} chunks/s)"
    )
    if json_out:
        payload = dataclasses.asdict(report)
        payload["chunks_per_second"] = report.chunks_per_second
        emit_json(schemas.INDEX, payload)
