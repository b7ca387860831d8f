"""Entry point: registers the command modules and is the CLI's one error boundary.

Exit codes: 0 ok, 1 success with nothing to show, 2 error. Whatever a command raises ends here as ONE
line on stderr: a RagxError as it is, a disk or SQLite failure translated by `errors.as_ragx_error`
(with its hint), anything else as an internal error (RAGX_DEBUG=1 shows the traceback instead).
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

from ..errors import EXIT_ERROR, RagxError, as_ragx_error
from .app import PIPE_CLOSED, app, invocation, visible

# Command name -> the module that registers it. A one-shot command imports only its own module, so
# `ragx status` never pays for eval's, index's or the MCP SDK's imports; help, a bare `ragx` and
# unknown names import them all (to list them). version_cmd always loads: it holds the --version
# callback that keeps the app a command group.
COMMAND_MODULES = {
    "config": "config_cmd", "data": "data_cmd", "doctor": "doctor_cmd", "eval": "eval_cmd",
    "index": "index_cmd", "init": "init_cmd", "inspect": "inspect_cmd", "mcp": "mcp_cmd",
    "query": "query_cmd", "serve": "serve_cmd", "status": "status_cmd", "version": "version_cmd", "watch": "watch_cmd",
    "export": "export_cmd", "import": "export_cmd", "models": "models_cmd",
}


# One-shot reads do only small matrix products (one query's encoder pass, scoring a few hundred
# candidates), where OpenBLAS's worker threads cost more than they save: 20-30x slower per product on
# a busy 2-core machine. So does the MCP server's search (its first query's encoder pass in numpy took
# 1.4 s instead of ~0.05 s on a loaded machine); its index runs embed on onnxruntime's own threads.
# Set before numpy loads; an explicit setting in the environment wins.
SINGLE_THREAD_BLAS = {"query", "status", "inspect", "mcp", "serve"}


def _register(args: list[str]) -> None:
    name = next((a for a in args if not a.startswith("-")), None)
    if name in SINGLE_THREAD_BLAS and "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    wanted = [COMMAND_MODULES[name]] if name in COMMAND_MODULES else sorted(set(COMMAND_MODULES.values()))
    for module in ["version_cmd", *wanted]:
        importlib.import_module(f"{__package__}.{module}")


def fail(message: str, code: int = EXIT_ERROR) -> None:
    """Print `ragx: error: <message>` as one terminal-safe line and exit."""
    try:
        print(f"ragx: error: {visible(message)}", file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):  # stderr closed or gone: the exit code still tells
        pass
    sys.exit(code)


def as_error(exc: Exception) -> RagxError:
    """The RagxError to report for `exc`; an unexpected exception is a bug, said so in one line."""
    known = as_ragx_error(exc)
    if known is not None:
        return known
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return RagxError(
        f"internal error: {type(exc).__name__}{': ' + first if first else ''} "
        "(a bug in ragx: please report it; RAGX_DEBUG=1 shows the traceback)"
    )


def usage_line(exc: Exception) -> str:
    """A usage error as one line, like every other error (click would print a three-line block), with
    where to read the command's usage."""
    ctx = getattr(exc, "ctx", None)
    hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    return " ".join(message.split()) + hint


def _is_bare_group(exc: Exception) -> bool:
    """Whether `exc` is click's answer to a command group given no command (no_args_is_help): a usage
    error whose message is the group's help."""
    ctx = getattr(exc, "ctx", None)
    return ctx is not None and hasattr(exc, "format_message") and exc.format_message() == ctx.get_help()


def run(argv: list[str] | None = None) -> None:
    invocation[:] = sys.argv[1:] if argv is None else argv
    _register(invocation)
    command = typer.main.get_command(app)
    try:
        # Without standalone mode a typer.Exit comes back as a return code instead of being raised.
        code = command.main(args=argv, prog_name="ragx", standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        fail("aborted")
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except BrokenPipeError:  # stdout closed by the reader (`| head`): nothing more to say
        code = PIPE_CLOSED
    except RagxError as exc:
        fail(str(exc), exc.exit_code)
    except typer.TyperException as exc:  # usage errors: unknown option, missing argument, bad value
        if _is_bare_group(exc):  # `ragx` or `ragx config` alone: its help on stdout, as --help prints it
            sys.stdout.write(exc.format_message() + "\n")
            sys.exit(EXIT_ERROR)
        fail(usage_line(exc))
    except Exception as exc:
        if os.environ.get("RAGX_DEBUG"):
            raise
        error = as_error(exc)
        fail(str(error), error.exit_code)
    try:
        sys.stdout.flush()  # a pipe's buffered output fails here, not at exit, when its reader is gone
    except BrokenPipeError:
        code = PIPE_CLOSED
    if code == PIPE_CLOSED:
        _silence_stdout()
    sys.exit(code if isinstance(code, int) else 0)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    run()
