"""Query behaviour over a small indexed corpus with the hash embedder (no model)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from cli_runner import call
from fakes import HashEmbedder, make_indexed_corpus

from ragx.api import Corpus
from ragx.config import load_settings
from ragx.index.build import run_index


@pytest.fixture(autouse=True)
def _fake_model(fake_model):
    """The shared fake embedder (conftest.fake_model) for every test here."""


@pytest.fixture
def corpus(tmp_path):
    return make_indexed_corpus(tmp_path)


def test_query_json_has_locations_breakdown_and_exact_slices(corpus, capsys):
    code, out, _ = call(capsys, "query", "telescope orbit comet", "--root", str(corpus), "--json", "--top", "5")
    doc = json.loads(out)
    assert code == 0 and doc["schema"] == "ragx.query.v1" and len(doc["results"]) == 5
    for r in doc["results"]:
        assert r["file"].startswith("astronomy")
        assert set(r["breakdown"]) == {"dense", "lexical", "fused", "heat", "rerank", "anchor_dense", "anchor_lexical"}
        data = (corpus / r["file"]).read_bytes()
        full = data[r["byte_start"] : r["byte_end"]].decode()
        assert full.startswith(r["text"]) and r["truncated"] == (len(full) > len(r["text"]))
    scores = [r["score"] for r in doc["results"]]
    assert scores == sorted(scores, reverse=True)


def test_explain_paths_use_stored_edges_with_exact_weights(corpus):
    c = Corpus(corpus)
    db = sqlite3.connect(corpus / ".ragx" / "index.sqlite")
    edges = {(a, b): w for a, b, w in db.execute("SELECT a, b, weight FROM edges")}
    hops_seen = 0
    for q in ["bread oven", "sail mast", "galaxies nebula", "anchor yeast", "light years flour"]:
        doc = c.query(q, top=1000, explain=True, graph=True, params=c.settings.search.replace(dense_n=20, lexical_n=20))
        for r in doc["results"]:
            path = r["path"]
            assert path[0]["hop"] == 0 and path[-1]["chunk_id"] == r["chunk_id"]
            assert len(path) - 1 == r["hop"]
            for step in path[1:]:
                hops_seen += 1
                key = (min(step["from"], step["chunk_id"]), max(step["from"], step["chunk_id"]))
                assert edges[key] == step["edge_weight"]
    assert hops_seen > 0


def test_switches_change_the_pipeline(corpus):
    c = Corpus(corpus)
    few_seeds = c.settings.search.replace(dense_n=3, lexical_n=3, query_floor=0.0)
    graph = c.query("bread oven", top=1000, params=few_seeds, graph=True)
    flat = c.query("bread oven", top=1000, graph=False, params=few_seeds)
    assert len(graph["results"]) > len(flat["results"])
    assert max(r["hop"] for r in graph["results"]) >= 1
    assert max(r["hop"] for r in flat["results"]) == 0
    nolex = c.query("bread oven", top=50, lexical=False, graph=False)
    assert all(r["breakdown"]["fused"] > 0 for r in nolex["results"])
    assert nolex["params"]["lexical_n"] == 0


def test_files_only_ranks_files_by_top_chunk_sum(corpus, capsys):
    (corpus / "ragx.toml").write_text("[search]\nfile_chunks = 3\n")
    code, out, _ = call(capsys, "query", "flour butter dough", "--root", str(corpus), "--files-only", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["schema"] == "ragx.files.v1"
    files = [r["file"] for r in doc["results"]]
    assert len(files) == len(set(files)) and files[0].startswith("cooking")
    chunks = Corpus(corpus).query("flour butter dough", top=1000)["results"]
    for r in doc["results"][:3]:
        mine = sorted((x["score"] for x in chunks if x["file"] == r["file"]), reverse=True)[:3]
        assert r["score"] == pytest.approx(sum(mine))


@pytest.mark.parametrize("text", ['"unbalanced', "NEAR(a b", "a AND OR NOT", "*", "col:value", "'; DROP TABLE chunks; --", "ünïcödé 日本語"])
def test_any_text_is_a_valid_query(corpus, text):
    doc = Corpus(corpus).query(text)
    assert isinstance(doc["results"], list)


def test_exit_codes(corpus, capsys, tmp_path_factory):
    assert call(capsys, "query", "   ", "--root", str(corpus))[0] == 2
    empty = tmp_path_factory.mktemp("noindex")
    code, out, err = call(capsys, "query", "x", "--root", str(empty))
    assert code == 2 and "no index" in err and out == ""
    code, out, _ = call(capsys, "query", "bread", "--root", str(corpus))
    assert code == 0 and "cooking" in out
    # Nothing matches: empty corpus index
    e2 = tmp_path_factory.mktemp("emptycorpus")
    (e2 / "blank.md").write_text("   \n")
    run_index(e2, load_settings(e2), HashEmbedder())
    assert call(capsys, "query", "bread", "--root", str(e2), "--json")[0] == 1


def test_corrupt_index_is_exit_2(corpus, capsys):
    gen = sorted((corpus / ".ragx").glob("gen-*"))[-1]
    (gen / "graph.npz").write_bytes(b"garbage")
    code, _, err = call(capsys, "query", "bread", "--root", str(corpus))
    assert code == 2 and "index --full" in err


def test_query_reads_stdin(corpus, capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("sail boat\n"))
    code, out, _ = call(capsys, "query", "-", "--root", str(corpus), "--json")
    assert code == 0 and json.loads(out)["query"] == "sail boat"
