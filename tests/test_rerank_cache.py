"""The rerank-score cache: each (reranker identity, query, chunk text) pair runs the cross-encoder
once; retrained weights are another reranker; `ragx query`/`ragx eval` go through it."""

from __future__ import annotations

import numpy as np
import pytest
from cross_encoders import build_tiny_cross_encoder
from fakes import HashEmbedder, make_corpus
from servers import provider_env, write_toml  # noqa: F401 (fixture)

from ragx.api import Corpus
from ragx.config import load_settings
from ragx.index.build import run_index
from ragx.models.rerank import CrossEncoderReranker
from ragx.models.rerank_cache import CachedReranker, default_score_path, reranker_identity

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("provider_env")]

TEXTS = ["flour butter oven bake", "stars galaxies telescope", "boat wind sail", "flour butter oven bake", "x"]


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "ragx-cache"))


def cached(model_dir, path) -> CachedReranker:
    return CachedReranker(CrossEncoderReranker(str(model_dir), max_length=128), path)


def test_a_pair_is_scored_once_and_read_back_in_any_order(tiny_cross_encoder, tmp_path):
    path = tmp_path / "scores.sqlite"
    r = cached(tiny_cross_encoder, path)
    first = r.score("bread oven", TEXTS)
    assert r.computed == 4 and r.hits == 1  # the repeated text is scored once
    assert first[0] == first[3] and np.all(np.isfinite(first))
    direct = CrossEncoderReranker(str(tiny_cross_encoder), max_length=128).score("bread oven", TEXTS)
    np.testing.assert_allclose(first, direct, atol=1e-6)
    again = cached(tiny_cross_encoder, path)  # another process, same file
    assert np.array_equal(again.score("bread oven", TEXTS[::-1]), first[::-1])
    assert again.computed == 0 and again.hits == 5
    more = again.score("bread oven", [*TEXTS, "a new chunk"])  # only the new pair runs the model
    assert again.computed == 1 and np.array_equal(more[:5], first)
    other = again.score("telescope", TEXTS[:2])  # another query is another pair
    assert again.computed == 3 and not np.array_equal(other, first[:2])
    assert again.score("q", []).shape == (0,)


def test_changed_weights_are_another_reranker(tmp_path):
    model = build_tiny_cross_encoder(tmp_path / "ce", seed=0)
    path = tmp_path / "scores.sqlite"
    before_id = reranker_identity(str(model), 128)
    before = cached(model, path).score("bread oven", TEXTS)
    build_tiny_cross_encoder(model, seed=1)  # retrained in place: same folder, same file names
    after_id = reranker_identity(str(model), 128)
    assert before_id != after_id and before_id.split("@")[0] == after_id.split("@")[0] == str(model)
    r = cached(model, path)
    after = r.score("bread oven", TEXTS)
    assert r.computed == 4 and r.hits == 1 and not np.allclose(after, before)  # nothing read from the file
    assert reranker_identity(str(model), 64) != after_id  # truncation changes scores: part of the identity


def test_a_hub_name_without_local_files_has_no_identity(tmp_path):
    assert reranker_identity("nobody-here/no-such-cross-encoder", 128) is None  # HF_HUB_OFFLINE=1


@pytest.mark.parametrize("damage", ["file-as-folder", "garbage-file"])
def test_an_unusable_cache_file_scores_without_it_and_warns_once(tiny_cross_encoder, tmp_path, capsys, damage):
    if damage == "file-as-folder":
        blocker = tmp_path / "not-a-folder"
        blocker.write_text("a file where the cache folder should be")
        path = blocker / "scores.sqlite"
    else:
        path = tmp_path / "scores.sqlite"
        path.write_bytes(b"this is not an SQLite database " * 200)
    r = cached(tiny_cross_encoder, path)
    a, b = r.score("bread oven", TEXTS), r.score("bread oven", TEXTS)
    np.testing.assert_allclose(a, b, atol=1e-6)
    assert r.computed == 10 and r.hits == 0
    assert capsys.readouterr().err.count("rerank score cache") == 1


def test_queries_and_eval_share_the_default_score_file(tiny_cross_encoder, tmp_path, fake_model):
    root = tmp_path / "corpus"
    root.mkdir()
    make_corpus(root)
    run_index(root, load_settings(root), HashEmbedder())
    write_toml(root, f'[rerank]\nmodel = "{tiny_cross_encoder}"\nmax_length = 128\n')
    first = Corpus(root).query("bread oven", top=5)
    assert first["rerank"]["used"] is True and default_score_path().exists()
    assert default_score_path() == tmp_path / "ragx-cache" / "rerank" / "scores.sqlite"
    corpus = Corpus(root)  # a new process: the same query reranks without running the model
    again = corpus.query("bread oven", top=5)
    assert corpus.reranker.computed == 0 and corpus.reranker.hits > 0
    assert [r["breakdown"]["rerank"] for r in again["results"]] == [r["breakdown"]["rerank"] for r in first["results"]]
