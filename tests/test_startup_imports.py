"""One-shot commands import only what they use (start-up time): checked in fresh processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes import make_corpus
from fakes_registration import RAGX_TOML

TESTS = Path(__file__).resolve().parent
# Never needed by a --json query or by status (plain lines): the text console, the MCP SDK, the index builder, the
# evaluation code, onnxruntime (a one-shot query embeds in numpy), torch.
# pydantic: typer 0.29 builds a pydantic TypeAdapter per CLI parameter (pyproject pins typer below it).
NOT_FOR_READS = ("rich", "mcp", "mcp_types", "pydantic", "ragx.index.build", "ragx.eval", "onnxruntime", "torch", "transformers")
# A query reads the index only: the corpus walk (drift) is status's. numpy.ma: numpy 2's plain np.unique
# imports it on first call (~9 ms); the link and frontmatter parsers: the index run's, not a query's.
NOT_FOR_QUERY = ("ragx.index.diff", "ragx.ingest.discover", "pathspec", "numpy.ma", "ragx.ingest.links",
                 "ragx.ingest.frontmatter")
# The drift walk of a corpus without .gitignore files or include/exclude globs matches no pattern. Nor
# numpy (50-60 ms): status's quick integrity check compares fingerprints and checksums (ragx/index/verify.py);
# the store binds numpy lazily, so `numpy` is in sys.modules unloaded and its package body never runs.
NOT_FOR_STATUS = ("pathspec", "numpy._core", "numpy.ma")


def _modules_after(args: list[str], tmp_path: Path) -> tuple[int, list[str]]:
    code = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: json.dump(sorted(sys.modules), open({str(tmp_path / 'mods.json')!r}, 'w')))\n"
        "import fakes_registration\nfrom ragx.cli.main import run\n"
        f"run({args!r})\n"
    )
    env = dict(os.environ, PYTHONPATH=str(TESTS), RAGX_RC=str(tmp_path / "rc"))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    (tmp_path / "out.json").write_text(done.stdout)
    return done.returncode, json.loads((tmp_path / "mods.json").read_text())


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    make_corpus(root, n_per_topic=2)
    (root / "ragx.toml").write_text(RAGX_TOML)
    code, _ = _modules_after(["index", "--root", str(root)], tmp_path_factory.mktemp("run"))
    assert code == 0
    return root


@pytest.mark.parametrize("args", [["status", "--json"], ["status"], ["query", "comet telescope", "--json"]])
def test_one_shot_reads_import_nothing_they_do_not_use(indexed, tmp_path, args):
    code, mods = _modules_after([*args, "--root", str(indexed)], tmp_path)
    assert code == 0
    unused = NOT_FOR_READS + (NOT_FOR_QUERY if args[0] == "query" else NOT_FOR_STATUS)
    loaded = [m for m in mods if any(m == p or m.startswith(p + ".") for p in unused)]
    assert loaded == []
    assert "ragx.cli.eval_cmd" not in mods and "ragx.cli.mcp_cmd" not in mods  # only the invoked command


def test_help_still_lists_every_command(capsys):
    from cli_runner import call

    code, out, _ = call(capsys, "--help")
    assert code == 0
    for name in ("config", "data", "doctor", "eval", "index", "init", "inspect", "mcp", "query", "status", "version"):
        assert name in out


# Never needed to print help: what the commands themselves load (numpy, the text console and help
# formatter, the MCP SDK, the model and evaluation libraries).
NOT_FOR_HELP = ("numpy._core", "rich", "markdown_it", "pygments", "mcp", "mcp_types", "pydantic", "onnxruntime", "tokenizers",
                "ir_measures", "scipy", "usearch", "ragx.eval.report", "ragx.index.build", "starlette", "uvicorn", "jinja2")
COMMANDS = ("config", "data", "doctor", "eval", "export", "import", "index", "init", "inspect", "mcp", "models", "query", "serve",
            "status", "version")


@pytest.mark.parametrize("args", [["--help"], [], *([c, "--help"] for c in COMMANDS), ["config", "get", "--help"], ["data", "beir", "--help"]])
def test_help_imports_nothing_heavy(tmp_path, args):
    code, mods = _modules_after(args, tmp_path)
    assert code in (0, 2)  # a bare `ragx` prints the help and exits 2 (click's no_args_is_help)
    out = (tmp_path / "out.json").read_text()
    assert out.startswith("Usage: ragx") and (args[:1] in ([], ["--help"]) or f"ragx {' '.join(args[:-1])}" in out)
    loaded = [m for m in mods if any(m == p or m.startswith(p + ".") for p in NOT_FOR_HELP)]
    assert loaded == []


@pytest.mark.parametrize("group", [[], ["config"], ["data"]])
def test_a_group_given_no_command_prints_its_help_on_stdout_and_exits_2(capsys, group):
    from cli_runner import call

    code, out, err = call(capsys, *group)
    assert code == 2 and err == ""
    assert out.startswith(f"Usage: ragx {' '.join(group)}".rstrip()) and "Commands:" in out


def test_status_still_loads_gitignore_rules_when_the_corpus_has_them(indexed, tmp_path):
    """The lazy pattern library is a saving, not a skipped rule: a .gitignore still hides its files."""
    (indexed / ".gitignore").write_text("notes.txt\n")
    try:
        code, mods = _modules_after(["status", "--json", "--root", str(indexed)], tmp_path)
    finally:
        (indexed / ".gitignore").unlink()
    assert code == 0 and "pathspec" in mods
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["drift"]["deleted"] == 1 and doc["drifted"]["deleted"] == ["notes.txt"]


def test_command_annotations_are_objects_not_strings():
    """typer reads every parameter's annotation at each start-up; written as strings (postponed
    annotations) they are compiled and evaluated each time: milliseconds of every command."""
    import inspect

    import typer

    from ragx.cli import main

    main._register(["--help"])
    command = typer.main.get_command(main.app)
    callbacks = [command.callback] + [c.callback for c in command.commands.values()]
    for group in [c for c in command.commands.values() if hasattr(c, "commands")]:
        callbacks += [c.callback for c in group.commands.values()]
    for callback in filter(None, callbacks):
        original = inspect.unwrap(callback)
        stringly = [n for n, a in inspect.get_annotations(original).items() if isinstance(a, str)]
        assert stringly == [], f"{original.__module__}.{original.__name__}: {stringly}"
