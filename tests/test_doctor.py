"""`ragx doctor`: every configured provider run for real against loopback servers, and the index
checked against the config. Exit 0 healthy, 1 a check failed, 2 doctor could not run."""

from __future__ import annotations

import json

import pytest
from cli_runner import call
from fakes import HashEmbedder, make_corpus
from servers import (  # noqa: F401 (fixture)
    FakeOpenAI,
    expansion,
    free_port,
    openai_toml,
    provider_env,
    write_toml,
)

pytestmark = pytest.mark.usefixtures("provider_env")

NAMES = ["config", "embeddings", "rerank", "expand", "index.model", "index.integrity", "index.drift"]


def doctor(capsys, root):
    code, out, err = call(capsys, "doctor", "--root", str(root), "--json")
    doc = json.loads(out) if out.strip() else None
    return code, doc, err


def checks(doc):
    return {c["name"]: c for c in doc["checks"]}


@pytest.fixture
def server():
    with FakeOpenAI(HashEmbedder()) as s:
        s.default_chat = expansion(["a rewording", "another one"], "A passage that answers.")
        yield s


def toml(server, url=None):
    url = url or server.base_url
    return openai_toml(url) + f'\n[expand]\nenabled = true\nmodel = "chat"\nbase_url = "{url}"\nmax_retries = 0\n'


@pytest.fixture
def corpus(tmp_path, server, capsys):
    make_corpus(tmp_path, n_per_topic=2)
    write_toml(tmp_path, toml(server))
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    return tmp_path


def test_all_ok_exits_0(corpus, server, capsys):
    code, doc, err = doctor(capsys, corpus)
    assert code == 0, doc
    assert doc["schema"] == "ragx.doctor.v1" and doc["healthy"] and doc["failed"] == []
    assert [c["name"] for c in doc["checks"]] == NAMES
    by = checks(doc)
    assert {n: c["status"] for n, c in by.items()} == {n: ("skip" if n == "rerank" else "ok") for n in NAMES}
    for c in doc["checks"]:
        assert set(c) == {"name", "status", "detail", "hint", "elapsed_ms"}
        assert isinstance(c["elapsed_ms"], float) and c["elapsed_ms"] >= 0
    assert "openai:hash-64" in by["embeddings"]["detail"] and "dim 64" in by["embeddings"]["detail"]
    assert "2 variants" in by["expand"]["detail"] and "HyDE passage yes" in by["expand"]["detail"]
    # The providers were really called: embeddings, and one chat completion.
    assert "/v1/chat/completions" in server.paths() and "/v1/embeddings" in server.paths()
    # The text form says the same.
    code, out, _ = call(capsys, "doctor", "--root", str(corpus))
    assert code == 0 and "healthy" in out and "embeddings" in out


def test_dead_endpoint_fails_that_check_with_a_hint_and_exits_1(corpus, capsys):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    write_toml(corpus, toml(None, dead))
    code, doc, _ = doctor(capsys, corpus)
    assert code == 1 and not doc["healthy"]
    by = checks(doc)
    assert by["embeddings"]["status"] == "fail"
    assert f"embedding server {dead} unreachable: connection refused" in by["embeddings"]["detail"]
    assert dead in by["embeddings"]["hint"] and "embeddings.base_url" in by["embeddings"]["hint"]
    assert "ollama serve" in by["embeddings"]["hint"]
    assert by["expand"]["status"] == "fail" and "expand.base_url" in by["expand"]["hint"]
    # The index is still compared by name; the dimension could not be.
    assert by["index.model"]["status"] == "ok" and "dimension not checked" in by["index.model"]["detail"]
    assert doc["failed"] == ["embeddings", "expand"]
    code, out, _ = call(capsys, "doctor", "--root", str(corpus))
    assert code == 1 and "hint:" in out and "unhealthy" in out


def test_model_change_and_drift_fail_with_the_command_to_run(corpus, server, capsys):
    write_toml(corpus, toml(server).replace('model = "hash-64"', 'model = "other"'))
    (corpus / "extra.md").write_text("# extra\n\nnew words\n")
    code, doc, _ = doctor(capsys, corpus)
    by = checks(doc)
    assert code == 1 and by["embeddings"]["status"] == "ok"
    assert by["index.model"]["status"] == "fail" and "openai:other" in by["index.model"]["detail"]
    assert "ragx index --full" in by["index.model"]["hint"]
    assert by["index.drift"]["status"] == "fail" and "1 new" in by["index.drift"]["detail"]
    assert by["index.drift"]["hint"] == "run `ragx index`"


def test_unindexed_corpus_skips_the_index_checks(tmp_path, server, capsys):
    make_corpus(tmp_path, n_per_topic=1)
    write_toml(tmp_path, openai_toml(server.base_url))
    code, doc, _ = doctor(capsys, tmp_path)
    assert code == 0 and checks(doc)["index"]["status"] == "skip" and "ragx index" in checks(doc)["index"]["hint"]
    assert checks(doc)["expand"]["status"] == "skip"


def test_missing_reranker_fails_its_check(tmp_path, server, capsys):
    write_toml(tmp_path, openai_toml(server.base_url) + '\n[rerank]\nmodel = "/no/such/dir"\n')
    code, doc, _ = doctor(capsys, tmp_path)
    r = checks(doc)["rerank"]
    assert code == 1 and r["status"] == "fail" and "no such directory" in r["detail"] and "rerank.model" in r["hint"]


def test_api_key_env_unset_fails_embeddings_with_the_variable(tmp_path, server, capsys, monkeypatch):
    monkeypatch.delenv("RAGX_DOCTOR_KEY", raising=False)
    write_toml(tmp_path, openai_toml(server.base_url, extra='api_key_env = "RAGX_DOCTOR_KEY"\n'))
    code, doc, _ = doctor(capsys, tmp_path)
    e = checks(doc)["embeddings"]
    assert code == 1 and e["status"] == "fail" and "RAGX_DOCTOR_KEY" in e["detail"]


def test_malformed_config_exits_2_with_one_line(tmp_path, capsys):
    write_toml(tmp_path, "[embeddings\nengine = 1\n")
    code, out, err = call(capsys, "doctor", "--root", str(tmp_path), "--json")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "malformed TOML" in err


@pytest.mark.model
def test_default_embedded_corpus_with_a_reranker_is_healthy(tmp_path, capsys, tiny_cross_encoder):
    ce = tiny_cross_encoder
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# Heat\n\nHeat spreads along the similarity graph from the seeds.\n")
    write_toml(root, f'[rerank]\nmodel = "{ce}"\nmax_length = 128\n')
    assert call(capsys, "index", "--root", str(root))[0] == 0
    code, doc, _ = doctor(capsys, root)
    assert code == 0, doc
    by = checks(doc)
    assert by["embeddings"]["status"] == "ok" and by["embeddings"]["detail"].startswith("embedded:all-MiniLM-L6-v2@")
    assert by["rerank"]["status"] == "ok" and "probe pair scored" in by["rerank"]["detail"]
