"""A tiny deterministic embedder for fast tests: hashed bag of words, unit length.

Texts that share words are similar, so graphs and rankings have real structure, but nothing loads a
model. It implements the same Embedder and TokenCounter protocols as the real engines.
"""

from __future__ import annotations

import re
import zlib

import numpy as np

WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class WordCounter:
    def __init__(self, max_content_tokens: int = 62):
        self.max_content_tokens = max_content_tokens

    def token_offsets(self, text: str) -> np.ndarray:
        spans = [(m.start(), m.end()) for m in WORD.finditer(text)]
        return np.array(spans, dtype=np.int64).reshape(-1, 2)

    def count(self, texts: list[str]) -> np.ndarray:
        return np.array([len(WORD.findall(t)) for t in texts], dtype=np.int64)


class HashEmbedder:
    def __init__(self, dim: int = 64, name: str = "test:hash-64", max_content_tokens: int = 62):
        self.dim = dim
        self.name = name
        self.max_tokens = max_content_tokens + 2
        self._counter = WordCounter(max_content_tokens)
        self.embedded: list[str] = []  # every document text embedded, to check incrementality

    def token_counter(self) -> WordCounter:
        return self._counter

    def _one(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"\w+", text.lower()):
            v[zlib.crc32(w.encode()) % self.dim] += 1.0
        v[zlib.crc32(b"__bias__") % self.dim] += 0.25  # empty texts still get a unit vector
        return v / np.linalg.norm(v)

    def embed_documents(self, texts, batch_size: int = 32, progress=None) -> np.ndarray:
        self.embedded.extend(texts)
        out = np.stack([self._one(t) for t in texts]) if len(texts) else np.empty((0, self.dim), np.float32)
        if progress:
            progress(len(texts))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)
