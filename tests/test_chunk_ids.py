"""Chunk ids are never given to two texts: a next_chunk_id that went back, is damaged or absurd never
makes a run reuse a live chunk's id, and `ragx index --full` recovers from each (issue 42: a full run
repairing a bad value restarted ids from 1; a value that went back was an internal IndexError)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from cli_runner import call
from fakes import make_indexed_corpus

from ragx.index.manifest_values import MAX_CHUNK_ID


@pytest.fixture
def corpus(tmp_path, fake_model):
    return make_indexed_corpus(tmp_path)


def _sql(root, statement: str) -> list[tuple]:
    con = sqlite3.connect(root / ".ragx" / "index.sqlite")
    try:
        with con:
            return con.execute(statement).fetchall()
    finally:
        con.close()


def _ids(root) -> set[int]:
    return {r[0] for r in _sql(root, "SELECT id FROM chunks")}


def _edit(root) -> None:
    path = root / "notes.txt"
    path.write_text(path.read_text() + "\nA new line about flour and yeast.\n")


def _consistent(root, capsys) -> bool:
    return json.loads(call(capsys, "status", "--deep", "--json", "--root", str(root))[1])["consistent"]


def test_a_next_chunk_id_that_went_back_never_reuses_a_live_id(corpus, capsys):
    before = _ids(corpus)
    _sql(corpus, "UPDATE manifest SET value = '3' WHERE key = 'next_chunk_id'")
    _edit(corpus)
    assert call(capsys, "index", "--root", str(corpus))[0] == 0
    new = _ids(corpus) - before
    assert new and min(new) > max(before)
    assert _consistent(corpus, capsys)


@pytest.mark.parametrize("value", ["-4", '"x"', str(MAX_CHUNK_ID + 1), "9223372036854775800"])
def test_a_bad_next_chunk_id_is_named_and_full_gives_fresh_ids(corpus, capsys, value):
    before = _ids(corpus)
    _sql(corpus, f"UPDATE manifest SET value = '{value}' WHERE key = 'next_chunk_id'")
    _edit(corpus)
    code, _, err = call(capsys, "index", "--root", str(corpus))
    assert code == 2 and "next_chunk_id" in err and "ragx index --full" in err and "internal error" not in err
    assert call(capsys, "index", "--full", "--root", str(corpus))[0] == 0
    after = _ids(corpus)
    assert min(after) > max(before) and max(after) < MAX_CHUNK_ID  # no id of the old rows given again
    assert _consistent(corpus, capsys)
