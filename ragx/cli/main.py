"""Entry point: registers the command modules and maps errors to exit codes (0 ok, 1 empty, 2 error)."""

from __future__ import annotations

import importlib
import os
import sys

import typer

from ..errors import EXIT_ERROR, RagxError
from .app import app, invocation

# Command name -> the module that registers it. A one-shot command imports only its own module, so
# `ragx status` never pays for eval's, index's or the MCP SDK's imports; help, a bare `ragx` and
# unknown names import them all (to list them). version_cmd always loads: it holds the --version
# callback that keeps the app a command group.
COMMAND_MODULES = {
    "config": "config_cmd", "data": "data_cmd", "doctor": "doctor_cmd", "eval": "eval_cmd",
    "index": "index_cmd", "init": "init_cmd", "inspect": "inspect_cmd", "mcp": "mcp_cmd",
    "query": "query_cmd", "status": "status_cmd", "version": "version_cmd",
}


# One-shot reads do only small matrix products (one query's encoder pass, scoring a few hundred
# candidates), where OpenBLAS's worker threads cost more than they save: 20-30x slower per product on
# a busy 2-core machine. Set before numpy loads; an explicit setting in the environment wins.
SINGLE_THREAD_BLAS = {"query", "status", "inspect"}


def _register(args: list[str]) -> None:
    name = next((a for a in args if not a.startswith("-")), None)
    if name in SINGLE_THREAD_BLAS and "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    wanted = [COMMAND_MODULES[name]] if name in COMMAND_MODULES else sorted(set(COMMAND_MODULES.values()))
    for module in ["version_cmd", *wanted]:
        importlib.import_module(f"{__package__}.{module}")


def run(argv: list[str] | None = None) -> None:
    invocation[:] = sys.argv[1:] if argv is None else argv
    _register(invocation)
    command = typer.main.get_command(app)
    try:
        # Without standalone mode a typer.Exit comes back as a return code instead of being raised.
        code = command.main(args=argv, prog_name="ragx", standalone_mode=False)
    except RagxError as exc:
        print(f"ragx: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.TyperException as exc:  # usage errors: unknown option, missing argument, bad value
        show = getattr(exc, "show", None)
        show() if show else print(f"ragx: error: {exc.format_message()}", file=sys.stderr)
        sys.exit(EXIT_ERROR)
    except typer.Abort:
        print("ragx: aborted", file=sys.stderr)
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        print("ragx: interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    run()
