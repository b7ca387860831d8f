"""Install the ragx skill for coding agents into a project: the places agents look for instructions.

- `.claude/skills/ragx/SKILL.md`: the skill itself (Claude Code loads skills from there).
- `AGENTS.md`: a short paragraph (read by Codex, Cursor, Copilot's agent and others), between markers
  so a second run replaces it instead of adding another.
- `CLAUDE.md`: the same paragraph, only when the project already has that file.

Re-running is safe: unchanged files are left alone, a changed block is replaced in place, and text
outside the markers is never touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

SKILL_TARGET = Path(".claude") / "skills" / "ragx" / "SKILL.md"
BEGIN = "<!-- ragx:begin (written by `ragx init --agent`; running it again replaces this block) -->"
END = "<!-- ragx:end -->"

PARAGRAPH = """\
## Searching this project with ragx
This folder is indexed with ragx (local semantic search; the index lives in `.ragx/`). To find where
something is implemented or discussed without guessing names, run
`ragx query "<question in plain words>" --json --files-only` (files, best first, each with its best
passage's line range) or `ragx query "<question>" --json --top 5` (passages with `file`,
`line_start`-`line_end` and `text`), then open those files at those lines. `ragx query --global
"<question>" --json` lists the main topics concerned. stdout holds one JSON document; exit code 0 =
results, 1 = none (rephrase), 2 = error (one line on stderr). After editing files, `ragx status --json`
shows `drift`; if `new`, `changed` or `deleted` is non-zero, run `ragx index`. The full guide: `.claude/skills/ragx/SKILL.md`."""


@dataclass(frozen=True)
class Written:
    path: str      # relative to the project root
    action: str    # "created", "updated" or "unchanged"


def skill_text() -> str:
    """The SKILL.md shipped inside the package."""
    return resources.files("ragx.agent").joinpath("SKILL.md").read_text(encoding="utf-8")


def install(root: Path) -> list[Written]:
    written = [_write_whole(root, SKILL_TARGET, skill_text())]
    written.append(_write_block(root, Path("AGENTS.md"), create=True))
    if (root / "CLAUDE.md").exists():
        written.append(_write_block(root, Path("CLAUDE.md"), create=False))
    return written


def _write_whole(root: Path, rel: Path, text: str) -> Written:
    target = root / rel
    old = target.read_text(encoding="utf-8") if target.exists() else None
    if old == text:
        return Written(rel.as_posix(), "unchanged")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return Written(rel.as_posix(), "created" if old is None else "updated")


def _write_block(root: Path, rel: Path, *, create: bool) -> Written:
    """Put the paragraph between the markers: replace an existing block, else append one."""
    target = root / rel
    block = f"{BEGIN}\n{PARAGRAPH}\n{END}\n"
    old = target.read_text(encoding="utf-8") if target.exists() else None
    if old is None:
        if not create:
            raise FileNotFoundError(target)
        new = block
    elif BEGIN in old and END in old.split(BEGIN, 1)[1]:
        head, rest = old.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].removeprefix("\n")
        new = head + block + tail
    else:
        new = old + ("" if old.endswith("\n") or not old else "\n") + ("\n" if old.strip() else "") + block
    return _write_whole(root, rel, new)
