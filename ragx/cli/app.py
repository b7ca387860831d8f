"""The typer app, its shared options, and the one place errors become exit codes."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from .. import schemas

app = typer.Typer(
    name="ragx",
    help="Local semantic search over a folder of files, following the chunk similarity graph.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Logs, progress and warnings go to stderr; stdout carries only results (one JSON document with --json).
err = Console(stderr=True, highlight=False)
out = Console(highlight=False, soft_wrap=True)

# The arguments of this invocation (after `ragx`), for reports that record their own command.
invocation: list[str] = []

RootOpt = Annotated[
    Optional[str], typer.Option("--root", help="Corpus root (default: nearest folder with ragx.toml or .ragx/ above the working directory).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]


def emit_json(schema: str, payload: dict[str, Any]) -> None:
    sys.stdout.write(schemas.dumps(schemas.document(schema, payload)) + "\n")
    sys.stdout.flush()


def warn(message: str) -> None:
    err.print(f"[yellow]ragx: warning:[/] {message}", markup=True)
