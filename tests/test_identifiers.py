"""Identifier-aware BM25 terms (ragx/index/identifiers.py): the words inside an identifier and the whole
of it match, in documents and queries, whichever style each is written in."""

from __future__ import annotations

import numpy as np
import pytest

from ragx.index.fts_tokens import shared
from ragx.index.identifiers import identifier_parts
from ragx.index.lexicon import Lexicon, LexiconPart
from ragx.search.lexical import bm25_terms

DOCS = {
    1: "def parse_args(argv):\n    return argv",
    2: "function parseArgs(argv) {\n  return argv;\n}",
    3: "class HTTPAdapter(BaseAdapter):\n    pass",
    4: "result = click.core.Context.invoke(command)",
    5: "We parse the command line, and the arguments go to the adapter over HTTP.",
    6: "A context manager that invokes the click handler.",
}


@pytest.fixture(scope="module")
def lexicon():
    ids = np.array(sorted(DOCS))
    return Lexicon(LexiconPart.build(ids, [DOCS[i] for i in ids]), LexiconPart.empty(), ids)


def ranked(lexicon: Lexicon, query: str) -> list[int]:
    ids, scores = lexicon.matches(bm25_terms(query))
    return [int(i) for i in ids[np.lexsort((ids, -scores))]]


@pytest.mark.parametrize("query", ["parse_args", "parseArgs", "ParseArgs", "PARSE_ARGS"])
def test_an_identifier_in_any_style_finds_both_spellings_first(lexicon, query):
    assert set(ranked(lexicon, query)[:2]) == {1, 2}


@pytest.mark.parametrize("query, first", [("HTTPAdapter", 3), ("http_adapter", 3), ("click.core.Context.invoke", 4),
                                          ("Context.invoke", 4)])
def test_the_whole_identifier_outranks_its_words_scattered_in_prose(lexicon, query, first):
    assert ranked(lexicon, query)[0] == first


@pytest.mark.parametrize("query, found", [("parse args", {1, 2}), ("http adapter", {3}), ("invoke context", {4})])
def test_the_words_inside_an_identifier_match_plain_words(lexicon, query, found):
    assert found <= set(ranked(lexicon, query))


def test_terms_of_identifiers():
    assert shared().of_words(["parse_args"]) == ["pars", "arg", "parsearg"]
    assert shared().of_words(["parseArgs"]) == ["parsearg", "pars", "arg"]
    assert shared().of_words(["HTTPAdapter"]) == ["httpadapt", "http", "adapt"]
    assert shared().of_words(["click.core.Context.invoke"]) == ["click", "core", "context", "invok", "clickcorecontextinvok"]


@pytest.mark.parametrize("piece", ["mRNA", "pH", "IgG", "e.g.", "U.S.", "IL-6", "boundary-layer", "prandtl's", "3.5", "x"])
def test_prose_pieces_gain_nothing(piece):
    assert identifier_parts(piece) == []


def test_query_terms_add_each_identifier_term_once():
    assert bm25_terms("How does parse_args read sys.argv?") == ["pars", "arg", "read", "sy", "argv", "parsearg", "sysargv"]
    # a name repeated in many identifiers counts as often as the plain words say, no more
    assert bm25_terms("admin_blueprint test_blueprint register_blueprint").count("blueprint") == 1
    assert bm25_terms("what is it") == ["what", "is", "it"]  # nothing but function words: kept
    assert bm25_terms("boundary layer flow") == shared().of_words(["boundary", "layer", "flow"])  # prose: as before


def test_query_words_are_learnt_again_after_the_memory_is_full(monkeypatch):
    """A word already known when the remembered words overflow is learnt again with the new ones (it was
    forgotten with the rest: a KeyError before)."""
    from ragx.index import fts_tokens

    tokens = fts_tokens.PieceTokens()
    monkeypatch.setattr(fts_tokens, "WORDS_REMEMBERED", 3)
    assert tokens.of_words(["comet", "orbit"]) == ["comet", "orbit"]
    assert tokens.of_words(["comet", "harbours", "sails"]) == ["comet", "harbour", "sail"]
