"""Membership in a sorted table, vectorised: the one binary search the index, the caches and the
search all use to match ids or keys against stored ones (no per-item Python)."""

from __future__ import annotations

import numpy as np


def find_sorted(table: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pos, found) per value: `found[i]` says whether values[i] is in the sorted `table`, and where it
    is, `table[pos[i]] == values[i]` (pos is clipped into the table, so it is always a valid index
    when the table is not empty). An empty table finds nothing."""
    values = np.asarray(values)
    if len(table) == 0:
        return np.zeros(len(values), np.int64), np.zeros(len(values), bool)
    pos = np.minimum(np.searchsorted(table, values), len(table) - 1)
    return pos, table[pos] == values
