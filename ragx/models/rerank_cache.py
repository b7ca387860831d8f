"""Cross-encoder scores computed once per (reranker, query, chunk text), kept on disk.

`CachedReranker` wraps a :class:`~ragx.models.rerank.CrossEncoderReranker` with the same
``score(query, texts)``: it looks every pair of the call up in one read of the score file
(:mod:`ragx.models.rerank_store`), runs the cross-encoder once on the misses only, and stores them.
`Searcher.rerank` (queries, the MCP server, `ragx eval`) and the lab's re-scoring all go through it,
so a repeated evaluation or a sweep over ``rerank_weight``/``shortlist`` never scores a pair twice.

Keys:
- the reranker's identity: its name, a sha256 over the weights, config and tokenizer files of the
  model directory (a hub name: its resolved snapshot folder in the local Hugging Face cache),
  memoised by (size, mtime) like the embedder's fingerprint, and the effective ``max_length``
  (truncation changes scores). Retrained weights in the same folder are therefore a new reranker.
  A model whose files cannot be found locally is scored without the cache (no identity to trust);
- the query text itself;
- xxh3-64 of the chunk text (the text the cross-encoder read).

The first score stored for a pair is the one every later caller gets (a pair scored in a batch of
other misses can differ from the same pair scored in another batch in the last float32 bit; the
cache makes the first value canonical, which is what keeps offline re-scoring digit-exact).
Counters: ``computed`` (pairs the cross-encoder scored) and ``hits`` (pairs answered without running
it: read from the file, or a repeat of a text in the same call); per call they add up to the texts given.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..log import warn_once
from ..lookup import find_sorted
from ..text_keys import text_keys
from .rerank import max_pair_length

__all__ = ["CachedReranker", "default_score_path", "score_keys", "reranker_identity"]

# Files of a model folder that decide its scores: weights, config, tokenizer (whichever exist).
IDENTITY_FILES = (
    "config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json", "tokenizer_config.json",
    "vocab.txt", "vocab.json", "merges.txt", "special_tokens_map.json", "sentencepiece.bpe.model", "spiece.model",
    "config_sentence_transformers.json", "modules.json",  # sentence-transformers' own settings (activation)
)
WEIGHTS = ("model.safetensors", "pytorch_model.bin")


def default_score_path() -> Path:
    """``<ragx cache>/rerank/scores.sqlite`` (the cache folder of ONNX exports and fingerprints)."""
    from .onnx_export import default_cache_dir

    return default_cache_dir() / "rerank" / "scores.sqlite"


def score_keys(texts: Sequence[str]) -> np.ndarray:
    """Each text's key (ragx.text_keys) as int64, SQLite's integer: the same 64 bits."""
    return text_keys(texts).view(np.int64)


def model_folder(model: str) -> Path | None:
    """The local folder a model name loads from: the directory itself, or the hub snapshot already in
    the local Hugging Face cache; None when there is none."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve()
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True)).resolve()
    except Exception:  # noqa: BLE001 - not a hub name, not cached, or no huggingface_hub: no folder
        return None


def reranker_identity(model: str, max_length: int) -> str | None:
    """``<model>@<16 hex of the files' sha256>:max_length=<n>``, or None without a local folder."""
    from .onnx_export import model_fingerprint

    folder = model_folder(model)
    if folder is None:
        return None
    files = tuple(name for name in IDENTITY_FILES if (folder / name).is_file())
    if not any(name in files for name in WEIGHTS):
        return None
    return f"{model}@{model_fingerprint(folder, files=files)[:16]}:max_length={max_length}"


class CachedReranker:
    """A reranker whose scores are read from (and written to) a score file; same ``score`` API."""

    def __init__(self, reranker: Any, path: Path | None = None) -> None:
        self.inner = reranker
        self.name = reranker.name
        self.path = path or default_score_path()
        self.hits = 0
        self.computed = 0
        self._opened = False
        self._store: Any = None
        self._reranker_id: int | None = None
        self._lock = threading.Lock()

    def load(self) -> Any:
        return self.inner.load()

    def __repr__(self) -> str:
        return f"CachedReranker({self.inner!r}, {str(self.path)!r})"

    def _open(self) -> tuple[Any, int | None]:
        """The score file and this reranker's id in it, once (after the model loaded, so that a hub
        name has its snapshot folder); (None, None) when the cache cannot be used."""
        with self._lock:
            if not self._opened:
                ce = self.load()
                identity = reranker_identity(self.inner.model, max_pair_length(ce))
                if identity is not None:
                    self._store, self._reranker_id = self._connect(identity)
                self._opened = True
        return self._store, self._reranker_id

    def _connect(self, identity: str) -> tuple[Any, int | None]:
        from .rerank_store import ScoreStore

        try:
            store = ScoreStore(self.path)
            return store, store.reranker_id(identity)
        except (OSError, sqlite3.Error) as exc:  # an unwritable or damaged cache: score without it
            self._warn(exc)
            return None, None

    def _warn(self, exc: BaseException) -> None:
        warn_once(f"rerank-cache:{self.path}", f"rerank score cache {self.path} unusable ({exc}); scoring without it")

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Relevance of each text to the query, in input order (``(len(texts),)`` float64)."""
        return self.score_keyed(query, score_keys(texts), lambda positions: [texts[i] for i in positions.tolist()])

    def score_keyed(self, query: str, keys: np.ndarray, texts_at: Callable[[np.ndarray], Sequence[str]]) -> np.ndarray:
        """Scores of the texts whose keys (``score_keys``) are given; ``texts_at(positions)`` returns
        the texts at those positions and is called only for pairs the cache lacks."""
        if len(keys) == 0:
            return np.empty(0, dtype=np.float64)
        store, rid = self._open()
        if store is not None and rid is not None:
            try:
                return self._through(store, rid, query, keys, texts_at)
            except sqlite3.Error as exc:  # the file broke mid-run (disk full, damaged): go on without it
                self._give_up(exc)
        scored = self.inner.score(query, texts_at(np.arange(len(keys))))
        self.computed += len(keys)
        return scored

    def _through(self, store: Any, rid: int, query: str, keys: np.ndarray, texts_at: Callable[[np.ndarray], Sequence[str]]) -> np.ndarray:
        """One read for every pair of the call; the model runs once, on the misses; one write."""
        out, found = _matched(keys, *store.lookup(rid, query))
        self.hits += int(found.sum())
        if not found.all():
            missing = np.flatnonzero(~found)
            miss_keys, first = np.unique(keys[missing], return_index=True)  # a text twice is scored once
            scores = self.inner.score(query, texts_at(missing[first]))
            self.computed += len(miss_keys)
            self.hits += len(missing) - len(miss_keys)  # repeats of a text just scored: no model run
            store.insert(rid, query, miss_keys, scores)
            out, _ = _matched(keys, *store.lookup(rid, query))  # the stored (first written) values
        return out

    def _give_up(self, exc: BaseException) -> None:
        self._warn(exc)
        with self._lock:
            self._store, self._reranker_id = None, None


def _matched(keys: np.ndarray, have: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(score per key, NaN where absent; whether each key was found), vectorised."""
    out = np.full(len(keys), np.nan)
    if len(have) == 0:
        return out, np.zeros(len(keys), dtype=bool)
    order = np.argsort(have, kind="stable")
    sorted_keys = have[order]
    pos, found = find_sorted(sorted_keys, keys)
    out[found] = scores[order[pos[found]]]
    return out, found
