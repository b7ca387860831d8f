"""scripts/check/race_test.py: readers (CLI subprocesses, one MCP server) racing index commits, every result
checked against the store at its generation. The checker itself is shown to catch a mislabel."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from fakes import make_corpus

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "check" / "race_test.py"


def _race_module():
    spec = importlib.util.spec_from_file_location("race_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["race_test"] = module
    spec.loader.exec_module(module)
    return module


def _fake_corpus(root: Path) -> Path:
    root.mkdir()
    make_corpus(root, n_per_topic=4)
    (root / "ragx.toml").write_text('[embeddings]\nengine = "test-hash"\n', encoding="utf-8")
    return root


def test_the_checker_catches_a_result_labelled_with_another_chunk(tmp_path):
    race = _race_module()
    root = _fake_corpus(tmp_path / "c")
    import subprocess

    subprocess.run(race.ragx_argv(["index", "--root", str(root)], True), check=True, env=race.child_env(True), capture_output=True)
    truth = race.Truth()
    generation = truth.record(root / ".ragx" / "index.sqlite")
    doc = subprocess.run(
        race.ragx_argv(["query", "bread oven flour", "--root", str(root), "--json", "--explain"], True),
        env=race.child_env(True), capture_output=True, text=True, check=True,
    )
    import json

    results = json.loads(doc.stdout)["results"]
    assert len(results) >= 2
    assert all(race.check_result(truth, generation, r) == [] for r in results)
    shifted = dict(results[0], **{k: results[1][k] for k in ("chunk_id", "file", "line_start", "line_end", "byte_start", "byte_end", "text")})
    assert race.check_result(truth, generation, shifted)  # the explain path still names the first chunk
    wrong_text = dict(results[0], text="not the stored text")
    assert race.check_result(truth, generation, wrong_text)
    assert race.check_result(truth, generation + 1, results[0]) == [f"generation {generation + 1} was never committed"]


@pytest.mark.slow
def test_bounded_race_has_no_errors_and_no_mislabelled_results(tmp_path, capsys):
    race = _race_module()
    root = _fake_corpus(tmp_path / "c")
    code = race.main(["--root", str(root), "--cli", "40", "--mcp", "200", "--commits", "10", "--fake"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "errors 0" in out and "mislabelled 0" in out and "commits" in out
