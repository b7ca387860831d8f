"""A hub model name the local cache lacks, with the hub out of reach, fails in seconds with one line
(issue 42: rerank.model = "no/such-model" kept a query busy 395 s retrying the hub)."""

from __future__ import annotations

import time

import pytest
from servers import free_port

from ragx.errors import ProviderError


@pytest.fixture
def no_hub(monkeypatch):
    """The hub is a closed port on 127.0.0.1; offline mode is not set (the case that retried)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    try:
        from huggingface_hub import constants

        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{free_port()}")
    except ImportError:
        pass


def test_an_uncached_reranker_fails_fast_and_says_why(no_hub):
    from ragx.models.rerank import CrossEncoderReranker

    t0 = time.perf_counter()
    with pytest.raises(ProviderError) as failed:
        CrossEncoderReranker("no/such-model").load()
    seconds = time.perf_counter() - t0
    message = str(failed.value)
    assert seconds <= 5, seconds
    assert "not in the local model cache" in message and "cannot be reached" in message and "\n" not in message


def test_offline_mode_says_so(monkeypatch):
    from ragx.models.st_engine import unloadable_here

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "HF_HUB_OFFLINE" in (unloadable_here("no/such-model") or "")


def test_an_uncached_sentence_transformers_embedder_fails_fast(no_hub):
    from ragx.models.st_engine import SentenceTransformerEmbedder

    t0 = time.perf_counter()
    with pytest.raises(ProviderError, match="not in the local model cache"):
        SentenceTransformerEmbedder("no/such-embedder").embed_query("x")
    assert time.perf_counter() - t0 <= 5
