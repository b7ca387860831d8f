"""Embedded engine: tokenizer counter, ONNX export cache, parity with sentence-transformers.

Tests marked ``model`` run the real model (one ONNX export per session, ~10 s); the rest only
need the tokenizer file or fake model directories and take milliseconds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ragx.models import onnx_export, onnx_graph
from ragx.models.base import Embedder, TokenCounter, WordPieceCounter
from ragx.models.embedded import DEFAULT_MODEL, EmbeddedEmbedder, resolve_model
from ragx.models.registry import make_embedder

REPO_ROOT = Path(__file__).resolve().parents[1]


def _model_dir() -> Path:
    return resolve_model(DEFAULT_MODEL)[1]


_LONG_SENTENCES = (
    "Gradient descent updates each parameter against the slope of the loss. "
    "The hippocampus consolidates short-term memories during slow-wave sleep. "
    "In 1887 the Michelson–Morley experiment found no drift of the luminiferous aether. "
    "Retrieval-augmented generation grounds a language model in documents it fetched itself. "
    "Café owners in Zürich reported a 12.5% rise in turnover (Q3, year-on-year). "
)


def _long_text(n_tokens: int, counter: WordPieceCounter) -> str:
    text = _LONG_SENTENCES * (n_tokens // 40 + 2)
    offsets = counter.token_offsets(text)
    return text[: offsets[n_tokens - 1, 1]]


def _parity_texts(counter: WordPieceCounter) -> list[str]:
    texts = [
        "",
        "   ",
        "a",
        "hello world",
        "What is the capital of France?",
        "how do I reset a git branch to origin",
        "The quick brown fox jumps over the lazy dog.",
        "déjà vu: naïve café façade, crème brûlée — Straße, İstanbul, ǅ",
        "Größenwahn und Übermut führen selten zum Ziel.",
        "Быстрая коричневая лиса перепрыгивает через ленивую собаку.",
        "日本語のテキストと中文文本混在的句子。",
        "한국어 문장도 포함됩니다.",
        "العربية لغة جميلة",
        "emoji only 🎉🎉🚀 and a family 👩‍👩‍👧‍👦 and flags 🇫🇷",
        "e\u0301tude with a combining accent and a ligature ﬁne",
        "tabs\tand\nnewlines\r\nand\u00a0nbsp and zero\u200bwidth",
        "def embed(texts: list[str]) -> np.ndarray:\n    return model(texts)  # TODO",
        "SELECT id, name FROM users WHERE created_at > '2024-01-01' ORDER BY id;",
        "https://example.com/path?query=1&x=y#frag user@example.org",
        "3.14159 2.71828 1e-9 0xDEADBEEF 1,000,000",
        "# Heading\n\n- bullet *one*\n- bullet **two**\n\n> quote `code`",
        "!!!???...,,,;;;",
        "UPPERCASE TEXT SHOULD BE LOWERCASED BY THE TOKENIZER",
        "antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
        _long_text(60, counter),
        _long_text(150, counter),
        _long_text(240, counter),
        _long_text(254, counter),  # exactly the limit
        _long_text(255, counter),  # one over: truncated by both implementations
        _long_text(600, counter),  # far over
        "word " * 300,  # repetitive and over the limit
    ]
    return texts


# ---------------------------------------------------------------------------------------------
# TokenCounter (fast: tokenizer only)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def counter() -> WordPieceCounter:
    return WordPieceCounter(_model_dir() / "tokenizer.json")


def test_counter_protocol_and_limits(counter: WordPieceCounter) -> None:
    assert isinstance(counter, TokenCounter)
    assert counter.max_content_tokens == 254
    assert counter.n_special_tokens == 2


def test_counter_does_not_truncate_or_pad(counter: WordPieceCounter) -> None:
    # The shipped tokenizer.json truncates at 128 and pads to 128; the counter must do neither.
    long = "alpha beta gamma " * 200
    assert counter.count([long, "", "hello"]).tolist() == [600, 0, 1]
    assert counter.count([]).dtype == np.int64 and counter.count([]).shape == (0,)
    assert counter.token_offsets(long).shape == (600, 2)
    empty = counter.token_offsets("")
    assert empty.shape == (0, 2) and empty.dtype == np.int64


def test_offsets_are_python_char_offsets(counter: WordPieceCounter) -> None:
    text = "héllo wörld 🎉🎉 naïve café 日本 e\u0301tude İstanbul ﬁne"
    off = counter.token_offsets(text)
    assert off.dtype == np.int64
    spans = [text[s:e] for s, e in off]
    assert spans == [
        "héllo", "wörld", "🎉🎉", "naïve", "café", "日", "本",
        "e\u0301t", "ude", "İstanbul", "ﬁ", "ne",
    ]
    # Offsets are monotonic and within the text.
    assert np.all(off[:, 0] < off[:, 1])
    assert np.all(off[1:, 0] >= off[:-1, 1])
    assert off[-1, 1] == len(text)


def test_count_matches_offsets(counter: WordPieceCounter) -> None:
    texts = _parity_texts(counter)
    counts = counter.count(texts)
    assert counts.tolist() == [len(counter.token_offsets(t)) for t in texts]


def test_slice_at_word_boundary_recounts_exactly(counter: WordPieceCounter) -> None:
    text = _long_text(400, counter)
    off = counter.token_offsets(text)
    # Cut before a token that follows whitespace: the prefix re-tokenises to exactly that many.
    cut = next(i for i in range(254, 0, -1) if text[off[i, 0] - 1].isspace())
    assert counter.count([text[: off[cut, 0]]])[0] == cut


def test_embedder_tokenizes_like_counter(counter: WordPieceCounter) -> None:
    emb = EmbeddedEmbedder(_model_dir(), DEFAULT_MODEL)
    texts = _parity_texts(counter)
    ids = emb._tokenize(texts)
    expected = np.minimum(counter.count(texts), counter.max_content_tokens) + 2
    assert [len(a) for a in ids] == expected.tolist()


# ---------------------------------------------------------------------------------------------
# Construction, identity, registry (fast: no session)
# ---------------------------------------------------------------------------------------------


def test_construction_is_cheap_and_lazy(tmp_path: Path) -> None:
    emb = make_embedder("embedded", DEFAULT_MODEL, cache_dir=tmp_path)
    assert isinstance(emb, EmbeddedEmbedder)
    assert emb.dim == 384 and emb.max_tokens == 256
    assert emb._session is None and emb._tokenizer is None
    assert not (tmp_path / "onnx").exists()  # nothing exported by construction
    assert isinstance(emb, Embedder)  # evaluates `name`: hashes the weights, still no export
    assert emb.name.startswith("embedded:all-MiniLM-L6-v2@")
    assert len(emb.name.rsplit("@", 1)[1]) == 8
    assert emb.token_counter().max_content_tokens == 254
    assert not (tmp_path / "onnx").exists()


def test_registry_errors() -> None:
    with pytest.raises(ValueError, match="unknown embedding engine 'nope'.*embedded"):
        make_embedder("nope", DEFAULT_MODEL)
    with pytest.raises(ValueError, match="needs embeddings.model"):
        make_embedder("openai", "")
    with pytest.raises(ValueError, match="unknown option"):
        make_embedder("embedded", DEFAULT_MODEL, device="cuda")
    with pytest.raises(ValueError, match="unknown embedded model"):
        make_embedder("embedded", "BAAI/bge-small-en-v1.5")
    # Aliases of the bundled model.
    assert resolve_model("sentence-transformers/all-MiniLM-L6-v2") == resolve_model(DEFAULT_MODEL)


def test_default_cache_dir_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert onnx_export.default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("RAGX_CACHE_DIR")
    assert onnx_export.default_cache_dir() == tmp_path / "xdg" / "ragx"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert onnx_export.default_cache_dir() == tmp_path / "home" / ".cache" / "ragx"


# ---------------------------------------------------------------------------------------------
# Cache mechanics with a fake model and a fake exporter (fast: no torch)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def fake_model(tmp_path: Path) -> Path:
    d = tmp_path / "fake-model"
    d.mkdir()
    (d / "config.json").write_text('{"hidden_size": 8}')
    (d / "model.safetensors").write_bytes(os.urandom(4096))
    return d


@pytest.fixture
def fake_exporter(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []

    def fake_export(model_dir, out_path):  # type: ignore[no-untyped-def]
        calls.append(Path(out_path))
        time.sleep(0.2)  # widen the race window for the concurrency test
        Path(out_path).write_bytes(b"ONNX" + os.urandom(1000))
        return {"fake": True}

    monkeypatch.setattr(onnx_export, "export_onnx", fake_export)
    return calls


def test_fingerprint_memo(monkeypatch: pytest.MonkeyPatch, fake_model: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fp = onnx_export.model_fingerprint(fake_model, cache)
    assert len(fp) == 64 and len(list((cache / "fingerprints").iterdir())) == 1

    def boom(_dir):  # type: ignore[no-untyped-def]
        raise AssertionError("re-hashed despite a valid memo")

    with monkeypatch.context() as m:
        m.setattr(onnx_export, "_hash_weights", boom)
        assert onnx_export.model_fingerprint(fake_model, cache) == fp
    # Changed weights (new size and mtime) invalidate the memo.
    (fake_model / "model.safetensors").write_bytes(os.urandom(4097))
    fp2 = onnx_export.model_fingerprint(fake_model, cache)
    assert fp2 != fp
    # An unwritable / missing cache still works (no memo, just recomputes).
    assert onnx_export.model_fingerprint(fake_model, tmp_path / "x" / "y") == fp2


def test_ensure_onnx_reuses_and_detects_corruption(
    fake_model: Path, fake_exporter: list[Path], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    p = onnx_export.ensure_onnx(fake_model, "fake", cache_dir=cache)
    fp = onnx_export.model_fingerprint(fake_model, cache)
    assert p == cache / "onnx" / f"fake-{fp[:16]}.onnx"
    assert len(fake_exporter) == 1 and onnx_export.cached_onnx_is_valid(p, fp)
    assert onnx_export.ensure_onnx(fake_model, "fake", cache_dir=cache) == p
    assert len(fake_exporter) == 1  # reused

    data = p.read_bytes()
    p.write_bytes(data[:-10])  # truncated
    assert not onnx_export.cached_onnx_is_valid(p, fp)
    onnx_export.ensure_onnx(fake_model, "fake", cache_dir=cache)
    assert len(fake_exporter) == 2 and onnx_export.cached_onnx_is_valid(p, fp)

    data = bytearray(p.read_bytes())
    data[500] ^= 0xFF  # same size, one flipped byte
    p.write_bytes(bytes(data))
    assert not onnx_export.cached_onnx_is_valid(p, fp)
    onnx_export.ensure_onnx(fake_model, "fake", cache_dir=cache)
    assert len(fake_exporter) == 3

    Path(str(p) + ".json").unlink()  # crash between the two renames: no sidecar
    assert not onnx_export.cached_onnx_is_valid(p, fp)
    onnx_export.ensure_onnx(fake_model, "fake", cache_dir=cache)
    assert len(fake_exporter) == 4

    # A different export format invalidates.
    meta = json.loads(Path(str(p) + ".json").read_text())
    meta["format"] = onnx_export.EXPORT_FORMAT + 1
    Path(str(p) + ".json").write_text(json.dumps(meta))
    assert not onnx_export.cached_onnx_is_valid(p, fp)
    # No temporaries left behind.
    assert not [f for f in p.parent.iterdir() if f.name.endswith(".tmp")]


def test_crash_mid_export_leaves_no_entry(
    monkeypatch: pytest.MonkeyPatch, fake_model: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"

    def crashing_export(model_dir, out_path):  # type: ignore[no-untyped-def]
        Path(out_path).write_bytes(b"half an onnx fi")
        raise KeyboardInterrupt

    monkeypatch.setattr(onnx_export, "export_onnx", crashing_export)
    with pytest.raises(KeyboardInterrupt):
        onnx_export.ensure_onnx(fake_model, "fake", cache_dir=cache)
    left = sorted(f.name for f in (cache / "onnx").iterdir())
    assert all(name.endswith(".lock") for name in left), left


def test_concurrent_exporters_export_once(
    fake_model: Path, fake_exporter: list[Path], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    onnx_export.model_fingerprint(fake_model, cache)  # memo first, so threads race on the export
    results: list[Path] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(onnx_export.ensure_onnx(fake_model, "fake", cache_dir=cache))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(set(results)) == 1 and len(results) == 4
    assert len(fake_exporter) == 1


# ---------------------------------------------------------------------------------------------
# The real model (marked `model`)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def export_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory holding one real export, shared by the whole session."""
    cache = tmp_path_factory.mktemp("ragx-cache")
    EmbeddedEmbedder(_model_dir(), DEFAULT_MODEL, cache_dir=cache).load()
    return cache


