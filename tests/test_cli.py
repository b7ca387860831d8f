"""The CLI's contract: exit codes, one JSON document on stdout, one-line errors on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cli_runner import call

pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "a.md").write_text("# Alpha\n\nThe alpha file talks about rivers and boats.\n")
    (tmp_path / "b.py").write_text("def beta():\n    return 'mountains'\n")
    return tmp_path


def test_index_then_status_json(corpus, capsys):
    code, out, err = call(capsys, "index", "--root", str(corpus), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "ragx.index.v1" and doc["files"] == 2 and doc["new"] == 2
    stages = doc["stage_seconds"]  # where a run's time went, in the order run
    assert list(stages) == ["plan", "vectors", "graph", "communities", "lexicon", "write", "store"]
    assert all(s >= 0 for s in stages.values()) and sum(stages.values()) <= doc["seconds"]
    assert "chunks/s" in err and "2 files" in err
    code, out, _ = call(capsys, "status", "--root", str(corpus), "--json")
    status = json.loads(out)
    assert code == 0 and status["schema"] == "ragx.status.v1"
    assert status["consistent"] and status["files"] == 2 and status["drift"]["new"] == 0
    (corpus / "c.txt").write_text("new file")
    (corpus / "a.md").write_text("# Alpha\n\nedited\n")
    _, out, _ = call(capsys, "status", "--root", str(corpus), "--json")
    assert json.loads(out)["drift"] == {"new": 1, "changed": 1, "deleted": 0, "unreadable": 0}
    (corpus / "c.txt").unlink()
    _, _, err = call(capsys, "index", "--root", str(corpus))  # counts of one read in the singular
    assert "1 changed" in err and "1 chunk embedded from 1 file" in err


def test_a_crlf_line_end_reads_as_a_line_end_in_human_output():
    from ragx.cli.app import visible

    assert visible("one\r\ntwo\r\n") == "one\ntwo\n" and visible("bell\a cr\r alone") == "bell\\x07 cr\\x0d alone"


def test_plain_status_prints_paths_as_they_are(tmp_path, capsys):
    root = tmp_path / "notes [red]x"  # rich markup in a folder and a file name: printed, not applied
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nrivers and boats\n")
    assert call(capsys, "index", "--root", str(root))[0] == 0
    (root / "[bold]b.md").write_text("new note\n")
    code, out, _ = call(capsys, "status", "--root", str(root))
    assert code == 0
    assert f"root        {root}" in out and "integrity   consistent" in out
    assert "drift       1 new, 0 changed, 0 deleted" in out and "  new: [bold]b.md" in out


def test_a_line_break_in_a_file_name_never_breaks_a_result_line(tmp_path, capsys):
    """A crafted name ("x\n  2. forged.md:1-1 ...") could otherwise forge a result line."""
    root = tmp_path / "notes"
    root.mkdir()
    (root / "new\n  2. forged.md").write_text("# Alpha\n\nrivers and boats\n")
    assert call(capsys, "index", "--root", str(root))[0] == 0
    code, out, _ = call(capsys, "query", "rivers boats", "--root", str(root), "--no-evidence-check")
    assert code == 0 and "  1. new\\n  2. forged.md:" in out and not any(line.startswith("  2.") for line in out.splitlines())
    code, out, _ = call(capsys, "query", "rivers boats", "--root", str(root), "--no-evidence-check", "--json")
    assert json.loads(out)["results"][0]["file"] == "new\n  2. forged.md"  # JSON stays exact
    (root / "tab\tname.md").write_text("boats\n")
    code, out, _ = call(capsys, "status", "--root", str(root))
    assert "  new: tab\\tname.md" in out


def test_status_names_the_files_it_cannot_index_and_why(tmp_path, capsys):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nrivers and boats\n")
    (root / "latin1.md").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    (tmp_path / "outside.md").write_text("elsewhere\n")
    (root / "out.md").symlink_to(tmp_path / "outside.md")  # a link leaving the root: never followed
    assert call(capsys, "index", "--root", str(root))[0] == 0
    code, out, _ = call(capsys, "status", "--root", str(root), "--json")
    doc = json.loads(out)
    assert doc["skipped"] == 1 and doc["not_indexed"]["skipped"] == [{"path": "latin1.md", "reason": "not valid UTF-8"}]
    assert [row["path"] for row in doc["not_indexed"]["unreadable"]] == ["out.md"] and doc["drift"]["unreadable"] == 1
    code, out, _ = call(capsys, "status", "--root", str(root))
    assert "1 file skipped" in out and "  skipped: latin1.md (not valid UTF-8)" in out and "  unreadable: out.md (" in out


def test_status_of_unindexed_corpus_exits_1(corpus, capsys):
    code, out, _ = call(capsys, "status", "--root", str(corpus), "--json")
    assert code == 1 and json.loads(out)["indexed"] is False


@pytest.mark.parametrize(
    "args, message",
    [
        (("status", "--root", "/no/such/folder"), "is not a folder"),
        (("config", "get", "graph.nope"), "unknown config key graph.nope"),
        (("config", "set", "graph.k", "lots"), "cannot read"),
        (("index", "--bogus"), "No such option: --bogus (see `ragx index --help`)"),
        (("--bogus",), "No such option: --bogus (see `ragx --help`)"),
        (("query", "x", "--top", "abc"), "'abc' is not a valid int. (see `ragx query --help`)"),
        (("inspect", "chunk", "-1"), "No such option: -1"),
        (("inspect", "chunk", "²"), "`ragx inspect chunk` needs a chunk id (a whole number), got '²'"),
        (("inspect", "neighbours", "١٢"), "needs a chunk id (a whole number)"),
        (("inspect", "community", "99999999999999999999999"), "ids are at most"),
        (("inspect", "chunks", "1"), "unknown inspect target 'chunks'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(corpus, capsys, monkeypatch, args, message):
    monkeypatch.chdir(corpus)
    code, out, err = call(capsys, *args)
    assert code == 2 and out == ""
    assert message in err
    assert len(err.splitlines()) == 1 and err.startswith("ragx: error: ")


def test_malformed_ragx_toml_fails_and_loses_nothing(corpus, capsys):
    call(capsys, "index", "--root", str(corpus))
    (corpus / "ragx.toml").write_text("[graph\n")
    code, _, err = call(capsys, "index", "--root", str(corpus))
    assert code == 2 and "malformed TOML" in err and err.count("\n") == 1
    (corpus / "ragx.toml").unlink()
    code, out, _ = call(capsys, "status", "--root", str(corpus), "--json")
    assert code == 0 and json.loads(out)["chunks"] > 0


def test_init_yes_and_config_roundtrip(corpus, capsys, monkeypatch, isolated_rc):
    monkeypatch.chdir(corpus)
    code, _, err = call(capsys, "init", "--yes")
    assert code == 0 and (corpus / "ragx.toml").exists()
    assert call(capsys, "init", "--yes")[0] == 2  # refuses to overwrite
    assert call(capsys, "config", "set", "graph.k", "6")[0] == 0
    code, out, _ = call(capsys, "config", "get", "graph.k", "--json")
    assert json.loads(out) == {"schema": "ragx.config.v1", "key": "graph.k", "value": 6, "source": str(corpus / "ragx.toml")}
    assert call(capsys, "config", "set", "graph.k", "9", "--global")[0] == 0
    code, out, err = call(capsys, "config", "get", "graph.k")
    assert out.strip() == "9" and "overrides graph.k" in err


def test_version(capsys):
    code, out, _ = call(capsys, "--version")
    assert code == 0 and out.startswith("ragx ") and "all-MiniLM-L6-v2" in out


def test_inspect_names_its_target_one_way_whatever_the_spelling(corpus, capsys):
    assert call(capsys, "index", "--root", str(corpus))[0] == 0
    code, out, err = call(capsys, "inspect", "neighbours", "1", "--root", str(corpus), "--json")
    assert code == 0, err
    assert json.loads(out)["what"] == "neighbors"


def test_inspect_says_when_the_file_changed_since_it_was_indexed(corpus, capsys):
    assert call(capsys, "index", "--root", str(corpus))[0] == 0
    doc = json.loads(call(capsys, "inspect", "file", "a.md", "--root", str(corpus), "--json")[1])
    assert doc["stale"] is False
    chunk = doc["chunks"][0]["chunk_id"]
    (corpus / "a.md").write_text("# New heading\n\n# Alpha\n\nThe alpha file talks about rivers and boats.\n")
    code, out, _ = call(capsys, "inspect", "chunk", str(chunk), "--root", str(corpus), "--json")
    assert code == 0 and json.loads(out)["stale"] is True
    assert json.loads(call(capsys, "inspect", "file", "a.md", "--root", str(corpus), "--json")[1])["stale"] is True
    code, text, _ = call(capsys, "inspect", "chunk", str(chunk), "--root", str(corpus))
    assert code == 0 and "the file changed since it was indexed" in text and "(stale)" in text


def test_the_index_folder_keeps_itself_out_of_git(corpus, capsys):
    import subprocess

    subprocess.run(["git", "init", "-q", str(corpus)], check=True)
    assert call(capsys, "index", "--root", str(corpus))[0] == 0
    untracked = subprocess.run(["git", "-C", str(corpus), "status", "--porcelain", "--untracked-files=all"],
                               check=True, capture_output=True, text=True).stdout
    assert ".ragx" not in untracked and "a.md" in untracked


@pytest.mark.parametrize("command", [["version"], ["models"]])  # typer's echo; the rich console
def test_a_reader_closing_stdout_early_exits_141_not_the_no_results_code(command, tmp_path):
    """`ragx ... | head -1` once head has gone: a real pipe with no reader, in a process of its own."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sys.executable, "-c", "import sys; from ragx.cli.main import run; run(sys.argv[1:])", *command],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120,
                              env={**os.environ, "HOME": str(tmp_path), "RAGX_RC": str(tmp_path / "rc")})
    finally:
        os.close(write_end)
    assert done.returncode == 141 and "Traceback" not in done.stderr


def test_human_results_name_heat_and_hops_only_when_the_graph_ran(corpus, capsys):
    assert call(capsys, "index", "--root", str(corpus))[0] == 0
    code, out, _ = call(capsys, "query", "rivers boats", "--root", str(corpus), "--no-evidence-check")
    assert code == 0 and "fused " in out and "heat" not in out and "hop" not in out
    code, out, _ = call(capsys, "query", "rivers boats", "--root", str(corpus), "--no-evidence-check", "--graph")
    assert code == 0 and "heat " in out and "hop 0" in out
