"""A manifest value ragx did not write is named with its repair on every command, and `ragx index
--full` repairs it (issue 42: `generation = "x"` was `internal error: ValueError` everywhere)."""

from __future__ import annotations

import sqlite3

import pytest
from cli_runner import call
from fakes import make_indexed_corpus

BAD = [("generation", '"x"'), ("next_chunk_id", "-5"), ("checksums", "[1]"), ("dim", '"abc"'), ("generation", "{not json")]


@pytest.fixture
def corpus(tmp_path, fake_model):
    return make_indexed_corpus(tmp_path)


def _set(root, key: str, text: str) -> None:
    con = sqlite3.connect(root / ".ragx" / "index.sqlite")
    with con:
        con.execute("UPDATE manifest SET value = ? WHERE key = ?", (text, key))
    con.close()


@pytest.mark.parametrize("key, text", BAD)
def test_a_bad_manifest_value_is_named_and_full_repairs_it(corpus, capsys, key, text):
    _set(corpus, key, text)
    for args in (("query", "bread oven"), ("status",), ("index",)):
        code, _, err = call(capsys, *args, "--root", str(corpus))
        assert code == 2, (args, err)
        lines = [line for line in err.splitlines() if line.startswith("ragx: error:")]
        assert len(lines) == 1 and key in lines[0] and "ragx index --full" in lines[0] and "internal error" not in lines[0]
    assert call(capsys, "index", "--full", "--root", str(corpus))[0] == 0
    code, out, _ = call(capsys, "status", "--deep", "--json", "--root", str(corpus))
    assert code == 0 and '"consistent": true' in out
    assert call(capsys, "query", "bread oven", "--root", str(corpus))[0] == 0
