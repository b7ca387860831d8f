"""The ``sentence-transformers`` engine: any SentenceTransformer model, run in process with torch.

``model`` is a local model directory or a Hugging Face hub name (downloaded by sentence-transformers
on first use unless ``HF_HUB_OFFLINE=1``). torch and sentence-transformers are imported only when
the model is first needed, so choosing another engine never pays for them.

Identity: ``"sentence-transformers:<model>"``, plus ``@<8 hex of the weights' sha256>`` for a local
directory holding ``config.json`` and ``model.safetensors`` (so retrained weights in the same folder
ask for ``index --full``), plus the document prefix when one is set. Chunks are counted with the
model's own tokenizer against its ``max_seq_length``, minus the document prefix's tokens.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ProviderError
from ..lazy import once
from .base import ProgressFn, WordPieceCounter, check_batch, required

__all__ = ["SentenceTransformerEmbedder", "TokenizerCounter", "load_local_first", "quiet_transformers", "unloadable_here"]


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """No "Loading weights" progress bars or INFO chatter on stderr while a model loads."""
    try:
        import transformers
    except ImportError:  # pragma: no cover - sentence-transformers depends on it
        yield
        return
    level = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    try:
        yield
    finally:
        transformers.logging.set_verbosity(level)
        transformers.logging.enable_progress_bar()


def load_local_first(cls: Any, model: str, **kwargs: Any) -> Any:
    """``cls(model, **kwargs)`` from a local directory or the local Hugging Face cache when possible;
    only a hub name missing from the cache goes to the network (unless ``HF_HUB_OFFLINE=1``).

    Offline machines with a cached model therefore load at once instead of waiting on hub timeouts.
    """
    path = Path(model).expanduser()
    if path.is_dir():
        return cls(str(path), **kwargs)
    try:
        return cls(model, local_files_only=True, **kwargs)
    except Exception:  # noqa: BLE001 - not cached (or not loadable offline): try the hub below
        pass
    return cls(model, **kwargs)


def unloadable_here(model: str) -> str | None:
    """Why `model` cannot be loaded on this machine now, said before torch is imported (tens of
    seconds on a busy machine), or None: a hub name the local cache lacks while the hub cannot be
    reached. The hub client would otherwise retry for minutes (395 s seen) before giving up."""
    if Path(model).expanduser().is_dir():
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None  # sentence-transformers (which needs it) will say what is missing
    try:
        if isinstance(try_to_load_from_cache(model, "config.json"), str):
            return None  # cached: loaded without the network
    except ValueError:  # not a hub name at all (e.g. a missing local path): the loader says so
        return None
    unreachable = hub_unreachable()
    if unreachable:
        return f"not in the local model cache, and {unreachable}: download it where the hub answers, or name a local folder"
    return None


HUB_PROBE_SECONDS = 3.0


def hub_unreachable() -> str | None:
    """Why the model hub cannot be asked for a model now, or None when it answers (any HTTP status):
    HF_HUB_OFFLINE set, or one HEAD request (through the environment's proxies) failing within
    HUB_PROBE_SECONDS. Called only for a model the local cache lacks."""
    import urllib.error
    import urllib.request

    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() not in ("", "0", "false", "no", "off"):
        return "HF_HUB_OFFLINE is set"
    endpoint = os.environ.get("HF_ENDPOINT", "").strip() or "https://huggingface.co"
    try:
        with urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=HUB_PROBE_SECONDS):
            return None
    except urllib.error.HTTPError:
        return None  # it answered
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"the model hub ({endpoint}) cannot be reached ({' '.join(str(reason).split())[:80]})"


class TokenizerCounter(WordPieceCounter):
    """:class:`WordPieceCounter` over an in-memory ``tokenizers.Tokenizer`` (a fast HF tokenizer's backend)."""

    def __init__(self, tokenizer: Any, max_tokens: int) -> None:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_str(tokenizer.to_str())  # a copy: padding/truncation changes stay ours
        tok.no_truncation()
        tok.no_padding()
        self._tok = tok
        self.n_special_tokens = tok.num_special_tokens_to_add(False)
        self.max_tokens = int(max_tokens)
        self.max_content_tokens = self.max_tokens - self.n_special_tokens
        if self.max_content_tokens <= 0:
            raise ValueError(f"max_tokens={max_tokens} leaves no room for content tokens")
        self._encode_batch_fast = getattr(tok, "encode_batch_fast", tok.encode_batch)


def _local_dir(model: str) -> Path | None:
    path = Path(model).expanduser()
    return path.resolve() if path.is_dir() else None


class SentenceTransformerEmbedder:
    """:class:`~ragx.models.base.Embedder` backed by ``sentence_transformers.SentenceTransformer``."""

    def __init__(self, model: str, *, doc_prefix: str = "", query_prefix: str = "", device: str = "") -> None:
        model = required(model, 'engine "sentence-transformers" needs embeddings.model: a local directory or a hub name')
        if model.startswith(("/", "./", "../", "~")) and _local_dir(model) is None:
            raise ValueError(f"embeddings.model {model!r} is not a directory")
        self.model = model
        self.doc_prefix = doc_prefix
        self.query_prefix = query_prefix
        self.device = device or None
        self._st: Any = None
        self._counter: WordPieceCounter | None = None
        self._fingerprint: str | None = None
        self._lock = threading.Lock()

    # -- identity -----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = ""
            local = _local_dir(self.model)
            if local is not None:
                from .onnx_export import model_fingerprint

                with contextlib.suppress(Exception):  # no safetensors (e.g. pytorch_model.bin): name only
                    self._fingerprint = model_fingerprint(local)[:8]
        shown = self.model.rstrip("/")
        name = f"sentence-transformers:{shown}" + (f"@{self._fingerprint}" if self._fingerprint else "")
        return name + (f"|doc_prefix={self.doc_prefix!r}" if self.doc_prefix else "")

    @property
    def dim(self) -> int:
        st = self._load()
        get = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
        return int(get())

    @property
    def max_tokens(self) -> int:
        return int(self._load().max_seq_length)

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model!r})"

    # -- loading ------------------------------------------------------------------------------

    def _load(self) -> Any:
        return once(self, "_st", self._lock, self._load_model)

    def _load_model(self) -> Any:
        unloadable = unloadable_here(self.model)
        if unloadable:
            raise ProviderError(f"sentence-transformers model {self.model} unavailable: {unloadable} (embeddings.model)")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ProviderError(
                f'engine "sentence-transformers" needs the package sentence-transformers ({exc}; pip install sentence-transformers)'
            ) from None
        try:
            with quiet_transformers():
                return load_local_first(SentenceTransformer, self.model, device=self.device)
        except Exception as exc:  # noqa: BLE001 - any load failure is one line for the user
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ProviderError(
                f"sentence-transformers model {self.model} could not be loaded: {first} "
                "(check embeddings.model: a local directory, or a hub name reachable or cached)"
            ) from None

    # -- Embedder API -------------------------------------------------------------------------

    def token_counter(self) -> WordPieceCounter:
        if self._counter is None:
            st = self._load()
            backend = getattr(st.tokenizer, "backend_tokenizer", None)
            local = _local_dir(self.model)
            if backend is not None:
                counter: WordPieceCounter = TokenizerCounter(backend, self.max_tokens)
            elif local is not None and (local / "tokenizer.json").is_file():
                counter = WordPieceCounter(local / "tokenizer.json", self.max_tokens)
            else:
                raise ProviderError(f"sentence-transformers model {self.model} has no fast tokenizer to size chunks with")
            self._counter = counter.reserve(self.doc_prefix, "the model's window")
        return self._counter

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([self.query_prefix + text], 1)[0]

    def embed_documents(self, texts: Sequence[str], batch_size: int = 32, progress: ProgressFn | None = None) -> np.ndarray:
        n = check_batch(texts, batch_size)
        if n == 0:
            return np.empty((0, self.dim), dtype=np.float32)
        order = np.argsort(-np.fromiter((len(t) for t in texts), dtype=np.int64, count=n), kind="stable")
        out = np.empty((n, self.dim), dtype=np.float32)
        # Slabs of a few batches: progress moves, and sentence-transformers still sorts within a slab.
        slab = batch_size * 4
        for start in range(0, n, slab):
            idx = order[start : start + slab]
            out[idx] = self._encode([self.doc_prefix + texts[i] for i in idx], batch_size)
            if progress is not None:
                progress(len(idx))
        return out

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        st = self._load()
        vecs = st.encode(
            texts, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True, normalize_embeddings=True
        )
        return np.asarray(vecs, dtype=np.float32)
