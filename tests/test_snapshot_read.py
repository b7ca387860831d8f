"""One snapshot per read: a query sees ONE committed generation, arrays and rows together, whatever
an index run commits meanwhile; and scoring (fusion, propagation) runs once per query."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from fakes import HashEmbedder, make_indexed_corpus

import ragx.scoring.score as score_mod
import ragx.search.searcher as searcher_mod
from ragx.api import Corpus
from ragx.config import load_settings
from ragx.errors import CorruptIndexError
from ragx.index.build import run_index
from ragx.index.layout import Layout
from ragx.index.snapshot import Snapshot
from ragx.search.results import QueryOptions
from ragx.search.searcher import Searcher

QUERY = "flour butter oven bread"


@pytest.fixture
def corpus(tmp_path):
    return make_indexed_corpus(tmp_path)


def _rows_by_id(root) -> dict[int, dict]:
    store = Corpus(root).searcher.store
    return {r["id"]: r for r in store.chunks(store.chunk_ids())}


def test_a_commit_during_a_query_does_not_change_what_it_reads(corpus, monkeypatch):
    """The index commits (deleting the files the query found) between the pass and the result rows:
    the query still answers from its own generation, every row the one its score belongs to."""
    before = _rows_by_id(corpus)
    searcher = Searcher(Layout(corpus), HashEmbedder)
    params = load_settings(corpus).search
    real_pass = searcher_mod.retrieval_pass

    def pass_then_commit(*args, **kwargs):
        c = real_pass(*args, **kwargs)
        for path in corpus.glob("cooking-*.md"):
            path.unlink()
        run_index(corpus, load_settings(corpus), HashEmbedder())
        return c

    monkeypatch.setattr(searcher_mod, "retrieval_pass", pass_then_commit)
    doc = searcher.search(QUERY, params, QueryOptions(explain=True))
    assert doc["generation"] == 1 and doc["results"]
    assert any(r["file"].startswith("cooking-") for r in doc["results"])
    for r in doc["results"]:
        row = before[r["chunk_id"]]
        assert (r["file"], r["line_start"], r["byte_start"]) == (row["path"], row["line_start"], row["byte_start"])
        assert row["text"].startswith(r["text"])
        assert r["path"][-1]["chunk_id"] == r["chunk_id"]
    monkeypatch.setattr(searcher_mod, "retrieval_pass", real_pass)
    after = searcher.search(QUERY, params, QueryOptions())
    assert after["generation"] == 2 and not any(r["file"].startswith("cooking-") for r in after["results"])


def test_a_result_read_before_a_commit_is_stale_when_its_file_changed_in_that_commit(corpus, monkeypatch, fake_model):
    """The file rows behind `stale` and `date` come from the results' own commit: an index run that
    commits an edit while the query runs cannot make the old text look fresh (lines that no longer
    hold it, `stale: false`)."""
    real_pass = searcher_mod.retrieval_pass

    def pass_then_edit_and_commit(*args, **kwargs):
        c = real_pass(*args, **kwargs)
        for path in corpus.glob("cooking-*.md"):
            path.write_text("# A heading added above\n\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
        run_index(corpus, load_settings(corpus), HashEmbedder())
        return c

    monkeypatch.setattr(searcher_mod, "retrieval_pass", pass_then_edit_and_commit)
    doc = Corpus(corpus).query(QUERY)
    cooking = [r for r in doc["results"] if r["file"].startswith("cooking-")]
    assert doc["generation"] == 1 and cooking
    for r in cooking:
        on_disk = (corpus / r["file"]).read_bytes()[r["byte_start"]: r["byte_end"]].decode("utf-8", "replace")
        assert on_disk != r["text"] and r["stale"] is True


def test_a_generation_folder_deleted_while_loading_is_retried_on_the_newer_one(corpus, monkeypatch):
    searcher = Searcher(Layout(corpus), HashEmbedder)
    real_load = Snapshot.load
    calls = []

    def load_racing_a_writer(folder, **kwargs):
        if not kwargs.get("with_ann"):  # the index runs' own loads
            return real_load(folder, **kwargs)
        calls.append(folder.name)
        if len(calls) == 1:  # a writer commits twice and deletes this folder before we read it
            (corpus / "notes.txt").write_text("more bread and oven\n", encoding="utf-8")
            run_index(corpus, load_settings(corpus), HashEmbedder())
            (corpus / "notes.txt").write_text("even more bread\n", encoding="utf-8")
            run_index(corpus, load_settings(corpus), HashEmbedder())
            assert not folder.exists()
        return real_load(folder, **kwargs)

    monkeypatch.setattr(Snapshot, "load", staticmethod(load_racing_a_writer))
    doc = searcher.search(QUERY, load_settings(corpus).search, QueryOptions())
    assert calls == ["gen-000001", "gen-000003"] and doc["generation"] == 3


def test_a_missing_generation_folder_is_one_clear_error(corpus):
    shutil.rmtree(Layout(corpus).gen(1))
    with pytest.raises(CorruptIndexError, match="run `ragx index --full`"):
        Corpus(corpus).query(QUERY)


def test_fusion_and_propagation_run_once_per_query(corpus, monkeypatch):
    counts = {"rrf": 0, "propagate": 0}

    def counted(name, fn):
        def wrapper(*a, **k):
            counts[name] += 1
            return fn(*a, **k)

        return wrapper

    monkeypatch.setattr(score_mod, "rrf", counted("rrf", score_mod.rrf))
    monkeypatch.setattr(score_mod, "propagate", counted("propagate", score_mod.propagate))

    class Reranker:
        name = "fake-reranker"

        def score(self, query, texts):
            return np.arange(len(texts), dtype=np.float64)

    searcher = Searcher(Layout(corpus), HashEmbedder, reranker_factory=Reranker)
    params = load_settings(corpus).search.replace(rerank_weight=0.5)
    doc = searcher.search(QUERY, params, QueryOptions(explain=True))
    assert doc["rerank"]["used"] is True
    assert counts == {"rrf": 1, "propagate": 1}
    searcher.search(QUERY, params, QueryOptions(files_only=True))
    assert counts == {"rrf": 2, "propagate": 2}
