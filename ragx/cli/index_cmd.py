"""`ragx index`: bring the index up to date with the corpus (incremental unless --full)."""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

import dataclasses
import time
from contextlib import ExitStack, contextmanager
from typing import Annotated, Callable, Iterator

import typer

from .. import schemas
from ..api import Corpus
from ..log import warn
from ..progress import progress
from .app import JsonOpt, RootOpt, app, counted, emit_json, err


class RichReporter:
    """An index run's progress on stderr (ragx/progress.py: a bar on a terminal, plain lines elsewhere):
    embedding counted, and inside `run()` a heartbeat for the rest (scan, chunk, ANN index, graph,
    communities, BM25, write), so a log never stays silent while the run works."""

    def __init__(self) -> None:
        self._beat: ExitStack | None = None   # the heartbeat, while one runs
        self._started = time.monotonic()      # the heartbeat's elapsed time is the run's

    def _heartbeat(self, on: bool) -> None:
        if self._beat is not None:
            self._beat.close()
            self._beat = None
        if on:
            self._beat = ExitStack()
            self._beat.enter_context(progress("indexing", unit="", console=err, transient=True, started=self._started))

    @contextmanager
    def run(self) -> Iterator[None]:
        self._started = time.monotonic()
        self._heartbeat(True)
        try:
            yield
        finally:
            self._heartbeat(False)

    @contextmanager
    def embedding(self, total: int) -> Iterator[Callable[[int], None]]:
        beating = self._beat is not None
        self._heartbeat(False)  # one display at a time: rich draws one live bar
        try:
            with progress("embedding", total=total, unit="texts", console=err) as advance:  # texts: chunks and anchor texts
                yield advance
        finally:
            self._heartbeat(beating)

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
    reporter = RichReporter()
    with reporter.run():
        report = corpus.index(full=full, reporter=reporter)
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
    if report.scan_note:  # `ragx watch` runs, yet every file was walked: why
        err.print(f"scan: {report.scan_note}")
    if json_out:
        payload = dataclasses.asdict(report)
        payload["chunks_per_second"] = report.chunks_per_second
        emit_json(schemas.INDEX, payload)