@pytest.fixture(scope="session")
def embedder(export_cache: Path) -> EmbeddedEmbedder:
    return EmbeddedEmbedder(_model_dir(), DEFAULT_MODEL, cache_dir=export_cache)


def _onnx_file(cache: Path) -> Path:
    (path,) = (cache / "onnx").glob("*.onnx")
    return path


@pytest.mark.model
def test_parity_with_sentence_transformers(embedder: EmbeddedEmbedder, counter: WordPieceCounter) -> None:
    from sentence_transformers import SentenceTransformer

    texts = _parity_texts(counter)
    st = SentenceTransformer(str(_model_dir()), device="cpu")
    assert st.max_seq_length == embedder.max_tokens == 256
    ref = st.encode(texts, batch_size=8, convert_to_numpy=True, normalize_embeddings=False)
    got = embedder.embed_documents(texts, batch_size=8)
    assert got.shape == (len(texts), 384) and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cos = np.sum(got * ref, axis=1) / np.linalg.norm(ref, axis=1)
    print(f"\nparity: min cosine {cos.min():.8f} over {len(texts)} texts")
    assert cos.min() >= 0.999, {texts[i][:40]: float(cos[i]) for i in np.argsort(cos)[:5]}
    assert np.abs(got - ref).max() < 1e-4


