"""scripts/ is grouped (bench, check, install, tools) and its README's table names every script in it."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_every_script_has_its_row_in_the_scripts_table():
    """scripts/ holds only its four groups and the README, and scripts/README.md names every script."""
    scripts = REPO / "scripts"
    assert sorted(p.name for p in scripts.iterdir() if p.name != "__pycache__") == ["README.md", "bench", "check", "install", "tools"]
    table = (scripts / "README.md").read_text(encoding="utf-8")
    unlisted = [f"{p.parent.name}/{p.name}" for p in sorted(scripts.glob("*/*")) if p.is_file() and f"| `{p.name}` |" not in table]
    assert unlisted == []
