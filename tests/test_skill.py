"""The agent skill: `ragx init --agent` installs it, and every command it shows works as it says.

The commands are read from the installed SKILL.md's ```bash blocks (each line a command, with the
schema it prints after `# ->`) and run through the real CLI entry point on a small corpus.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from cli_runner import call
from fakes import make_corpus

from ragx.agent.install import BEGIN, END, SKILL_TARGET, skill_text

# The fields SKILL.md tells an agent to read, per schema.
FIELDS = {
    "ragx.status.v1": {"indexed", "consistent", "files", "chunks", "drift", "drifted"},
    "ragx.index.v1": {"files", "chunks"},
    "ragx.query.v1": {"results"},
    "ragx.files.v1": {"results"},
    "ragx.global.v1": {"communities"},
    "ragx.inspect.v1": set(),
}
RESULT_FIELDS = {
    "ragx.query.v1": {"file", "line_start", "line_end", "text", "truncated", "score", "chunk_id", "date", "date_source", "stale"},
    "ragx.files.v1": {"file", "score", "chunk_ids", "best_chunk", "date", "stale"},
    "ragx.global.v1": {"label", "keywords", "size", "top_files", "chunks"},
}


pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    root = tmp_path / "project"
    root.mkdir()
    make_corpus(root)
    # A note the skill's example questions are about: an off-topic question would rightly find nothing.
    (root / "search-notes.md").write_text(
        "# How search works\n\nSearch results are ranked and scored: dense and BM25 hits are fused, "
        "and each result is scored by its fused rank.\n\n## Chunk ids\n\nChunk ids are kept stable across index "
        "runs: an id is never reused.\n", encoding="utf-8")
    monkeypatch.chdir(root)  # the skill's commands run from inside the corpus, without --root
    return root


def skill_commands(text: str) -> list[tuple[list[str], str]]:
    """(argv after `ragx`, schema) for every command line in the ```bash blocks."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            if not line.strip():
                continue
            command, _, schema = line.partition("# ->")
            argv = shlex.split(command)
            assert argv[0] == "ragx", line
            assert schema.strip() in FIELDS, f"no schema named after {line!r}"
            commands.append((argv[1:], schema.strip()))
    return commands


def check_document(doc: dict, schema: str) -> None:
    assert doc["schema"] == schema
    assert FIELDS[schema] <= doc.keys(), FIELDS[schema] - doc.keys()
    listed = doc.get("results", doc.get("communities"))
    if schema in RESULT_FIELDS:
        assert listed, f"{schema}: nothing listed"
        for item in listed:
            assert RESULT_FIELDS[schema] <= item.keys(), RESULT_FIELDS[schema] - item.keys()


def test_init_agent_installs_the_shipped_skill_and_keeps_other_text(corpus, capsys):
    (corpus / "AGENTS.md").write_text("# House rules\n\nBe brief.\n", encoding="utf-8")
    code, _, err = call(capsys, "init", "--agent", "--yes")
    assert code == 0, err
    assert "next: ragx index (builds the index" in err  # the skill searches an index init does not build
    assert (corpus / SKILL_TARGET).read_text(encoding="utf-8") == skill_text()
    assert (corpus / "ragx.toml").exists()
    agents = (corpus / "AGENTS.md").read_text(encoding="utf-8")
    assert agents.startswith("# House rules\n\nBe brief.\n") and agents.count(BEGIN) == 1 and END in agents

    # Again: ragx.toml kept, the block replaced rather than repeated, nothing else changes.
    (corpus / "AGENTS.md").write_text(agents + "\nMore rules after.\n", encoding="utf-8")
    code, _, err = call(capsys, "init", "--agent")
    assert code == 0, err
    assert "kept" in err and "unchanged .claude/skills/ragx/SKILL.md" in err
    again = (corpus / "AGENTS.md").read_text(encoding="utf-8")
    assert again.count(BEGIN) == 1 and again.endswith("\nMore rules after.\n")
    assert not (corpus / "CLAUDE.md").exists()  # only written into when the project has one

    (corpus / "CLAUDE.md").write_text("Notes for Claude.\n", encoding="utf-8")
    call(capsys, "init", "--agent")
    assert BEGIN in (corpus / "CLAUDE.md").read_text(encoding="utf-8")


def test_every_command_the_skill_shows_runs_and_prints_its_schema(corpus, capsys):
    code, _, err = call(capsys, "init", "--agent", "--yes")
    assert code == 0, err
    commands = skill_commands((corpus / SKILL_TARGET).read_text(encoding="utf-8"))
    assert len(commands) >= 6

    # Before any index run: status says so with exit 1, as the skill tells.
    code, out, _ = call(capsys, "status", "--json")
    assert code == 1 and json.loads(out)["indexed"] is False
    assert call(capsys, "index")[0] == 0

    chunk_id = None
    for argv, schema in commands:
        if "<chunk_id>" in argv:
            assert chunk_id is not None, "the skill shows <chunk_id> before any query gives one"
            argv = [str(chunk_id) if a == "<chunk_id>" else a for a in argv]
        code, out, err = call(capsys, *argv)
        assert code == 0, (argv, err)
        doc = json.loads(out)  # exactly one JSON document on stdout
        check_document(doc, schema)
        if schema == "ragx.query.v1":
            chunk_id = doc["results"][0]["chunk_id"]
            if "--explain" in argv:
                assert all(r["path"] for r in doc["results"])
        if schema == "ragx.status.v1":
            assert doc["consistent"] is True


def test_the_skills_drift_and_error_advice_holds(corpus, capsys):
    call(capsys, "init", "--agent", "--yes")
    assert call(capsys, "index", "--json")[0] == 0
    (corpus / "cooking-0.md").write_text("# cooking\n\nA new recipe for rye bread.\n", encoding="utf-8")
    code, out, _ = call(capsys, "status", "--json")
    assert json.loads(out)["drift"]["changed"] == 1 and json.loads(out)["drifted"]["changed"] == ["cooking-0.md"]
    _, out, _ = call(capsys, "query", "rye bread recipe", "--json")
    assert any(r["stale"] for r in json.loads(out)["results"] if r["file"] == "cooking-0.md")
    call(capsys, "index", "--json")
    _, out, _ = call(capsys, "status", "--json")
    assert json.loads(out)["drift"] == {"new": 0, "changed": 0, "deleted": 0, "unreadable": 0}

    # Exit 2 with one line on stderr and nothing on stdout for a bad command.
    code, out, err = call(capsys, "inspect", "chunk", "99999999", "--json")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1


def test_the_skill_is_in_the_package_data():
    # The wheel carries it (scripts/check/check_wheel.sh checks the built wheel; this checks the declaration).
    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert '"agent/SKILL.md"' in pyproject
    assert skill_text().startswith("---\nname: ragx\n")
