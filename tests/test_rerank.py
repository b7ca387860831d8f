"""Cross-encoder reranking: a tiny real CrossEncoder through the real loading and scoring path, and
the degraded path (model missing, extra missing) that answers anyway with one warning."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from cli_runner import call
from fakes import make_indexed_corpus
from servers import provider_env, write_toml  # noqa: F401 (fixture)

from ragx.api import Corpus
from ragx.errors import ProviderError
from ragx.models.rerank import CrossEncoderReranker

pytestmark = pytest.mark.usefixtures("provider_env")


@pytest.fixture(autouse=True)
def _fake_model(fake_model):
    """The shared fake embedder (conftest.fake_model) for every test here."""


@pytest.fixture
def corpus(tmp_path):
    return make_indexed_corpus(tmp_path)


@pytest.mark.model
def test_tiny_cross_encoder_scores_through_the_real_path(tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    texts = ["flour butter oven bake", "stars galaxies telescope", "boat wind sail", "x"]
    r = CrossEncoderReranker(str(tiny_cross_encoder), batch_size=2, max_length=128)
    got = r.score("bread oven", texts)
    assert got.shape == (4,) and got.dtype == np.float64 and np.all(np.isfinite(got))
    assert len(set(np.round(got, 6))) == 4  # the pairs really differ
    direct = CrossEncoder(str(tiny_cross_encoder), max_length=128).predict([("bread oven", t) for t in texts])
    np.testing.assert_allclose(got, direct, atol=1e-5)
    assert r.score("q", []).shape == (0,)


@pytest.mark.model
def test_rerank_scores_show_in_the_breakdown_and_weigh_by_alpha(corpus, tiny_cross_encoder, capsys):
    write_toml(corpus, f'[rerank]\nmodel = "{tiny_cross_encoder}"\nmax_length = 128\n')
    c = Corpus(corpus)
    doc = c.query("bread oven", top=5)
    assert doc["rerank"] == {"used": True, "model": str(tiny_cross_encoder)}
    rr = [r["breakdown"]["rerank"] for r in doc["results"]]
    assert all(isinstance(x, float) for x in rr)
    # The breakdown carries the cross-encoder's own score of (query, chunk text).
    top = doc["results"][0]
    text = c.searcher.store.chunks([top["chunk_id"]], ("id", "text"))[0]["text"]
    assert top["breakdown"]["rerank"] == pytest.approx(c.reranker.score("bread oven", [text])[0], abs=1e-5)
    # With alpha alone, the order is the reranker's.
    only = c.settings.search.replace(rerank_weight=1.0, heat_weight=0.0, dense_weight=0.0, lexical_weight=0.0)
    ranked = c.query("bread oven", top=10, params=only)
    scores = [r["breakdown"]["rerank"] for r in ranked["results"]]
    assert scores == sorted(scores, reverse=True)
    # --no-rerank: alpha 0, no scores, and the document says why.
    off = c.query("bread oven", top=5, rerank=False)
    assert off["rerank"]["used"] is False and "--no-rerank" in off["rerank"]["skipped"]
    assert all(r["breakdown"]["rerank"] is None for r in off["results"])
    assert "warning" not in capsys.readouterr().err


@pytest.mark.model
def test_pairs_longer_than_the_model_can_position_are_truncated(tiny_cross_encoder):
    from ragx.models.rerank import CrossEncoderReranker

    scores = CrossEncoderReranker(str(tiny_cross_encoder), max_length=512).score("q", ["word " * 400, "short"])
    assert scores.shape == (2,) and np.all(np.isfinite(scores))


def test_missing_rerank_model_answers_with_one_warning_and_says_skipped(corpus, capsys):
    write_toml(corpus, '[rerank]\nmodel = "/no/such/cross-encoder"\n')
    code, out, err = call(capsys, "query", "bread oven", "--root", str(corpus), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["results"]
    assert doc["rerank"]["used"] is False and doc["rerank"]["model"] == "/no/such/cross-encoder"
    assert "no such directory" in doc["rerank"]["skipped"]
    assert all(r["breakdown"]["rerank"] is None for r in doc["results"])
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "rerank skipped" in warnings[0] and "/no/such/cross-encoder" in warnings[0]
    # Same process, same failure: no second warning, the same answer.
    code, out2, err2 = call(capsys, "query", "bread oven", "--root", str(corpus), "--json")
    assert code == 0 and "warning" not in err2 and json.loads(out2)["rerank"] == doc["rerank"]


def test_missing_extra_is_named_with_the_install_command(corpus, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if the extra were not installed
    write_toml(corpus, '[rerank]\nmodel = "cross-encoder/ms-marco-MiniLM-L6-v2"\n')
    doc = Corpus(corpus).query("sail mast")
    assert doc["results"] and doc["rerank"]["used"] is False
    assert 'pip install "ragx[rerank]"' in doc["rerank"]["skipped"]
    assert capsys.readouterr().err.count("warning") == 1


def test_a_failed_load_is_remembered_not_retried(monkeypatch):
    calls = []

    def failing(self):
        calls.append(1)
        raise ProviderError("reranker m could not be loaded: boom")

    monkeypatch.setattr(CrossEncoderReranker, "_load", failing)
    r = CrossEncoderReranker("m")
    for _ in range(3):
        with pytest.raises(ProviderError, match="boom"):
            r.score("q", ["a"])
    assert len(calls) == 1


@pytest.mark.model
def test_unreachable_hub_name_degrades(corpus, capsys):
    write_toml(corpus, '[rerank]\nmodel = "nobody-here/no-such-cross-encoder"\n')  # HF_HUB_OFFLINE=1: no network
    doc = Corpus(corpus).query("telescope")
    assert doc["results"] and doc["rerank"]["used"] is False
    assert doc["rerank"]["skipped"].startswith("reranker nobody-here/no-such-cross-encoder unavailable: not in the local model cache")
    assert "\n" not in doc["rerank"]["skipped"]
    assert capsys.readouterr().err.count("warning") == 1