@pytest.mark.model
def test_query_equals_document_and_batching_is_invisible(
    embedder: EmbeddedEmbedder, counter: WordPieceCounter
) -> None:
    texts = _parity_texts(counter)
    base = embedder.embed_documents(texts, batch_size=64)
    for bs in (1, 3, 32):
        np.testing.assert_allclose(embedder.embed_documents(texts, batch_size=bs), base, atol=2e-5)
    q = embedder.embed_query(texts[4])
    assert q.shape == (384,) and q.dtype == np.float32
    np.testing.assert_allclose(q, base[4], atol=2e-5)
    # Order follows the input, whatever the length sort did.
    rev = embedder.embed_documents(texts[::-1], batch_size=5)
    np.testing.assert_allclose(rev[::-1], base, atol=2e-5)


@pytest.mark.model
def test_progress_and_edge_cases(embedder: EmbeddedEmbedder, counter: WordPieceCounter) -> None:
    done: list[int] = []
    texts = [f"text number {i}" for i in range(10)]
    embedder.embed_documents(texts, batch_size=4, progress=done.append)
    assert done == [4, 4, 2]
    empty = embedder.embed_documents([], progress=done.append)
    assert empty.shape == (0, 384) and empty.dtype == np.float32 and done == [4, 4, 2]
    with pytest.raises(TypeError):
        embedder.embed_documents("not a list")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        embedder.embed_documents(["x"], batch_size=0)
    # Beyond the limit the tokenizer truncates at 256 (the chunker keeps texts under it).
    long = _long_text(600, counter)
    at_limit = _long_text(254, counter)
    np.testing.assert_allclose(embedder.embed_query(long), embedder.embed_query(at_limit), atol=1e-6)


