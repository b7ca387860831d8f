"""The typer app, its shared options, and the one place errors become exit codes."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import typer

from .. import schemas

app = typer.Typer(
    name="ragx",
    help="Local semantic search over a folder of files, following the chunk similarity graph.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class _LazyConsole:
    """A rich Console made on first use: a `--json` run never imports rich (~40-90 ms here)."""

    def __init__(self, **options: Any):
        self._options = options
        self._console: Any = None

    def _real(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)

    # Special methods bypass __getattr__: rich's Live uses the console as a context manager.
    def __enter__(self) -> Any:
        return self._real().__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self._real().__exit__(*exc)


# Logs, progress and warnings go to stderr; stdout carries only results (one JSON document with --json).
err = _LazyConsole(stderr=True, highlight=False)
out = _LazyConsole(highlight=False, soft_wrap=True)

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
