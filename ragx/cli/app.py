"""The typer app, its shared options, and the one place errors become exit codes."""

from __future__ import annotations

import errno
import re
import sys
from typing import TYPE_CHECKING, Annotated, Any, Optional, cast

import typer

if TYPE_CHECKING:
    from rich.console import Console

from .. import schemas
from ..redact import redact

# The exit code when the reader closes stdout early (`ragx query ... | head -1`): what a shell reports for
# a program SIGPIPE ended (128 + 13). Typer would exit 1, which here means "no results".
PIPE_CLOSED = 141


class _Commands(typer.core.TyperGroup):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise typer.Exit(PIPE_CLOSED) from None


app = typer.Typer(
    cls=_Commands,
    name="ragx",
    help="Local semantic search over a folder of files, following the chunk similarity graph.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help: typer's rich help imports rich, markdown-it and pygments (~90 ms of a 0.25 s
    # `ragx --help`); usage errors are ragx's own one line either way (main.run).
    rich_markup_mode=None,
)

# C0 and C1 control characters except newline and tab: ANSI escapes, carriage returns, bells.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """`text` safe for a terminal: control characters shown as \\xNN (a CR that ends a line as CRLF is
    a line end, not shown), undecodable bytes of file names
    (surrogate escapes) as \\udcNN, URL credentials as ***. A file name or chunk text can then never
    drive the terminal, and no password in a base_url reaches a screen or a log."""
    text = redact(text).encode("utf-8", "backslashreplace").decode("utf-8").replace("\r\n", "\n")  # a CRLF ends a line
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def one_line(name: str) -> str:
    """A file name as one line of human output: its line breaks and tabs shown as \\n and \\t
    (`visible` keeps them, for texts meant to span lines), so a name can never break a result line in
    two, nor forge one."""
    return name.replace("\n", "\\n").replace("\t", "\\t")


def _safe_console(**options: Any) -> Any:
    """A rich Console that passes every string it prints through `visible`: the one place human output
    is made safe, so no command can forget it. (JSON output is exact: only the documents that describe
    settings are redacted, in `emit_json`.)"""
    from rich.console import Console

    class SafeConsole(Console):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            super().print(*(visible(o) if isinstance(o, str) else o for o in objects), **kwargs)

        def on_broken_pipe(self) -> None:
            # rich would exit 1 ("no results" here): let the error reach the one place that maps it.
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "stdout closed by its reader")

    return SafeConsole(**options)


class _LazyConsole:
    """A safe console made on first use: a `--json` run never imports rich (~40-90 ms here)."""

    def __init__(self, **options: Any):
        self._options = options
        self._console: Any = None

    def _real(self) -> Any:
        if self._console is None:
            self._console = _safe_console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        # Its own two fields stay here; anything else (e.g. `width`, which eval widens so that no figure
        # is cut) must reach the real console, not shadow it on the proxy.
        if name in ("_options", "_console"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._real(), name, value)

    # Special methods bypass __getattr__: rich's Live uses the console as a context manager.
    def __enter__(self) -> Any:
        return self._real().__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self._real().__exit__(*exc)


# Logs, progress and warnings go to stderr; stdout carries only results (one JSON document with --json).
# Typed as rich's Console: a _LazyConsole forwards every attribute (and `with`) to a real one.
err = cast("Console", _LazyConsole(stderr=True, highlight=False, soft_wrap=True, emoji=False))  # a message is one line, never wrapped
out = cast("Console", _LazyConsole(highlight=False, soft_wrap=True, emoji=False))  # ":fire:" in a file name stays text

# Documents that describe settings (which may hold a base_url with credentials), not the corpus's own
# text: their JSON is redacted. Query and inspect documents quote files byte for byte and are not.
_SETTINGS_SCHEMAS = frozenset({schemas.VERSION, schemas.DOCTOR, schemas.CONFIG})

# The arguments of this invocation (after `ragx`), for reports that record their own command.
invocation: list[str] = []

RootOpt = Annotated[
    Optional[str], typer.Option("--root", help="Corpus root (default: nearest folder with ragx.toml or .ragx/ above the working directory).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]


def say(line: str) -> None:
    """One plain line on stdout, made safe by `visible`: human output without styling (`ragx status`)
    that then never imports rich (~40-90 ms of a one-shot command) and never reads a `[` in a path
    as markup."""
    sys.stdout.write(visible(line) + "\n")


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """"1 file", "2 files": a count and its noun in human output (`plural` when it is not noun + "s")."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def emit_json(schema: str, payload: dict[str, Any]) -> None:
    text = schemas.dumps(schemas.document(schema, payload))
    sys.stdout.write((redact(text) if schema in _SETTINGS_SCHEMAS else text) + "\n")
    sys.stdout.flush()


def escape(text: str) -> str:
    """`text` with rich markup escaped, for a console line that also holds markup (rich loads here, on
    the first human output, never for --help or --json)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def echo(text: str) -> None:
    """A plain line on stdout (no markup), made terminal-safe like everything `out` prints."""
    out.print(text, markup=False)


def print_weak_evidence(doc: dict, listed: str = "results") -> None:
    """Results (or --global's communities) shown although the evidence rule found nothing relevant
    (--no-evidence-check) say so first."""
    evidence = doc.get("evidence", {})
    if doc[listed] and not evidence.get("match", True):
        out.print(f"[yellow]weak match, shown because of --no-evidence-check: {escape(evidence['reason'])}[/]", highlight=False)
