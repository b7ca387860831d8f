"""Entry point: registers the command modules and maps errors to exit codes (0 ok, 1 empty, 2 error)."""

from __future__ import annotations

import sys

import typer

from ..errors import EXIT_ERROR, RagxError
from .app import app, invocation
from . import config_cmd, data_cmd, doctor_cmd, eval_cmd, export_cmd, index_cmd, init_cmd, inspect_cmd, mcp_cmd, models_cmd, query_cmd, status_cmd, version_cmd  # noqa: F401  (registers commands)


def run(argv: list[str] | None = None) -> None:
    command = typer.main.get_command(app)
    invocation[:] = sys.argv[1:] if argv is None else argv
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
