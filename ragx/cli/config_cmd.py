"""`ragx config get|set`: read the effective settings, or change one in ragx.toml or ~/.ragxrc."""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

import json
from typing import Annotated, Optional

import typer

from .. import schemas
from ..config import PROJECT_FILE, as_dict, get_value, load_settings, parse_value, resolve_root, rc_path, set_value
from ..errors import EXIT_ERROR
from .app import JsonOpt, RootOpt, app, echo, emit_json, err

config_app = typer.Typer(help="Read or change settings (defaults < ragx.toml < ~/.ragxrc).", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("get")
def config_get(
    key: Annotated[Optional[str], typer.Argument(help="section.key; omit to list every setting.")] = None,
    root: RootOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Print the effective value of a setting (or all of them, with where each comes from).

    Works while the config is broken, to help fix it: bad files and entries are left out (their
    defaults shown), each is named on stderr, and the exit code is 2.
    """
    problems: list[str] = []
    settings = load_settings(resolve_root(root, allow_broad=True), problems=problems)
    noted = {"problems": problems} if problems else {}  # the document gains the field only when needed
    for problem in problems:
        err.print(f"ragx: error: {problem} (ignored here; every other command refuses it)", markup=False)
    if key is None:
        if json_out:
            emit_json(schemas.CONFIG, {"settings": as_dict(settings), "sources": settings.sources} | noted)
        else:
            for section, values in as_dict(settings).items():
                for name, value in values.items():
                    dotted = f"{section}.{name}"
                    echo(f"{dotted} = {json.dumps(value)}  # {settings.sources.get(dotted)}")
    else:
        value = get_value(settings, key)
        value = list(value) if isinstance(value, tuple) else value
        if json_out:
            emit_json(schemas.CONFIG, {"key": key, "value": value, "source": settings.sources.get(key)} | noted)
        else:
            echo(json.dumps(value) if not isinstance(value, str) else value)
    if problems:
        raise typer.Exit(EXIT_ERROR)


@config_app.command("set")
def config_set(
    key: Annotated[str, typer.Argument(help="section.key")],
    value: Annotated[str, typer.Argument(help="New value (TOML syntax; strings may be bare).")],
    root: RootOpt = None,
    global_: Annotated[bool, typer.Option("--global", help="Write ~/.ragxrc (machine-level) instead of ragx.toml.")] = False,
) -> None:
    """Set a value in the corpus's ragx.toml (or ~/.ragxrc with --global)."""
    parsed = parse_value(key, value)
    target = rc_path() if global_ else resolve_root(root) / PROJECT_FILE
    set_value(target, key, parsed)
    err.print(f"{key} = {json.dumps(list(parsed) if isinstance(parsed, tuple) else parsed)} written to {target}")
