"""Embedding the texts an index run has no vector for: the batch plan, the journal, the servers.

The batches are made from the texts alone (longest first, ties by text key), so a run that embeds the
same texts makes the same batches: in one process or over a pool of servers, killed and resumed or
not. Engines give a text slightly different floats in different batches (padding changes the sums in
the last bits); fixed batches make a resumed run's index equal, byte for byte, to one never killed.

Each batch's vectors go to the journal (journal.py) as they arrive; a batch whose texts the journal
already holds (from a killed or failed run) is not sent again. A batch the journal holds only part of
(the corpus changed in between) sends just the texts it lacks.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..lookup import find_sorted
from ..models.pool import stream_batches
from .journal import VectorJournal


def batch_plan(lengths: np.ndarray, keys: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Positions per batch: longest first (similar lengths pad less), ties by key. `lengths` in tokens
    where the chunker counted them: ordering by characters pads 5.5% more tokens (SciFact, batches of 16)."""
    order = np.lexsort((keys, -np.asarray(lengths)))
    return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]


def embed_new(texts: list[str], keys: np.ndarray, lengths: np.ndarray, embedder, batch_size: int,
              journal: VectorJournal | None, advance: Callable[[int], None]) -> tuple[np.ndarray, np.ndarray]:
    """(vectors, taken from the journal) of distinct texts (`keys` unique, `lengths` a function of each
    text alone); `advance(n)` as each batch lands."""
    vecs = np.empty((len(texts), embedder.dim), np.float32)
    resumed = np.zeros(len(texts), bool)
    if journal is not None:
        old_keys, old_vecs = journal.recorded()
        pos, resumed = find_sorted(old_keys, keys)
        vecs[resumed] = old_vecs[pos[resumed]]
        if resumed.any():
            advance(int(resumed.sum()))
    todo = [b[~resumed[b]] for b in batch_plan(lengths, keys, batch_size)]
    todo = [b for b in todo if len(b)]
    try:
        for i, out in stream_batches(embedder, [[texts[j] for j in b] for b in todo]):
            rows = todo[i]
            vecs[rows] = out
            if journal is not None:
                journal.append(keys[rows], out)
            advance(len(rows))
    finally:
        if journal is not None:
            journal.close()
    return vecs, resumed