@pytest.mark.model
def test_second_process_reuses_cache_without_torch(export_cache: Path) -> None:
    onnx_file = _onnx_file(export_cache)
    before = onnx_file.stat()
    script = textwrap.dedent(
        """
        import json, sys, time
        t0 = time.perf_counter()
        from ragx.models.registry import make_embedder
        emb = make_embedder("embedded", "all-MiniLM-L6-v2")
        v = emb.embed_query("how are chunks embedded?")
        elapsed = time.perf_counter() - t0
        heavy = [m for m in ("torch", "transformers", "sentence_transformers", "onnx")
                 if m in sys.modules]
        print(json.dumps({"heavy": heavy, "norm": float((v * v).sum()), "dim": int(v.shape[0]),
                          "name": emb.name, "seconds": elapsed}))
        """
    )
    env = dict(os.environ, RAGX_CACHE_DIR=str(export_cache), PYTHONPATH=str(REPO_ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"\ncold query in a fresh process: {out['seconds']:.3f} s")
    assert out["heavy"] == []
    assert out["dim"] == 384 and abs(out["norm"] - 1.0) < 1e-5
    assert out["name"].startswith("embedded:all-MiniLM-L6-v2@")
    after = onnx_file.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # reused


@pytest.mark.model
def test_ragx_cache_dir_is_honoured(
    monkeypatch: pytest.MonkeyPatch, export_cache: Path, embedder: EmbeddedEmbedder
) -> None:
    def boom(*_a, **_k):  # type: ignore[no-untyped-def]
        raise AssertionError("exported although the cache was valid")

    monkeypatch.setattr(onnx_export, "export_onnx", boom)
    monkeypatch.setattr(onnx_graph, "build_bert_onnx", boom)  # the bundled BERT model is built, not exported
    monkeypatch.setenv("RAGX_CACHE_DIR", str(export_cache))
    emb = EmbeddedEmbedder(_model_dir(), DEFAULT_MODEL)
    assert emb.cache_dir == export_cache
    # embed_documents opens the session (a fresh embedder's embed_query would run in numpy).
    np.testing.assert_allclose(emb.embed_documents(["hello"])[0], embedder.embed_query("hello"), atol=1e-6)


@pytest.mark.model
def test_corrupted_cache_is_reexported(
    monkeypatch: pytest.MonkeyPatch, export_cache: Path, embedder: EmbeddedEmbedder, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(export_cache, cache)
    onnx_file = _onnx_file(cache)
    with open(onnx_file, "r+b") as fh:  # truncate: what a crash or a full disk would leave
        fh.truncate(onnx_file.stat().st_size // 2)

    calls: list[Path] = []
    real_build = onnx_graph.build_bert_onnx  # the bundled BERT model is built from its weights

    def counting_build(model_dir, out_path):  # type: ignore[no-untyped-def]
        calls.append(Path(out_path))
        return real_build(model_dir, out_path)

    monkeypatch.setattr(onnx_graph, "build_bert_onnx", counting_build)
    emb = EmbeddedEmbedder(_model_dir(), DEFAULT_MODEL, cache_dir=cache)
    # embed_documents: a fresh embedder's embed_query runs in numpy and never opens the ONNX file.
    np.testing.assert_allclose(emb.embed_documents(["hello"])[0], embedder.embed_query("hello"), atol=1e-5)
    assert len(calls) == 1
    fp = emb.fingerprint
    assert onnx_export.cached_onnx_is_valid(onnx_file, fp)

    # In-place damage that keeps the size is caught by the digest (no re-export needed to see it).
    with open(onnx_file, "r+b") as fh:
        fh.seek(onnx_file.stat().st_size // 2)
        fh.write(b"\0" * 64)
    assert not onnx_export.cached_onnx_is_valid(onnx_file, fp)
