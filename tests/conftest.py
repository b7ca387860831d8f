from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def isolated_rc(tmp_path_factory, monkeypatch):
    """No test reads or writes the developer's ~/.ragxrc."""
    rc = tmp_path_factory.mktemp("rc") / "ragxrc"
    monkeypatch.setenv("RAGX_RC", str(rc))
    return rc


@pytest.fixture(autouse=True)
def isolated_expand_cache(tmp_path_factory, monkeypatch):
    """No test reads or writes the developer's expansion cache: each test gets its own, empty file."""
    import ragx.models.expand_cache as expand_cache

    path = tmp_path_factory.mktemp("expand-cache") / "expand.sqlite3"
    monkeypatch.setattr(expand_cache, "default_path", lambda: path)
    return path


@pytest.fixture
def hash_embedder():
    from fakes import HashEmbedder

    return HashEmbedder()


@pytest.fixture
def fake_model(monkeypatch):
    """Every embedder ragx builds in this process is the shared fake (fakes.HashEmbedder)."""
    from fakes import HashEmbedder

    import ragx.models.registry as registry

    embedder = HashEmbedder()
    monkeypatch.setattr(registry, "make_embedder", lambda *a, **k: embedder)
    return embedder


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory):
    """A random 2-layer BERT cross-encoder (hidden 32, 1 label) with the bundled model's vocabulary,
    saved in a folder (tests/cross_encoders.py); shared by every test that reranks."""
    from cross_encoders import build_tiny_cross_encoder

    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture
def indexed_topics(tmp_path, capsys, fake_model):
    """A make_corpus folder (eight notes per topic) indexed through the CLI with the hash fake."""
    from cli_runner import call
    from fakes import make_corpus

    make_corpus(tmp_path, n_per_topic=8)
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    return tmp_path
