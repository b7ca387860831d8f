"""The "openai" embedding engine against real OpenAI-compatible HTTP servers on 127.0.0.1."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from fakes import HashEmbedder, make_corpus
from servers import (  # noqa: F401 (fixtures)
    FakeOpenAI,
    free_port,
    hash_server,
    openai_toml,
    provider_env,
    write_toml,
)

from ragx.api import Corpus
from ragx.cli.main import run
from ragx.errors import ConfigError, ProviderError
from ragx.models.openai_engine import OpenAIEmbedder
from ragx.models.registry import make_embedder

pytestmark = pytest.mark.usefixtures("provider_env")


def call(capsys, *args):
    with pytest.raises(SystemExit) as e:
        run(list(args))
    c = capsys.readouterr()
    return e.value.code, c.out, c.err


def test_vectors_batches_order_and_dim_come_from_the_server(hash_server):
    e = OpenAIEmbedder("hash-64", base_url=hash_server.base_url, backoff=0.01)
    texts = ["stars and comets", "bread", "a much longer text about sails, masts and anchors", "oven", "tide"]
    done = []
    vecs = e.embed_documents(texts, batch_size=2, progress=done.append)
    want = HashEmbedder().embed_documents(texts)
    np.testing.assert_allclose(vecs, want, atol=1e-6)
    assert vecs.dtype == np.float32 and sum(done) == 5 and len(hash_server.requests) == 3
    assert e.dim == 64 and len(hash_server.requests) == 3  # learnt from the first answer, no probe
    np.testing.assert_allclose(e.embed_query("bread"), want[1], atol=1e-6)
    assert e.name == "openai:hash-64"
    assert hash_server.requests[0]["body"]["model"] == "hash-64"


def test_dim_before_any_embedding_is_one_probe(hash_server):
    e = OpenAIEmbedder("hash-64", base_url=hash_server.base_url)
    assert e.dim == 64 and e.dim == 64 and len(hash_server.requests) == 1


def test_prefixes_are_sent_and_shape_identity_and_token_budget(hash_server):
    plain = OpenAIEmbedder("m", base_url=hash_server.base_url)
    e = OpenAIEmbedder("m", base_url=hash_server.base_url, doc_prefix="passage: ", query_prefix="query: ", max_tokens=256)
    e.embed_documents(["first doc", "second"], batch_size=8)
    e.embed_query("what is it")
    sent = [r["body"]["input"] for r in hash_server.requests]
    assert sent[0] == ["passage: first doc", "passage: second"] and sent[1] == ["query: what is it"]
    # The document prefix changes every stored vector, so it is part of the index identity.
    assert e.name != plain.name and "passage: " in e.name
    # ... and it shares the window with the chunk: the chunker gets the rest.
    n_prefix = int(e.token_counter().count(["passage: "])[0])
    assert n_prefix > 0
    assert e.token_counter().max_content_tokens == 256 - 2 - n_prefix
    assert plain.token_counter().max_content_tokens == 512 - 2  # default window, bundled WordPiece


def test_transient_500s_are_retried_then_succeed(hash_server):
    hash_server.fail(2, 500).fail(1, "drop")
    e = OpenAIEmbedder("m", base_url=hash_server.base_url, max_retries=3, backoff=0.01)
    v = e.embed_query("sails")
    assert v.shape == (64,) and len(hash_server.requests) == 4


def test_retries_are_bounded_and_the_error_is_one_line(hash_server):
    hash_server.fail(10, 503, "overloaded")
    e = OpenAIEmbedder("m", base_url=hash_server.base_url, max_retries=2, backoff=0.01)
    with pytest.raises(ProviderError) as info:
        e.embed_query("sails")
    msg = str(info.value)
    assert len(hash_server.requests) == 3 and "\n" not in msg
    assert hash_server.base_url in msg and "HTTP 503" in msg and "overloaded" in msg and "3 attempts" in msg


def test_dead_endpoint_is_a_one_line_provider_error_naming_it():
    url = f"http://127.0.0.1:{free_port()}/v1"
    e = OpenAIEmbedder("m", base_url=url, max_retries=2, backoff=0.01)
    with pytest.raises(ProviderError) as info:
        e.embed_documents(["x"])
    msg = str(info.value)
    assert msg.startswith(f"embedding server {url} unreachable: connection refused")
    assert "embeddings.base_url" in msg and "ollama serve" in msg and "\n" not in msg


def test_slow_server_times_out_within_bounds(hash_server):
    hash_server.delay = 1.0
    e = OpenAIEmbedder("m", base_url=hash_server.base_url, timeout=0.2, max_retries=1, backoff=0.01)
    t0 = time.perf_counter()
    with pytest.raises(ProviderError, match=r"timed out after 0.2 s .*embeddings.timeout"):
        e.embed_query("x")
    assert time.perf_counter() - t0 < 1.5  # two 0.2 s attempts, not the server's full second each


def test_client_errors_are_not_retried(hash_server):
    hash_server.fail(1, 404, "model 'nope' not found")
    e = OpenAIEmbedder("nope", base_url=hash_server.base_url, max_retries=3, backoff=0.01)
    with pytest.raises(ProviderError, match=r"HTTP 404: model 'nope' not found .*/v1"):
        e.embed_query("x")
    assert len(hash_server.requests) == 1


def test_api_key_env_unset_is_a_config_error_and_set_sends_the_header(tmp_path, monkeypatch):
    with FakeOpenAI(HashEmbedder(), api_key="s3cret") as server:
        write_toml(tmp_path, openai_toml(server.base_url, extra='api_key_env = "RAGX_TEST_KEY"\n'))
        monkeypatch.delenv("RAGX_TEST_KEY", raising=False)
        with pytest.raises(ConfigError, match="RAGX_TEST_KEY.*not set"):
            _ = Corpus(tmp_path).embedder
        monkeypatch.setenv("RAGX_TEST_KEY", "s3cret")
        Corpus(tmp_path).embedder.embed_query("x")
        assert server.requests[-1]["headers"]["Authorization"] == "Bearer s3cret"
        assert "s3cret" not in (tmp_path / "ragx.toml").read_text()
        # Without api_key_env the conventional OPENAI_API_KEY is sent ...
        write_toml(tmp_path, openai_toml(server.base_url))
        monkeypatch.setenv("OPENAI_API_KEY", "s3cret")
        Corpus(tmp_path).embedder.embed_query("y")
        assert server.requests[-1]["headers"]["Authorization"] == "Bearer s3cret"
        # ... and a wrong key is reported, not retried.
        monkeypatch.setenv("OPENAI_API_KEY", "wrong")
        n = len(server.requests)
        with pytest.raises(ProviderError, match="HTTP 401.*api_key_env"):
            Corpus(tmp_path).embedder.embed_query("z")
        assert len(server.requests) == n + 1


def test_base_url_precedence_config_then_env_then_lm_studio(monkeypatch, hash_server):
    monkeypatch.setenv("OPENAI_BASE_URL", hash_server.base_url + "/")
    assert make_embedder("openai", "m").base_url == hash_server.base_url
    assert make_embedder("openai", "m", base_url="http://10.0.0.1:8080/v1").base_url == "http://10.0.0.1:8080/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert make_embedder("openai", "m").base_url == "http://localhost:1234/v1"
    with pytest.raises(ValueError, match="needs embeddings.model"):
        make_embedder("openai", "")
    with pytest.raises(ValueError, match="base_url must be an http"):
        make_embedder("openai", "m", base_url="localhost:1234")


def test_unusable_answers_are_reported(tmp_path):
    class Broken:
        def embed_documents(self, texts, batch_size=1):
            return np.ones((len(texts) + 1, 4))  # one vector too many

    with FakeOpenAI(Broken()) as server:
        e = OpenAIEmbedder("m", base_url=server.base_url)
        with pytest.raises(ProviderError, match="2 vectors for 1 inputs"):
            e.embed_query("x")


def test_index_query_and_model_change_through_the_cli(tmp_path, capsys, hash_server):
    make_corpus(tmp_path, n_per_topic=2)
    write_toml(tmp_path, openai_toml(hash_server.base_url))
    code, out, err = call(capsys, "index", "--root", str(tmp_path), "--json")
    assert code == 0, err
    assert json.loads(out)["files"] == 7
    code, out, _ = call(capsys, "status", "--root", str(tmp_path), "--json")
    status = json.loads(out)
    assert status["model"] == "openai:hash-64" and status["dim"] == 64 and status["consistent"]
    code, out, _ = call(capsys, "query", "telescope comet", "--root", str(tmp_path), "--json", "--top", "3")
    assert code == 0 and json.loads(out)["results"][0]["file"].startswith("astronomy")
    # Another served model: the manifest guard asks for a full rebuild.
    write_toml(tmp_path, openai_toml(hash_server.base_url, model="other-model"))
    (tmp_path / "new.md").write_text("# new\n\nsails\n")
    code, _, err = call(capsys, "index", "--root", str(tmp_path))
    assert code == 2 and "openai:other-model" in err and "index --full" in err
    code, _, err = call(capsys, "query", "sails", "--root", str(tmp_path))
    assert code == 2 and "index --full" in err


def test_server_dying_mid_index_leaves_the_previous_index(tmp_path, capsys, hash_server):
    make_corpus(tmp_path, n_per_topic=4)
    write_toml(tmp_path, openai_toml(hash_server.base_url, extra="batch_size = 2\n"))
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    _, before, _ = call(capsys, "query", "bread oven", "--root", str(tmp_path), "--json")
    _, status_before, _ = call(capsys, "status", "--root", str(tmp_path), "--json")
    port = hash_server.port

    for f in sorted(tmp_path.glob("*.md")):  # new texts: the rebuild must embed (unchanged ones are reused)
        f.write_text(f.read_text() + "\nrevised with an anchor and a comet\n")
    hash_server.die_after = len(hash_server.requests) + 3  # probe + two batches, then gone
    code, out, err = call(capsys, "index", "--root", str(tmp_path), "--full")
    lines = [line for line in err.splitlines() if line.startswith("ragx: error")]
    assert code == 2 and len(lines) == 1, err
    assert f"embedding server {hash_server.base_url} unreachable" in lines[0]

    code, out, _ = call(capsys, "status", "--root", str(tmp_path), "--json")
    after = json.loads(out)
    assert code == 0 and after["consistent"] and after["drift"]["changed"] == 12
    assert after["generation"] == json.loads(status_before)["generation"]
    assert after["chunks"] == json.loads(status_before)["chunks"]
    # With the server down a query fails with the same one line; back up, it answers as before.
    code, _, err = call(capsys, "query", "bread oven", "--root", str(tmp_path))
    assert code == 2 and "unreachable" in err
    with FakeOpenAI(HashEmbedder(), port=port):
        code, out, _ = call(capsys, "query", "bread oven", "--root", str(tmp_path), "--json")
    assert code == 0
    assert [r["chunk_id"] for r in json.loads(out)["results"]] == [r["chunk_id"] for r in json.loads(before)["results"]]


@pytest.mark.model
def test_served_embedded_model_equals_the_embedded_engine():
    from ragx.models.embedded import DEFAULT_MODEL

    direct = make_embedder("embedded", DEFAULT_MODEL)
    texts = ["Heat spreads along the similarity graph.", "def f(x):\n    return x", "naïve café ☕"]
    with FakeOpenAI(make_embedder("embedded", DEFAULT_MODEL)) as server:
        http = make_embedder("openai", DEFAULT_MODEL, base_url=server.base_url)
        got = http.embed_documents(texts, batch_size=2)
        q = http.embed_query("graph heat")
    np.testing.assert_allclose(got, direct.embed_documents(texts, batch_size=2), atol=1e-5)
    np.testing.assert_allclose(q, direct.embed_query("graph heat"), atol=1e-5)
