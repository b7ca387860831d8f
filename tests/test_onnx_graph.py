"""The torch-free ONNX graph (ragx.models.onnx_graph) against the torch export and sentence-transformers.

The built graph is what every install serves (the light one has no torch to compare with), so these
dev tests hold it to both references on varied texts, padded batches included.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_embedded import _parity_texts

from ragx.models import onnx_export, onnx_graph
from ragx.models.base import WordPieceCounter
from ragx.models.embedded import DEFAULT_MODEL, EmbeddedEmbedder, resolve_model

REPO_ROOT = Path(__file__).resolve().parents[1]


def _model_dir() -> Path:
    return resolve_model(DEFAULT_MODEL)[1]


def test_supports_only_plain_bert(tmp_path: Path) -> None:
    assert onnx_graph.supports(_model_dir())
    for cfg in ({"model_type": "roberta"}, {"model_type": "bert", "hidden_act": "relu"},
                {"model_type": "bert", "position_embedding_type": "relative_key"}, {}):
        (tmp_path / "config.json").write_text(json.dumps(cfg))
        assert not onnx_graph.supports(tmp_path)
    assert not onnx_graph.supports(tmp_path / "missing")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("built") / "model.onnx"
    info = onnx_graph.build_bert_onnx(_model_dir(), out)
    assert info["builder"] == "onnx-helper"
    return out


@pytest.fixture(scope="module")
def counter() -> WordPieceCounter:
    return WordPieceCounter(_model_dir() / "tokenizer.json", 256)


def _session(path: Path):
    import onnxruntime as ort

    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _padded_batch(n: int = 4, width: int = 41, seed: int = 7):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 30522, size=(n, width), dtype=np.int64)
    mask = np.ones_like(ids)
    for row in range(1, n):
        mask[row, width - 7 * row:] = 0
    ids = ids * mask
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}, mask.astype(bool)


def test_built_graph_is_valid_onnx(built: Path) -> None:
    import onnx

    onnx.checker.check_model(str(built))
    sess = _session(built)
    assert [i.name for i in sess.get_inputs()] == list(onnx_graph.INPUT_NAMES)
    assert [o.name for o in sess.get_outputs()] == [onnx_graph.OUTPUT_NAME]


@pytest.mark.model
def test_hidden_states_match_the_torch_export(built: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    exported = tmp_path / "torch.onnx"
    onnx_export.export_onnx(_model_dir(), exported)
    feeds, valid = _padded_batch()
    ours = _session(built).run(None, feeds)[0]
    ref = _session(exported).run(None, feeds)[0]
    assert ours.shape == ref.shape == (*feeds["input_ids"].shape, 384)
    diff = float(np.abs(ours - ref)[valid].max())
    print(f"\nmax |built - torch export| over real tokens: {diff:.2e}")
    assert diff < 1e-4


@pytest.mark.model
def test_embeddings_match_sentence_transformers(built: Path, counter: WordPieceCounter, tmp_path: Path) -> None:
    st_mod = pytest.importorskip("sentence_transformers")
    texts = _parity_texts(counter)
    # The engine on exactly this file: install it as the cache entry of the weights.
    emb = EmbeddedEmbedder(_model_dir(), DEFAULT_MODEL, cache_dir=tmp_path)
    target = onnx_export.onnx_cache_path(DEFAULT_MODEL, emb.fingerprint, tmp_path)
    onnx_export.ensure_onnx(_model_dir(), DEFAULT_MODEL, cache_dir=tmp_path, fingerprint=emb.fingerprint)
    assert json.loads(target.with_name(target.name + ".json").read_text())["builder"] == "onnx-helper"
    got = emb.embed_documents(texts, batch_size=8)
    ref = st_mod.SentenceTransformer(str(_model_dir()), device="cpu").encode(
        texts, batch_size=8, convert_to_numpy=True, normalize_embeddings=True
    )
    cos = np.sum(got * ref, axis=1)
    print(f"\nbuilt graph vs sentence-transformers: min cosine {cos.min():.8f} over {len(texts)} texts")
    assert cos.min() >= 0.9999


def test_first_use_says_what_it_does(tmp_path: Path) -> None:
    """The one-time conversion prints what it is doing and how long it takes, on stderr only."""
    script = (
        "from ragx.models.registry import make_embedder\n"
        "e = make_embedder('embedded', 'all-MiniLM-L6-v2')\n"
        "print(e.embed_documents(['hello']).shape)\n"
    )
    env = {"RAGX_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"}
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "(1, 384)"
    assert "building its ONNX graph from the weights" in first.stderr and "one time" in first.stderr
    assert "model ready in" in first.stderr
    again = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "ONNX" not in again.stderr


@pytest.mark.model
def test_numpy_query_path_equals_onnxruntime(counter: WordPieceCounter, tmp_path: Path) -> None:
    """A one-shot query (a process's first, no session yet) is embedded in numpy; it must equal the
    onnxruntime vectors. One fresh embedder per text: each text is some process's first query."""
    texts = _parity_texts(counter)
    queries = np.stack([EmbeddedEmbedder(_model_dir(), DEFAULT_MODEL, cache_dir=tmp_path).embed_query(t) for t in texts])
    assert not (tmp_path / "onnx").exists()  # no session, no conversion
    docs = EmbeddedEmbedder(_model_dir(), DEFAULT_MODEL, cache_dir=tmp_path).embed_documents(texts, batch_size=8)
    assert queries.dtype == np.float32
    np.testing.assert_allclose(queries, docs, atol=1e-5)


@pytest.mark.model
def test_a_process_that_asks_again_is_served_by_the_session(tmp_path: Path) -> None:
    """Numpy is for one-shots only: it is ~30x slower per query than the session, which a long-lived
    process (MCP, eval) starts at its second query; from then on query and document vectors are equal."""
    emb = EmbeddedEmbedder(_model_dir(), DEFAULT_MODEL, cache_dir=tmp_path)
    emb.embed_query("first question")
    assert not (tmp_path / "onnx").exists()
    second = emb.embed_query("second question")
    assert (tmp_path / "onnx").exists()
    np.testing.assert_array_equal(second, emb.embed_documents(["second question"], batch_size=1)[0])
