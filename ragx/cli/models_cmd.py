"""`ragx models`: list the embedding engines this machine can use, recommend one, optionally pick one."""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from .. import schemas
from ..errors import UsageError
from .app import JsonOpt, RootOpt, app, emit_json, err, out, warn


@app.command("models")
def models_command(
    use: Annotated[Optional[str], typer.Option("--use", help="Write this candidate (its id or number) into ragx.toml.")] = None,
    url: Annotated[Optional[list[str]], typer.Option("--url", help="Also ask this OpenAI-compatible base URL (repeatable).")] = None,
    search: Annotated[Optional[list[str]], typer.Option("--search", help="Also look for model folders here (repeatable).")] = None,
    root: RootOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Embedding engines on this machine: the embedded model, model folders, local servers."""
    from ..models.discover import pick, survey

    doc = survey(list(url or []), [Path(s).expanduser() for s in search or []])
    chosen = None
    if use is not None:
        try:
            chosen = pick(doc, use)
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


def _write_choice(root: Optional[str], chosen: dict) -> dict:
    from ..config import PROJECT_FILE, resolve_root, set_value
    from ..index.layout import Layout

    folder = resolve_root(root)
    target = folder / PROJECT_FILE
    for key, value in chosen["settings"].items():
        set_value(target, key, value)
    err.print(f"wrote {', '.join(f'{k} = {v}' for k, v in chosen['settings'].items())} into {target}")
    if Layout(folder).exists():
        warn("the index was built with the previous model: the next run must be `ragx index --full`")
    return {"file": str(target), "settings": chosen["settings"]}
