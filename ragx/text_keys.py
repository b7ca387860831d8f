"""A text's key: the one hasher for everything ragx keys by content. Reusable vectors (index/plan.py and
the lab's vector cache), cached cross-encoder scores (models/rerank_cache.py and the lab's) and cached
label term counts (index/label_terms.py) all call `text_keys`.

xxh3-64 of the UTF-8 bytes, as uint64. `seed` keeps one use's keys apart when its own rule changes
(label_terms' COUNTING_RULE). The SQLite score cache stores the same 64 bits as a signed integer
(`.view(np.int64)`), as it did before this module: no key on disk changed, none needs migrating.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xxhash

__all__ = ["text_keys"]


def text_keys(texts: Sequence[str], seed: int = 0) -> np.ndarray:
    """uint64 key of each text, in order."""
    digest = xxhash.xxh3_64_intdigest
    return np.fromiter((digest(t.encode("utf-8"), seed=seed) for t in texts), dtype=np.uint64, count=len(texts))
