"""`ragx --version`: the version and the effective models."""

# No `from __future__ import annotations`: typer reads every parameter's annotation on each run, and
# evaluating them from strings (compile + eval per parameter) costs milliseconds of each start-up.

from typing import Annotated, Optional

import typer

from .. import schemas
from .app import app, emit_json


def _show_version(value: bool) -> None:
    if not value:
        return
    from ..api import version_info  # here, not at import: every command loads this module

    info = version_info()
    emb = info["embeddings"]
    extra = "".join(f", {k}: {info[k]}" for k in ("rerank", "expand") if info[k])
    typer.echo(f"ragx {info['version']} (embeddings: {emb['engine']} {emb['model']}{extra})")
    raise typer.Exit(0)


@app.callback()
def main(
    version: Annotated[
        Optional[bool], typer.Option("--version", callback=_show_version, is_eager=True, help="Show the version and the effective models.")
    ] = None,
) -> None:
    """Local semantic search over a folder of files, following the chunk similarity graph."""


@app.command("version")
def version_command(json_out: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show the version and the effective models."""
    from ..api import version_info

    info = version_info()
    if json_out:
        emit_json(schemas.VERSION, info)
    else:
        _show_version(True)
