"""`ragx status`: what the index holds, whether it is consistent, and how far the corpus drifted."""

# No `from __future__ import annotations`: typer reads every parameter's annotation on each run, and
# evaluating them from strings (compile + eval per parameter) costs milliseconds of each start-up.

from typing import Annotated

import typer

from .. import schemas
from ..api import Corpus
from ..errors import EXIT_EMPTY, EXIT_ERROR
from .app import JsonOpt, RootOpt, app, counted, emit_json, one_line, say


@app.command("status")
def status_command(
    root: RootOpt = None,
    json_out: JsonOpt = False,
    no_drift: Annotated[bool, typer.Option("--no-drift", help="Skip scanning the corpus for changes.")] = False,
    deep: Annotated[bool, typer.Option("--deep", help="Also read every vector back from the HNSW index.")] = False,
) -> None:
    """Files, chunks, edges, communities, model, and drift (new/changed/deleted files) against the index."""
    corpus = Corpus.open(root)
    info = corpus.status(drift=not no_drift, deep=deep)
    # Exit 1 (success, nothing there) when not indexed; 2 when the index is inconsistent.
    code = EXIT_EMPTY if not info["indexed"] else (0 if info["consistent"] else EXIT_ERROR)
    if json_out:
        emit_json(schemas.STATUS, info)
        raise typer.Exit(code)
    if not info["indexed"]:
        say(f"{info['root']}: not indexed yet (run `ragx index`)")
    else:
        say(f"root        {info['root']}")
        say(f"model       {info['model']} (dim {info['dim']})")
        say(f"files       {info['files']}")
        say(f"chunks      {info['chunks']}")
        say(f"edges       {info['edges']}  (k={info['graph']['k']}, min_sim={info['graph']['min_sim']})")
        say(f"communities {info['communities']}")
        say(f"updated     {info['updated_at']}")
        state = "consistent" if info["consistent"] else "INCONSISTENT: " + "; ".join(info["problems"])
        say(f"integrity   {state}")
        for notice in info.get("notices", []):
            say(f"notice      {notice}")
    d = info.get("drift")
    if d is not None:
        line = f"drift       {d['new']} new, {d['changed']} changed, {d['deleted']} deleted"
        if d["unreadable"]:
            line += f", {d['unreadable']} unreadable"
        if info.get("skipped"):
            line += f"; {counted(info['skipped'], 'file')} skipped (binary, too large, not UTF-8, or not readable by this install)"
        say(line)
        _print_drifted(info.get("drifted") or {})
        _print_not_indexed(info.get("not_indexed") or {})
    raise typer.Exit(code)


SHOWN_PATHS = 20  # per kind; --json lists them all


def _print_drifted(drifted: dict) -> None:
    for kind in ("changed", "new", "deleted"):
        _print_some(kind, [one_line(path) for path in drifted.get(kind, [])])


def _print_not_indexed(not_indexed: dict) -> None:
    for kind in ("unreadable", "skipped"):
        _print_some(kind, [f"{one_line(row['path'])} ({row['reason']})" for row in not_indexed.get(kind, [])])


def _print_some(kind: str, items: list[str]) -> None:
    """The first SHOWN_PATHS items of a kind, then how many more --json lists."""
    for item in items[:SHOWN_PATHS]:
        say(f"  {kind}: {item}")
    if len(items) > SHOWN_PATHS:
        say(f"  ... {len(items) - SHOWN_PATHS} more {kind} (see --json)")
