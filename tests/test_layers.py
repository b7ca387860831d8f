"""The house plan's floors, checked by import-linter ([tool.importlinter] in pyproject.toml): the tree
keeps them, a planted upward import breaks them, and the modules that moved stay gone (no re-export
shim in ragx/search/, no import of an old module name anywhere in the repository)."""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"  # the dev extra installs it beside python
# Module names that moved (to ragx/scoring/ and ragx/search/searcher.py, results.py): importing one fails.
MOVED = (
    "ragx.search.pipeline", "ragx.search.score", "ragx.search.candidates", "ragx.search.explain",
    "ragx.search.fuse", "ragx.search.params", "ragx.search.traverse", "ragx.index.bm25",
)
LINTED = ("ragx", "lab", "scripts", "tests", "research")


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    assert LINT_IMPORTS.exists(), "lint-imports is missing: install the dev extra (pip install -e '.[dev]')"
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_the_tree_keeps_every_contract():
    run = _lint_imports(REPO)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def _contracts() -> list[dict]:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def _contract_names() -> dict[str, str]:
    return {c["id"]: c["name"] for c in _contracts()}


def test_no_contract_lists_exceptions():
    """A shell needing a room's function gets it through api; no import is waved through a contract."""
    assert {c["id"]: c.get("ignore_imports", []) for c in _contracts() if c.get("ignore_imports")} == {}


@pytest.mark.parametrize(("module", "planted", "contract"), [
    ("ragx/scoring/fuse.py", "from ragx.errors import UsageError", "ground-floor"),   # the ground floor reaching up
    ("ragx/index/graph.py", "from ragx.search import results", "floors"),             # index importing search
    ("ragx/models/base.py", "from ragx.ingest import chunk", "floors"),                # models importing ingest
    ("ragx/config.py", "from ragx.models import registry", "beside-the-floors"),      # config importing a room
    ("ragx/errors.py", "import lab.caches", "lab-above-ragx"),
    ("ragx/cli/query_cmd.py", "from ragx.search import retrieve", "shells"),          # a shell around api
])
def test_a_planted_upward_import_breaks_its_contract(tmp_path, module, planted, contract):
    """The same check on a copy of the tree with one import added that points up: lint-imports fails and
    names the contract it breaks."""
    for folder in ("ragx", "lab"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{planted}  # noqa\n", encoding="utf-8")
    run = _lint_imports(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    summary = " ".join(run.stdout.split())  # lint-imports wraps long contract names
    assert f"{_contract_names()[contract]} BROKEN" in summary, run.stdout


def _imported_names(path: Path, tree: ast.AST) -> list[tuple[int, str]]:
    """Every module an import statement names, relative imports resolved against the file's package."""
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            found += [(node.lineno, base)] + [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return found


def test_no_moved_module_is_imported_anywhere():
    hits = []
    for folder in LINTED:
        for path in sorted((REPO / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for lineno, name in _imported_names(path, ast.parse(text)):
                if name in MOVED:
                    hits.append(f"{path.relative_to(REPO)}:{lineno} {name}")
            if path != Path(__file__).resolve():  # a monkeypatch target or an import_module string
                hits += [f"{path.relative_to(REPO)} names {m}" for m in MOVED if f'"{m}' in text or f"'{m}" in text]
    assert hits == []
    for name in MOVED:
        assert importlib.util.find_spec(name) is None, name


def test_no_module_in_search_only_re_exports():
    """A module of ragx/search/ defines something (a function, a class, a constant) besides imports."""
    shims = []
    for path in sorted((REPO / "ragx" / "search").glob("*.py")):
        if path.name == "__init__.py":
            continue
        body = [n for n in ast.parse(path.read_text(encoding="utf-8")).body
                if not isinstance(n, (ast.Import, ast.ImportFrom)) and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        defines = [n for n in body if not (isinstance(n, ast.Assign) and [getattr(t, "id", "") for t in n.targets] == ["__all__"])]
        if not defines:
            shims.append(path.name)
    assert shims == []


def test_the_import_scan_sees_an_old_name(tmp_path, monkeypatch):
    """The two scans above would find a shim and an import of a moved module (their passing means something)."""
    (tmp_path / "ragx" / "search").mkdir(parents=True)
    (tmp_path / "ragx" / "search" / "fuse.py").write_text('"""Moved."""\n\nfrom ..scoring.fuse import rrf  # noqa: F401\n', encoding="utf-8")
    for folder in LINTED[1:]:
        (tmp_path / folder).mkdir(exist_ok=True)
    (tmp_path / "lab" / "x.py").write_text("from ragx.search.params import Params\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    with pytest.raises(AssertionError):
        test_no_module_in_search_only_re_exports()
    names = _imported_names(tmp_path / "ragx" / "search" / "fuse.py", ast.parse((tmp_path / "ragx" / "search" / "fuse.py").read_text()))
    assert (3, "ragx.scoring.fuse") in names
    with pytest.raises(AssertionError, match="ragx.search.params"):
        test_no_moved_module_is_imported_anywhere()

