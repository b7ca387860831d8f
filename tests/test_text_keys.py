"""One hasher keys every text ragx caches by content (ragx/text_keys.py). Keys written before it existed
sit in caches on disk (vectors reused by the next index run, cross-encoder scores, label term counts);
these values are the ones the three earlier hashers gave, so no cache entry on disk went stale."""

from __future__ import annotations

import numpy as np

from ragx.models.rerank_cache import score_keys
from ragx.text_keys import text_keys

TEXTS = ["a chunk of text", "é"]
BEFORE = [16657270385463412920, 17839895020865391795]   # index/plan.py's and models/rerank_cache.py's xxh3-64
COUNTED_BEFORE = [1295559200768806615]                  # index/label_terms.py's, seeded with COUNTING_RULE 2


def test_keys_are_the_ones_caches_on_disk_hold():
    keys = text_keys(TEXTS)
    assert keys.dtype == np.uint64 and keys.tolist() == BEFORE
    assert text_keys(TEXTS[:1], seed=2).tolist() == COUNTED_BEFORE
    signed = score_keys(TEXTS)  # SQLite's integer: the same bits
    assert signed.dtype == np.int64 and signed.view(np.uint64).tolist() == BEFORE


def test_label_counts_are_keyed_apart_from_vectors():
    from ragx.index.label_terms import COUNTING_RULE

    assert text_keys(TEXTS, seed=COUNTING_RULE).tolist() != text_keys(TEXTS).tolist()
