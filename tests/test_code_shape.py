"""House rules the code keeps (house plan v3): every SQL statement lives in ragx/index/store/ (or, for
another SQLite file than the index, in that file's one store-like module, listed below), and no
function in ragx/ or lab/ grows past 60 lines. Read from the syntax tree, so comments and docs don't count."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SQL = re.compile(r"\b(SELECT\b.*\bFROM|INSERT (OR \w+ )?INTO|UPDATE \w+ SET|DELETE FROM|CREATE (TABLE|INDEX|VIRTUAL|TEMP)|"
                 r"DROP (TABLE|INDEX)|PRAGMA \w+)\b", re.DOTALL)
STORE = REPO / "ragx" / "index" / "store"  # a package: one module per table family
# Optuna's own database (its heartbeat table, PostgreSQL's advisory lock for a study's budget, and a
# batch of finished trials bulk-inserted into its tables), not ragx's index: nothing of the store to route it through.
NOT_OURS = {REPO / "lab" / "cluster.py", REPO / "lab" / "trial_store.py"}
# Other SQLite files than the index, each with its SQL in one module of its own (path: why).
OTHER_STORES = {
    REPO / "ragx" / "models" / "rerank_store.py": "the rerank-score cache's own file (scores.sqlite), not the index",
    REPO / "ragx" / "models" / "expand_store.py": "the expansion cache's own file (expand.sqlite3), not the index",
    REPO / "ragx" / "index" / "fts_tokens.py": "an in-memory FTS5 table that cuts text into BM25's terms, no file",
}
LONGEST = 60


def _trees(*folders: str):
    for folder in folders:
        for path in sorted((REPO / folder).rglob("*.py")):
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def sql_outside_the_store() -> list[str]:
    found = []
    for path, tree in _trees("ragx", "lab"):
        if STORE in path.parents or path in NOT_OURS or path in OTHER_STORES:
            continue
        for node in ast.walk(tree):
            is_sql_text = isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value)
            is_execute = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("execute", "executemany", "executescript")
            if is_sql_text or is_execute:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def long_functions() -> list[str]:
    return [
        f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path, tree in _trees("ragx", "lab")
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (node.end_lineno or 0) - node.lineno + 1 > LONGEST
    ]


def test_no_sql_outside_the_store():
    assert sql_outside_the_store() == []


def test_no_function_in_ragx_or_lab_is_longer_than_sixty_lines():
    assert long_functions() == []


def test_the_checks_see_what_they_look_for(tmp_path, monkeypatch):
    """The two checks above would fail on code that breaks the rules (so their passing means something)."""
    import sys

    fake = tmp_path / "ragx"
    fake.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(LONGEST))
    (fake / "bad.py").write_text(f"def long():\n{body}\n\ndef q(db):\n    return db.execute('SELECT id FROM chunks')\n", encoding="utf-8")
    (tmp_path / "lab").mkdir()
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert long_functions() == ["ragx/bad.py:1 long (61 lines)"]
    line = LONGEST + 4  # `def q` is two lines below the long function's last
    assert sorted(sql_outside_the_store()) == [f"ragx/bad.py:{line}", f"ragx/bad.py:{line}"]


def test_every_package_says_what_it_holds_in_three_lines():
    """A room's __init__ opens with a docstring of one to three lines (what the package holds)."""
    unsaid = []
    for init in sorted([*(REPO / "ragx").rglob("__init__.py"), *(REPO / "lab").rglob("__init__.py")]):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")), clean=False)
        if not doc or not 1 <= len(doc.strip().splitlines()) <= 3:
            unsaid.append(str(init.relative_to(REPO)))
    assert unsaid == []
