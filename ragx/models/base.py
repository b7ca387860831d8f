"""Protocols shared by every embedding engine, and the WordPiece token counter.

An :class:`Embedder` turns text into unit-length float32 vectors. Engines (the embedded ONNX one,
and later sentence-transformers and an OpenAI-compatible HTTP endpoint) all honour the same
contract so that the index and the search pass never care which one produced a vector:

* ``embed_documents`` returns ``(n, dim)`` float32 rows, L2-normalised, in input order;
* ``embed_query`` returns one ``(dim,)`` float32 vector, L2-normalised;
* ``name`` is the identity written to the index manifest; two embedders with the same name must
  produce the same vectors (up to float noise), so it carries a fingerprint of the weights.

A :class:`TokenCounter` lets the chunker size chunks in the embedder's *own* tokens, so that a chunk
the chunker accepts is never truncated by the embedder.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
else:  # registering an engine (registry.py) must not load numpy for `ragx status` (lazy.py)
    from ..lazy import lazy_module

    np = lazy_module("numpy")

__all__ = ["Embedder", "ProgressFn", "TokenCounter", "WordPieceCounter", "check_batch", "required"]

#: Called after each batch with the number of texts finished in that batch.
ProgressFn = Callable[[int], None]


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens the way the embedder will see them (content tokens only, no specials)."""

    #: Largest number of content tokens a text may have without being truncated by the embedder
    #: (the embedder's ``max_tokens`` minus the special tokens it adds, e.g. 256 - 2 = 254).
    max_content_tokens: int

    def token_offsets(self, text: str) -> np.ndarray:
        """``int64`` array ``(n_tokens, 2)``: ``[start, end)`` *character* offsets into ``text`` of
        each content token (no special tokens, no truncation). Characters the tokenizer drops
        (whitespace, control characters) belong to no token."""
        ...

    def count(self, texts: Sequence[str]) -> np.ndarray:
        """``int64`` array ``(len(texts),)``: content tokens per text (no specials, no truncation)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """A text-embedding engine. See the module docstring for the contract."""

    # Read-only to callers: an engine may back them with a plain attribute or a property
    # (e.g. a dimension learnt from the first response).

    @property
    def name(self) -> str:
        """Identity stored in the index manifest, e.g. ``"embedded:all-MiniLM-L6-v2@1a2b3c4d"``."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    @property
    def max_tokens(self) -> int:
        """Maximum sequence length the model accepts, *including* special tokens."""
        ...

    def embed_documents(
        self,
        texts: Sequence[str],
        batch_size: int = 32,
        progress: ProgressFn | None = None,
    ) -> np.ndarray:
        """``(len(texts), dim)`` float32, L2-normalised, same order as ``texts``.
        ``progress(k)`` is called after each batch with the ``k`` texts it finished."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """``(dim,)`` float32, L2-normalised."""
        ...

    def token_counter(self) -> TokenCounter:
        """The counter matching this embedder's tokenizer."""
        ...


def required(name: str | None, missing: str) -> str:
    """A model name a setting must give, stripped; ValueError(`missing`) when it is empty."""
    name = (name or "").strip()
    if not name:
        raise ValueError(missing)
    return name


def check_batch(texts: Sequence[str], batch_size: int) -> int:
    """The argument checks every engine's ``embed_documents`` makes; returns ``len(texts)``."""
    if isinstance(texts, str):
        raise TypeError("embed_documents takes a sequence of strings, not a string")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    return len(texts)


class WordPieceCounter:
    """:class:`TokenCounter` over a Hugging Face ``tokenizer.json`` (WordPiece for BERT models, but
    any model the ``tokenizers`` library can load works).

    The file's own truncation and padding settings are discarded: counting never truncates or pads.

    Offsets are character offsets into the Python ``str`` passed in (``tokenizers`` converts its
    internal byte offsets for ``str`` input), also for non-ASCII text, emoji and text the
    normaliser rewrites (accents stripped, lower-cased): the offsets always point into the
    original text. A run of characters the vocabulary cannot represent (e.g. ``"🎉🎉"``) becomes
    one ``[UNK]`` token spanning the whole run.

    Note for callers cutting text at token boundaries: re-tokenising a slice that starts or ends
    *inside* a word (between ``##`` pieces) may yield a token or two more than the pieces the
    slice covered. With BERT-style pre-tokenisation (split on whitespace and punctuation), a cut
    at a token start preceded by whitespace re-counts exactly.
    """

    def __init__(self, tokenizer_json_path: str | os.PathLike[str], max_tokens: int = 256) -> None:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(os.fspath(tokenizer_json_path))
        tok.no_truncation()
        tok.no_padding()
        self._tok = tok
        self.n_special_tokens: int = tok.num_special_tokens_to_add(False)
        self.max_tokens: int = int(max_tokens)
        self.max_content_tokens: int = self.max_tokens - self.n_special_tokens
        if self.max_content_tokens <= 0:
            raise ValueError(f"max_tokens={max_tokens} leaves no room for content tokens")
        # `encode_batch_fast` skips offset tracking (counting needs none); older releases lack it.
        self._encode_batch_fast = getattr(tok, "encode_batch_fast", tok.encode_batch)

    def reserve(self, prefix: str, setting: str) -> "WordPieceCounter":
        """Leave room for a prefix that shares the model's window with every chunk (doc_prefix)."""
        if prefix:
            self.max_content_tokens -= int(self.count([prefix])[0])
            if self.max_content_tokens < 8:
                raise ValueError(f"embeddings.doc_prefix leaves no room in {setting}")
        return self

    def token_offsets(self, text: str) -> np.ndarray:
        enc = self._tok.encode(text, add_special_tokens=False)
        offsets = enc.offsets
        if not offsets:
            return np.zeros((0, 2), dtype=np.int64)
        return np.asarray(offsets, dtype=np.int64).reshape(-1, 2)

    def count(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros(0, dtype=np.int64)
        encs = self._encode_batch_fast(texts, add_special_tokens=False)
        return np.fromiter((len(e.ids) for e in encs), dtype=np.int64, count=len(encs))

    def __repr__(self) -> str:
        return f"WordPieceCounter(max_content_tokens={self.max_content_tokens})"
