"""Cross-encoder reranking: score (query, chunk) pairs with a sentence-transformers ``CrossEncoder``.

An optional extra (``pip install "ragx[rerank]"``): sentence-transformers, hence torch, is imported
only when a reranker is configured and first used. ``rerank.model`` is a Hugging Face hub name or a
local directory.

A model that cannot be loaded (the extra missing, the hub unreachable, a bad directory) raises a
:class:`~ragx.errors.ProviderError` with one line; the failure is remembered, so a long-lived process
(the MCP server, `ragx eval`) does not retry a slow failing load on every query. The search pipeline
turns that error into "rerank skipped" for the query, with one warning per process.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..config import check_bound
from ..errors import ProviderError
from .base import required

__all__ = ["CrossEncoderReranker"]


def _length_attr(ce: Any) -> str:
    """The CrossEncoder attribute holding its pair length: sentence-transformers 6 renamed max_length
    to max_seq_length (the old name still works but warns); 3.x has max_length only."""
    return "max_seq_length" if hasattr(type(ce), "max_seq_length") else "max_length"


def max_pair_length(ce: Any) -> int:
    """How many tokens of a (query, text) pair the loaded cross-encoder reads."""
    return int(getattr(ce, _length_attr(ce)))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return " ".join(text.splitlines()[0].split()) if text else type(exc).__name__


class CrossEncoderReranker:
    """``score(query, texts)`` -> float64 relevance per text (higher is more relevant)."""

    def __init__(self, model: str, *, batch_size: int = 16, max_length: int = 512, device: str = "") -> None:
        model = required(model, "rerank.model is empty (no reranker configured)")
        check_bound("rerank.batch_size", batch_size)
        check_bound("rerank.max_length", max_length)
        self.model = model
        self.name = model
        self.batch_size = int(batch_size)
        self.max_length = int(max_length)
        self.device = device or None
        self._ce: Any = None
        self._error: ProviderError | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self.model!r})"

    def load(self) -> Any:
        """The loaded CrossEncoder; raises (and remembers) a one-line ProviderError when it cannot load."""
        if self._ce is not None:
            return self._ce
        with self._lock:
            if self._ce is None:
                if self._error is None:
                    try:
                        self._ce = self._load()
                    except ProviderError as exc:
                        self._error = exc
                if self._error is not None:
                    raise self._error
        return self._ce

    def _load(self) -> Any:
        if self.model.startswith(("/", "./", "../", "~")) and not Path(self.model).expanduser().is_dir():
            raise ProviderError(f"reranker {self.model} unavailable: no such directory (fix rerank.model, or set it to \"\")")
        import importlib.util

        from .st_engine import unloadable_here

        installed = importlib.util.find_spec("sentence_transformers") is not None  # found, not imported (torch)
        unloadable = unloadable_here(self.model) if installed else None
        if unloadable:
            raise ProviderError(f"reranker {self.model} unavailable: {unloadable} (fix rerank.model, or set it to \"\")")
        try:
            from sentence_transformers import CrossEncoder

            from .st_engine import load_local_first, quiet_transformers
        except ImportError as exc:
            raise ProviderError(
                f"reranker {self.model} unavailable: {exc.name or 'sentence-transformers'} is not installed "
                '(pip install "ragx[rerank]")'
            ) from None
        try:
            with quiet_transformers():
                ce = load_local_first(CrossEncoder, self.model, max_length=self.max_length, device=self.device)
        except Exception as exc:  # noqa: BLE001 - hub errors, bad directories, wrong architectures
            raise ProviderError(f"reranker {self.model} could not be loaded: {_first_line(exc)}") from None
        # rerank.max_length may exceed what the model can position (512 vs a 128-position model):
        # cap it at the model's own limit so long pairs are truncated rather than failing.
        limit = getattr(getattr(getattr(ce, "model", None), "config", None), "max_position_embeddings", None)
        length_attr = _length_attr(ce)
        current = getattr(ce, length_attr, None)
        if isinstance(limit, int) and isinstance(current, int) and 0 < limit < current:
            setattr(ce, length_attr, limit)
        if getattr(ce, "num_labels", 1) != 1:
            raise ProviderError(
                f"reranker {self.model} has {ce.num_labels} output labels; a relevance cross-encoder has 1"
            )
        return ce

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Relevance of each text to the query, in input order (``(len(texts),)`` float64)."""
        ce = self.load()
        if len(texts) == 0:
            return np.empty(0, dtype=np.float64)
        try:
            scores = ce.predict(
                [(query, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
            )
        except Exception as exc:  # noqa: BLE001 - a scoring failure skips rerank like a load failure
            raise ProviderError(f"reranker {self.model} failed while scoring: {_first_line(exc)}") from None
        out = np.asarray(scores, dtype=np.float64).reshape(len(texts))
        if not np.all(np.isfinite(out)):
            raise ProviderError(f"reranker {self.model} produced non-finite scores")
        return out
