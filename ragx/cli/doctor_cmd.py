"""`ragx doctor`: run the configured providers for real and check the index against the config."""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

import typer

from .. import schemas
from ..api import Corpus
from ..errors import EXIT_EMPTY, RagxError
from .app import JsonOpt, RootOpt, app, emit_json, escape, out

_STYLE = {"ok": "green", "fail": "bold red", "skip": "dim"}


@app.command("doctor")
def doctor_command(root: RootOpt = None, json_out: JsonOpt = False) -> None:
    """Embed a probe, score a probe pair, ask the generator, check the index. Exit 0 healthy, 1 a check failed, 2 doctor could not run."""
    corpus = Corpus.open(root)
    try:
        doc = corpus.doctor()
    except RagxError:
        raise
    except Exception as exc:
        raise RagxError(f"doctor could not run: {type(exc).__name__}: {exc}") from exc
    if json_out:
        emit_json(schemas.DOCTOR, doc)
    else:
        out.print(f"ragx doctor: {escape(doc['root'])}")
        for c in doc["checks"]:
            style = _STYLE.get(c["status"], "")
            status = f"[{style}]{c['status'].upper():<4}[/]"
            out.print(f"{status}  {c['name']:<16} {escape(c['detail'])}  [dim]({c['elapsed_ms']:.0f} ms)[/]")
            if c["hint"] and c["status"] == "fail":
                out.print(f"      [yellow]hint:[/] {escape(c['hint'])}")
        out.print("healthy" if doc["healthy"] else f"[bold red]unhealthy[/]: {', '.join(doc['failed'])}")
    raise typer.Exit(0 if doc["healthy"] else EXIT_EMPTY)
