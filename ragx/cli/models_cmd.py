"""`ragx models`: list the embedding engines this machine can use, recommend one, optionally pick one."""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

from pathlib import Path
from typing import Annotated, Optional
from urllib.parse import urlsplit

import typer

from .. import schemas
from ..errors import UsageError
from ..log import warn
from .app import JsonOpt, RootOpt, app, emit_json, err, escape, out


@app.command("models")
def models_command(
    use: Annotated[Optional[str], typer.Option("--use", help="Write this candidate (its id or number) into ragx.toml.")] = None,
    url: Annotated[Optional[list[str]], typer.Option("--url", help="Also ask this OpenAI-compatible base URL (repeatable).")] = None,
    search: Annotated[Optional[list[str]], typer.Option("--search", help="Also look for model folders here (repeatable).")] = None,
    root: RootOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Embedding engines on this machine: the embedded model, model folders, local servers."""
    from ..api import pick_model, survey_models

    urls = [_server_url(u) for u in url or []]
    doc = survey_models(urls, [_search_folder(s) for s in search or []])
    chosen = None
    if use is not None:
        try:
            chosen = pick_model(doc, use)
        except LookupError:
            raise UsageError(f"no candidate {use!r} (see the ids `ragx models` lists)") from None
        doc["written"] = _write_choice(root, chosen)
    if json_out:
        emit_json(schemas.MODELS, doc)
        return
    box = doc["machine"]
    out.print(f"machine: {box['ram_gb']} GB RAM, {box['cpus']} cores")
    for i, c in enumerate(doc["candidates"], 1):
        size = f", {c['size_mb']} MB" if c["size_mb"] is not None else ""
        kind = "" if c["embedding"] else "  [dim](name does not look like an embedding model)[/]"
        out.print(f"{i:>3}. {escape(c['id'])}  [dim]({escape(c['source'])}{size})[/]{kind}")
    for u in doc["unreachable"]:
        out.print(f"     [dim]{escape(u['what'])}: {escape(u['reason'])}[/]")
    if doc["recommended"]:
        out.print(f"recommended: [bold]{escape(doc['recommended']['id'])}[/] ({escape(doc['recommended']['reason'])})")
    if chosen is None and doc["candidates"]:
        err.print("pick one with `ragx models --use ID`")


def _server_url(text: str) -> str:
    """An --url as given, or a usage error: it must be an OpenAI-compatible base URL (http://host:port/v1)."""
    try:
        parts = urlsplit(text)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port is None or parts.port > 0)
    except ValueError:  # a port that is no number, a bracketed host that is no IPv6 address
        ok = False
    if not ok:
        raise UsageError(f"--url {text!r} is not a server URL: give its OpenAI-compatible base URL, "
                         "http://host:port/v1 (e.g. http://localhost:1234/v1)")
    return text


def _search_folder(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_dir():
        raise UsageError(f"--search {text}: {'not a folder' if path.exists() else 'no such folder'}")
    return path


def _write_choice(root: Optional[str], chosen: dict) -> dict:
    """Write the candidate's settings into ragx.toml, checked like `ragx config set` (nothing written if the
    settings would not load), unless they are the ones in use already."""
    from ..api import has_index
    from ..config import PROJECT_FILE, check_write, get_value, load_settings, resolve_root, set_values
    from ..errors import ConfigError

    folder = resolve_root(root)
    target = folder / PROJECT_FILE
    wanted = chosen["settings"]
    before = load_settings(folder, warn=False)
    if all(get_value(before, key) == value for key, value in wanted.items()):
        err.print(f"{chosen['id']} is already in use: nothing changed", markup=False)
        return {"file": str(target), "settings": {}, "already_in_use": True}
    try:
        after = check_write(folder, target, wanted)
    except ConfigError as exc:
        raise ConfigError(f"{exc}; nothing written") from None
    set_values(target, wanted)
    err.print(f"wrote {', '.join(f'{k} = {v}' for k, v in wanted.items())} into {target}", markup=False)
    overridden = {key: after.sources.get(key) for key, value in wanted.items() if get_value(after, key) != value}
    for key, source in overridden.items():
        warn(f"{source} sets {key} = {get_value(after, key)!r}, which overrides it here")
    changed = any(get_value(after, key) != get_value(before, key) for key in wanted)
    if changed and has_index(folder):
        warn("the index was built with the previous model: the next run must be `ragx index --full`")
    return {"file": str(target), "settings": wanted}
