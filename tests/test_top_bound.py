"""`top` has one bound, search.top's in the settings table, whether it comes from ragx.toml, the CLI or
MCP (issue 42: top = 10^12 was accepted by the CLI and MCP while ragx.toml capped it at 100,000)."""

from __future__ import annotations

import pytest
from cli_runner import call
from fakes import make_indexed_corpus

from ragx.api import Corpus
from ragx.config import LIMITS
from ragx.errors import UsageError


@pytest.fixture
def corpus(tmp_path, fake_model):
    return make_indexed_corpus(tmp_path)


def test_cli_and_api_refuse_what_ragx_toml_refuses(corpus, capsys):
    too_many = int(LIMITS["search.top"].high) + 1
    code, out, err = call(capsys, "query", "bread", "--root", str(corpus), "--top", str(too_many))
    assert code == 2 and out == "" and "out of range" in err and err.count("ragx: error:") == 1
    with pytest.raises(UsageError, match="out of range"):  # what the MCP search tool calls
        Corpus(corpus).query("bread", top=10**12)
    (corpus / "ragx.toml").write_text(f"[search]\ntop = {too_many}\n", encoding="utf-8")
    code, _, err = call(capsys, "query", "bread", "--root", str(corpus))
    assert code == 2 and "search.top" in err
    (corpus / "ragx.toml").unlink()
    assert call(capsys, "query", "bread", "--root", str(corpus), "--top", str(too_many - 1))[0] == 0
