"""`ragx config get|set`: read the effective settings, or change one in ragx.toml or ~/.ragxrc."""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

import json
import re
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperCommand

from .. import schemas
from ..config import (
    CHOICES,
    PROJECT_FILE,
    as_dict,
    check_write,
    find_root,
    get_value,
    load_settings,
    parse_value,
    rc_path,
    resolve_root,
    set_value,
)
from ..errors import EXIT_ERROR, ConfigError
from ..log import warn
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


# A negative number: -0.2, -3, -.5, -1e-3, -inf, -nan (the last two are then refused by the range check).
_NEGATIVE_NUMBER = re.compile(r"-(\d|\.\d|inf$|nan$)")


class _NegativeNumberValue(TyperCommand):
    """`ragx config set graph.min_sim -0.2`: click reads any word starting with '-' as an option ("No such
    option: -0"). When a word is a negative number, words that are no option of this command are kept as
    arguments instead (the command has no short options, so such a word can never be one)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: the click Context typer vendors
        if any(_NEGATIVE_NUMBER.match(a) for a in args):
            ctx.ignore_unknown_options = True
        return super().parse_args(ctx, args)


@config_app.command("set", cls=_NegativeNumberValue)
def config_set(
    key: Annotated[str, typer.Argument(help="section.key")],
    value: Annotated[str, typer.Argument(help="New value (TOML syntax; strings may be bare).")],
    root: RootOpt = None,
    global_: Annotated[bool, typer.Option("--global", help="Write ~/.ragxrc (machine-level) instead of ragx.toml.")] = False,
) -> None:
    """Set a value in the corpus's ragx.toml (or ~/.ragxrc with --global).

    Checks the value (type, range, allowed values), then the settings every command would read after the write
    (chunking.min_tokens <= chunking.target_tokens); if they fail, nothing is written. VALUE may be negative (-0.2).
    """
    parsed = parse_value(key, value)
    if global_:  # checked with the corpus here, if there is one (the rc file is read by every corpus)
        corpus = resolve_root(root) if root is not None else find_root()
        target = rc_path()
    else:
        corpus = resolve_root(root)
        target = corpus / PROJECT_FILE
    try:
        after = check_write(corpus, target, {key: parsed})
    except ConfigError as exc:
        raise ConfigError(f"{exc}; nothing written") from None
    set_value(target, key, parsed)
    err.print(f"{key} = {_shown(parsed)} written to {target}", markup=False)
    source = after.sources.get(key)
    if source != str(target):
        warn(f"{source} sets {key} = {_shown(get_value(after, key))}, which overrides it here")
    choices = CHOICES.get(key)
    note = choices.note(get_value(after, key)) if choices and choices.note else None
    if note:
        warn(note)


def _shown(value: Any) -> str:
    return json.dumps(list(value) if isinstance(value, tuple) else value)
