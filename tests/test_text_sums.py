"""Chunk rows carry a checksum of their text (issue 42): a text edited inside index.sqlite is reported
by `status --deep` and refused by a query that would show it, `ragx index --full` repairs it, and an
index from before the checksums gets them in its next index run."""

from __future__ import annotations

import json
import sqlite3

import pytest
from cli_runner import call
from fakes import make_indexed_corpus


@pytest.fixture
def corpus(tmp_path, fake_model):
    return make_indexed_corpus(tmp_path)


def _sql(root, statement: str, args: tuple = ()) -> list[tuple]:
    con = sqlite3.connect(root / ".ragx" / "index.sqlite")
    try:
        with con:
            return con.execute(statement, args).fetchall()
    finally:
        con.close()


def _edit_top_result(root, capsys, query: str) -> int:
    code, out, _ = call(capsys, "query", query, "--json", "--root", str(root))
    assert code == 0
    chunk = json.loads(out)["results"][0]["chunk_id"]
    _sql(root, "UPDATE chunks SET text = text || ' planted words' WHERE id = ?", (chunk,))
    return chunk


def _deep(root, capsys) -> dict:
    return json.loads(call(capsys, "status", "--deep", "--json", "--root", str(root))[1])


def test_an_edited_chunk_text_is_reported_refused_and_repaired(corpus, capsys):
    assert _deep(corpus, capsys)["consistent"]
    chunk = _edit_top_result(corpus, capsys, "bread oven")
    info = _deep(corpus, capsys)
    assert not info["consistent"]
    assert any(f"chunks {chunk}" in p and "ragx index --full" in p for p in info["problems"]), info["problems"]
    code, out, err = call(capsys, "query", "bread oven", "--json", "--root", str(corpus))
    lines = [line for line in err.splitlines() if line.startswith("ragx: error:")]
    assert code == 2 and len(lines) == 1 and "checksum" in lines[0] and "planted" not in out
    assert call(capsys, "index", "--full", "--root", str(corpus))[0] == 0
    assert _deep(corpus, capsys)["consistent"]
    code, out, _ = call(capsys, "query", "bread oven", "--json", "--root", str(corpus))
    assert code == 0 and "planted" not in out


def test_an_edit_outside_the_results_leaves_queries_working(corpus, capsys):
    """Queries check only the rows they return; the rest is `status --deep`'s to find."""
    chunk = _edit_top_result(corpus, capsys, "bread oven")
    code, out, _ = call(capsys, "query", "telescope orbit", "--json", "--root", str(corpus))
    assert code == 0 and chunk not in [r["chunk_id"] for r in json.loads(out)["results"]]


def test_an_index_from_before_the_checksums_gets_them_in_its_next_run(corpus, capsys):
    _sql(corpus, "ALTER TABLE chunks DROP COLUMN text_sum")
    assert call(capsys, "query", "bread oven", "--root", str(corpus))[0] == 0  # a reader: nothing to check yet
    assert _deep(corpus, capsys)["consistent"]
    assert call(capsys, "index", "--root", str(corpus))[0] == 0
    assert _sql(corpus, "SELECT count(*) = count(text_sum) FROM chunks") == [(1,)]
    assert _deep(corpus, capsys)["consistent"]
    _edit_top_result(corpus, capsys, "bread oven")
    assert not _deep(corpus, capsys)["consistent"]


def test_rows_an_older_ragx_wrote_without_a_checksum_are_not_damage(corpus, capsys):
    """Versions sharing an index: an older ragx inserts rows without text_sum (NULL)."""
    _sql(corpus, "UPDATE chunks SET text_sum = NULL WHERE id IN (SELECT id FROM chunks LIMIT 5)")
    assert _deep(corpus, capsys)["consistent"]
    assert call(capsys, "query", "bread oven", "--root", str(corpus))[0] == 0
