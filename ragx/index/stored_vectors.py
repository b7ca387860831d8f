"""A generation's vectors as a base and a delta, so a small change never rewrites them all.

    vectors.npy   float16 rows of `base_ids` (the HNSW file holds exactly these rows)
    delta.npy     float16 rows of `delta_ids`: chunks added since the base was written

Both id lists are sorted and every delta id exceeds every base id (chunk ids only grow), so base
then delta is one sorted list of stored rows; the live chunks are a subset of it (a chunk deleted
since the base was written keeps its base row until the next compaction). An incremental run whose
delta and deleted rows stay within `budget(live)` hard-links the previous generation's vectors.npy
and vectors.hnsw and writes only delta.npy; a larger one compacts (base = every live vector,
delta empty), as every run did before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from ..lookup import find_sorted

DELTA_SHARE = 0.05        # delta + deleted rows above this share of the live chunks: compact
DELTA_MIN_ROWS = 2_048    # ... but never compact below this many (small indexes compact rarely, cheaply)
DELTA_MAX_ROWS = 20_000   # ... and always above this many (the delta is searched exactly)


def budget(live: int) -> int:
    """Delta plus deleted rows an index of `live` chunks carries before it compacts."""
    return min(DELTA_MAX_ROWS, max(DELTA_MIN_ROWS, int(DELTA_SHARE * live)))


@dataclass
class StoredVectors:
    base_ids: np.ndarray   # int64, sorted
    base: np.ndarray       # float16 (memory-mapped when loaded), row i = base_ids[i]
    delta_ids: np.ndarray  # int64, sorted, all above base_ids
    delta: np.ndarray      # float16

    def slots(self, live: np.ndarray) -> np.ndarray | None:
        """Stored row of each live id (base rows first, then delta rows); None if one is missing."""
        stored = np.concatenate([self.base_ids, self.delta_ids])
        pos, found = find_sorted(stored, live)
        return pos if found.all() else None

    def dead(self, live: np.ndarray) -> np.ndarray:
        """Base ids no longer live (hidden from search until the next compaction)."""
        return np.setdiff1d(self.base_ids, live, assume_unique=True)

    def rows(self, live: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """The vectors of the live chunks, row i = live[i]: the base itself when it is exactly them.

        Else a LiveRows, typed as the array it stands in for (its users index rows, read shape/dtype)."""
        if not len(self.delta_ids) and len(self.base_ids) == len(live):
            return self.base
        return cast(np.ndarray, LiveRows(self, slots))


class LiveRows:
    """Live chunks' vectors over the base and delta files, indexed like one (live, dim) array.

    Only what is indexed is read (rows are gathered from the memory-mapped base and the delta)."""

    def __init__(self, stored: StoredVectors, slots: np.ndarray):
        self._stored, self._slots = stored, slots
        self.dtype = stored.base.dtype
        self.shape = (len(slots), stored.base.shape[1])
        self.ndim = 2

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows) -> np.ndarray:
        slots = self._slots[rows]
        flat = np.atleast_1d(slots)
        n_base = len(self._stored.base_ids)
        out = np.empty((len(flat), self.shape[1]), self.dtype)
        in_base = flat < n_base
        out[in_base] = self._stored.base[flat[in_base]]
        out[~in_base] = self._stored.delta[flat[~in_base] - n_base]
        return out if np.ndim(slots) else out[0]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self[np.arange(self.shape[0])]
        return out if dtype is None else out.astype(dtype)
