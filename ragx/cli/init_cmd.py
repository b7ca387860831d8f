"""`ragx init`: write ragx.toml at the corpus root (asks on a terminal; --yes takes the defaults)."""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

import dataclasses
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..config import PROJECT_FILE, load_settings, parse_value, set_value
from ..errors import UsageError
from .app import app, err

QUESTIONS = (
    ("embeddings.engine", "Embedding engine (embedded = the bundled all-MiniLM-L6-v2, no server needed)"),
    ("index.include", "Only index files matching these globs (comma-separated; empty = all text, docs and code)"),
    ("index.exclude", "Never index files matching these globs (comma-separated)"),
)  # only what a user changes for a folder; the rest (`ragx config get` lists it) keeps its tested default


@app.command("init")
def init_command(
    root: Annotated[Optional[str], typer.Option("--root", help="Folder to initialise (default: the working directory).")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Take every default without asking.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing ragx.toml.")] = False,
    agent: Annotated[bool, typer.Option("--agent", help="Also install the ragx skill for coding agents (.claude/skills/ragx/SKILL.md, a paragraph in AGENTS.md); an existing ragx.toml is kept.")] = False,
) -> None:
    """Write ragx.toml, the corpus's committable config, at the corpus root."""
    folder = Path(root or ".").expanduser().resolve()
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder")
    target = folder / PROJECT_FILE
    # Judged before the skill is installed: the AGENTS.md it writes is not the folder's own content
    # (counted, it tipped a small code repository into "mostly markdown").
    from ..api import markdown_includes, project_manifest  # the folder's files: read when init runs, not for --help

    manifest = project_manifest(folder)
    proposed = markdown_includes(folder) if manifest is None else ()
    if agent:
        _install_agent_skill(folder)
        if target.exists() and not force:
            err.print(f"kept {target}")
            _say_next(folder)
            return
    if target.exists() and not force:
        raise UsageError(f"{target} already exists (use --force to overwrite)")
    defaults = load_settings(None, warn=False)
    if manifest is not None:
        err.print(f"a code project ({manifest}): keeping the default includes (code and docs)")
    if proposed:
        err.print(f"mostly markdown: proposing index.include = {', '.join(proposed)} (notes and documents, no code)")
        defaults = dataclasses.replace(defaults, index=dataclasses.replace(defaults.index, include=proposed))
    answers: dict[str, object] = {}
    interactive = not yes and sys.stdin.isatty()
    for key, question in QUESTIONS:
        section, name = key.split(".")
        value = getattr(getattr(defaults, section), name)
        if interactive:
            shown = ",".join(value) if isinstance(value, tuple) else str(value)
            text = typer.prompt(question, default=shown, show_default=True)
            value = parse_value(key, text) if text != "" else ()
        answers[key] = value
    if target.exists():
        target.unlink()
    target.write_text(
        "# ragx settings for this corpus (commit this file). Keys not set here take the built-in defaults;\n"
        "# `ragx config get` lists them all, `ragx config set KEY VALUE` changes one.\n",
        encoding="utf-8",
    )
    for key, value in answers.items():
        set_value(target, key, value)
    err.print(f"wrote {target}")
    _say_next(folder)


def _say_next(folder: Path) -> None:
    """The command to run next: an installed skill searches an index that `init` does not build."""
    from ..config import INDEX_DIR

    root = "" if folder == Path.cwd() else f" --root {folder}"
    if (folder / INDEX_DIR).is_dir():
        err.print(f"next: ragx status{root} (then ragx index{root} if files drifted)")
    else:
        err.print(f"next: ragx index{root} (builds the index; then ragx query \"...\"{root})")


def _install_agent_skill(folder: Path) -> None:
    from ..agent.install import install

    for written in install(folder):
        err.print(f"{written.action} {written.path}")
