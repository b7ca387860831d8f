"""Persistent cache of LLM query expansions and of their embeddings (``<cache dir>/expand/``).

An expansion costs a chat call and one embedding per reformulation and per HyDE passage; interactive
queries, `ragx eval` and the lab ask for the same ones again and again. Keys:

* an answer: a hash of the expander's identity (generator name and base URL, a hash of the prompt
  template, the settings that change the answer; ``ChatExpander.cache_identity``) and the query text.
  The chat answer's raw text is stored and parsed again on every read, so a parser change applies to
  old entries too (an entry the parser now rejects is a miss, and its new answer replaces it).
* a vector: the embedder's identity (``Embedder.name``, the one the index manifest records) and a hash
  of (mode, text), mode being "document" or "query" -- with the query prefix, which the name leaves out
  because the index does not depend on it.

The cache is an optimisation: a file that cannot be opened, read or written (read-only disk, damage)
means running without it, with one warning.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..log import warn_once
from .expand_store import ExpandStore

__all__ = ["DOCUMENT", "QUERY", "ExpansionCache", "default_path", "digest", "embed_texts"]

QUERY, DOCUMENT = "query", "document"


def default_path() -> Path:
    """``<RAGX cache dir>/expand/expand.sqlite3`` (the directory is read from the environment per call)."""
    from .onnx_export import default_cache_dir

    return default_cache_dir() / "expand" / "expand.sqlite3"


def digest(obj: Any) -> str:
    """sha256 of a JSON-able value, independent of dict order."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _vector_mode(embedder: Any, mode: str) -> str:
    prefix = getattr(embedder, "query_prefix", "") if mode == QUERY else ""
    return f"{mode}|query_prefix={prefix!r}" if prefix else mode


class ExpansionCache:
    """Answers by (expander identity, query) and vectors by (embedder identity, mode, text)."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path  # None: default_path() when first used
        self._store: ExpandStore | None = None
        self._lock = threading.Lock()
        self.broken = False  # set after the first failure: the rest of the process runs uncached

    @property
    def path(self) -> Path:
        return self._path or default_path()

    def _guarded(self, action: Any, default: Any) -> Any:
        if self.broken:
            return default
        try:
            with self._lock:
                if self._store is None:
                    self._store = ExpandStore(self.path)
            return action(self._store)
        except (sqlite3.Error, OSError) as exc:
            self.broken = True
            warn_once(f"expand-cache:{exc}", f"expansion cache {self.path} unusable, running without it: {exc}")
            return default

    # -- answers ----------------------------------------------------------------------------------

    def answers(self, identity: dict[str, Any], queries: Sequence[str]) -> dict[str, tuple[str, bool]]:
        """query -> (stored answer text, structured output), for the queries stored: one lookup."""
        keys = {digest([identity, q]): q for q in queries}
        found = self._guarded(lambda s: s.answers(list(keys)), {})
        return {keys[k]: v for k, v in found.items()}

    def put_answer(self, identity: dict[str, Any], query: str, content: str, structured: bool) -> None:
        """Store one successful answer (callers never store a failed call or a malformed answer)."""
        settings = json.dumps(identity.get("settings", {}), sort_keys=True)
        row = (digest([identity, query]), str(identity.get("generator", "")), str(identity.get("base_url", "")),
               str(identity.get("prompt", "")), settings, query, content, int(structured), time.time())
        self._guarded(lambda s: s.put_answers([row]), None)

    # -- vectors ----------------------------------------------------------------------------------

    def vectors(self, embedder: Any, texts: Sequence[str], modes: Sequence[str], dim: int) -> dict[int, np.ndarray]:
        """Position in `texts` -> cached float32 vector (of length `dim`), for those cached: one lookup."""
        keys = [digest([_vector_mode(embedder, m), t]) for t, m in zip(texts, modes)]
        found: dict[str, bytes] = self._guarded(lambda s: s.vectors(embedder.name, keys), {})
        out = {}
        for i, key in enumerate(keys):
            blob = found.get(key)
            if blob is not None and len(blob) == 4 * dim:  # another length: not this model's, re-embed
                out[i] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_vectors(self, embedder: Any, texts: Sequence[str], modes: Sequence[str], vecs: np.ndarray) -> None:
        rows = [(digest([_vector_mode(embedder, m), t]), np.ascontiguousarray(v, dtype=np.float32).tobytes())
                for t, m, v in zip(texts, modes, vecs)]
        self._guarded(lambda s: s.put_vectors(embedder.name, rows), None)

    def counts(self) -> dict[str, int]:
        return self._guarded(lambda s: s.counts(), {"answers": 0, "vectors": 0})

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None


def _embed(embedder: Any, texts: list[str], modes: list[str]) -> np.ndarray:
    """Fresh vectors, in order: queries one by one (the protocol's embed_query), documents in one batch."""
    docs = [t for t, m in zip(texts, modes) if m == DOCUMENT]
    doc_vecs = iter(embedder.embed_documents(docs, batch_size=max(1, len(docs))) if docs else [])
    rows = [next(doc_vecs) if m == DOCUMENT else embedder.embed_query(t) for t, m in zip(texts, modes)]
    return np.stack(rows).astype(np.float32)


def embed_texts(embedder: Any, texts: list[str], modes: list[str], cache: ExpansionCache | None) -> tuple[np.ndarray | None, int]:
    """(one float32 vector per text, how many came from the cache); new vectors are stored."""
    if not texts:
        return None, 0
    if cache is None or cache.broken:
        return _embed(embedder, texts, modes), 0
    found = cache.vectors(embedder, texts, modes, int(embedder.dim))
    missing = [i for i in range(len(texts)) if i not in found]
    if missing:
        fresh = _embed(embedder, [texts[i] for i in missing], [modes[i] for i in missing])
        cache.put_vectors(embedder, [texts[i] for i in missing], [modes[i] for i in missing], fresh)
        found.update(zip(missing, fresh))
    return np.stack([found[i] for i in range(len(texts))]).astype(np.float32), len(texts) - len(missing)
