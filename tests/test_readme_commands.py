"""Every command README.md and the docs pages show is one ragx accepts, as written (screenshot-free).

- every `ragx ...` mention (fenced blocks and inline code, synopses included) names a real command and
  only options that command has;
- every concrete line of a fenced block (no placeholders) parses in full, as the shell would pass it;
- the README's everyday commands run for real, in order, on a small corpus (hash embedder);
- the README stays a README (<= 300 lines) and each install block is one scripts/check/check_installs.py runs.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_runner import call

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"```(?:bash|sh|shell|console)\n(.*?)```", re.S)
INLINE = re.compile(r"`([^`\n]+)`")   # code spans, paired left to right; those naming ragx are kept below
PROGRAM = re.compile(r"^(?:\S*/)?ragx(?:-cli)?$")
PLACEHOLDER = re.compile(r"[\[\]<>|]|\.\.\.|…|\b[A-Z][A-Z_]{2,}\b")   # [--x], <id>, a|b, FILE: a synopsis


def _segments(line: str) -> list[list[str]]:
    """The ragx invocations in one shell line or code span, as token lists starting at `ragx`."""
    line = line.replace("\\|", " ").split(" #")[0].strip()
    if line.startswith("#"):
        return []
    out = []
    for part in re.split(r"&&|\|\||;|(?<![\\])\|", line):
        try:
            tokens = shlex.split(part)
        except ValueError:  # an unbalanced quote in prose: plain words will do for the option check
            tokens = part.split()
        while tokens and re.match(r"^[A-Za-z_]\w*=", tokens[0]):  # VAR=value before the program
            tokens = tokens[1:]
        if tokens and PROGRAM.match(tokens[0]) and not (len(tokens) > 1 and tokens[1].startswith(("<", "...", "…"))):  # `ragx <command>`, `ragx ...`
            out.append(["ragx", *tokens[1:]])
    return out


def mentions() -> list[tuple[str, list[str], bool]]:
    """(page, tokens, concrete) of every ragx invocation shown; concrete: a fenced line without placeholders."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in FENCE.findall(text):
            for line in block.splitlines():
                concrete = not PLACEHOLDER.search(line.split(" #")[0])
                found += [(page.name, tokens, concrete) for tokens in _segments(line)]
        prose = FENCE.sub("", text)
        found += [(page.name, tokens, False) for span in INLINE.findall(prose) if "ragx" in span for tokens in _segments(span)]
    return found


@pytest.fixture(scope="module")
def cli() -> Any:
    """ragx's command group (typer's own click: typer 0.26-0.28 vendor it, so no `click` types here)."""
    from ragx.cli.app import app
    from ragx.cli.main import _register

    _register([])  # every command module
    return typer.main.get_command(app)


def _command(group: Any, args: list[str]) -> tuple[Any, list[str], str]:
    """The (sub)command the words after `ragx` name, the rest of the words, and its name path."""
    cmd = group
    path = "ragx"
    while hasattr(cmd, "commands") and args and args[0] in cmd.commands:
        cmd, path, args = cmd.commands[args[0]], f"{path} {args[0]}", args[1:]
    return cmd, args, path


def _options(cmd: Any) -> set[str]:
    return {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts) if opt.startswith("-")} | {"--help"}


def test_there_are_commands_to_check():
    shown = mentions()
    assert len(shown) >= 60 and sum(concrete for *_, concrete in shown) >= 12


def test_every_shown_command_exists_with_the_options_it_shows(cli):
    bad = []
    for page, tokens, _ in mentions():
        cmd, rest, path = _command(cli, tokens[1:])
        if hasattr(cmd, "commands") and rest and not rest[0].startswith("-"):
            bad.append(f"{page}: {' '.join(tokens)}: no command {rest[0]!r}")
            continue
        flags = {re.sub(r"[=,).:\]].*$", "", t) for t in rest if t.startswith("-") and t not in ("-", "--")}
        unknown = sorted(f for f in flags if f and f not in _options(cmd))
        if unknown:
            bad.append(f"{page}: {' '.join(tokens)}: {path} has no {', '.join(unknown)}")
    assert not bad, "\n".join(bad)


def test_every_concrete_command_parses_as_written(cli):
    bad = []
    for page, tokens, concrete in mentions():
        if not concrete:
            continue
        cmd, rest, path = _command(cli, tokens[1:])
        try:
            cmd.make_context(path, list(rest))
        except Exception as exc:
            if type(exc).__name__ == "Exit":  # --version, --help
                continue
            if not hasattr(exc, "format_message"):  # not a usage error: a bug here
                raise
            bad.append(f"{page}: {' '.join(tokens)}: {exc.format_message()}")
    assert not bad, "\n".join(bad)


EVERYDAY = re.compile(r"## Everyday commands.*?```bash\n(.*?)```", re.S)


def test_the_readmes_everyday_commands_run_in_order_on_a_small_corpus(tmp_path, capsys, monkeypatch, fake_model):
    from fakes import make_corpus

    make_corpus(tmp_path, n_per_topic=3)
    (tmp_path / "README.md").write_text("# Project\n\nHow results are ranked: fused dense and BM25 lists.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False)  # `ragx init` takes the defaults, as under --yes
    lines = EVERYDAY.search((ROOT / "README.md").read_text(encoding="utf-8")).group(1).splitlines()
    ran = 0
    for tokens in (t for line in lines for t in _segments(line)):
        if tokens[1] == "watch":  # runs until stopped: stopped here once its first index run is done
            _stop_watch_after_its_first_index_run(monkeypatch)
        code, _, err = call(capsys, *tokens[1:])
        assert code in (0, 1, None), f"{' '.join(tokens)} exited {code}: {err}"
        ran += 1
    assert ran >= 8


def _stop_watch_after_its_first_index_run(monkeypatch) -> None:
    """`ragx watch` indexes in a process of its own (which would not have this test's fake model): here
    its index run happens in this process, and the watcher is interrupted (Ctrl-C) right after it."""
    from ragx.api import Corpus
    from ragx.cli import watch_cmd
    from ragx.index import watcher

    done: list[object] = []

    class InProcess:
        def __init__(self, root: str) -> None:
            self.root = root

        def start(self) -> bool:
            done.append(Corpus.open(self.root).index())
            return True

        def stop(self) -> None:
            pass

    real_read = watcher.Watcher.read

    def read(self, timeout_ms: int) -> bool:
        if done:
            raise KeyboardInterrupt
        return real_read(self, timeout_ms)

    monkeypatch.setattr(watch_cmd, "_IndexRuns", InProcess)
    monkeypatch.setattr(watcher.Watcher, "read", read)


def test_the_readme_stays_short_and_every_install_block_is_checked():
    sys.path.insert(0, str(ROOT / "scripts" / "check"))
    try:
        import check_installs
    finally:
        sys.path.remove(str(ROOT / "scripts" / "check"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    blocks = check_installs.install_blocks()
    assert set(blocks) == {"full", "light", "pipx", "uv"} and set(blocks) <= set(check_installs.WHERE)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/check/check_installs.py" in ci and "mkdocs build --strict" in ci


def test_every_script_the_readme_and_docs_run_exists():
    """`bash scripts/x`, `python scripts/y.py`: a moved script must take its README and docs lines along."""
    missing = []
    for page in PAGES:
        for block in FENCE.findall(page.read_text(encoding="utf-8")):
            for path in re.findall(r"(?:^|\s)((?:scripts|\.ci)/[\w./-]+)", block, re.M):
                if not (ROOT / path).exists():
                    missing.append(f"{page.name}: {path}")
    assert not missing, "\n".join(missing)
