"""Membership in a sorted table, vectorised: the one binary search the index, the caches and the
search all use to match ids or keys against stored ones (no per-item Python); and the sorted set of
ids a query's hot path takes."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
else:  # on `ragx status`'s path, which never needs numpy (lazy.py)
    from .lazy import lazy_module

    np = lazy_module("numpy")


def find_sorted(table: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pos, found) per value: `found[i]` says whether values[i] is in the sorted `table`, and where it
    is, `table[pos[i]] == values[i]` (pos is clipped into the table, so it is always a valid index
    when the table is not empty). An empty table finds nothing."""
    values = np.asarray(values)
    if len(table) == 0:
        return np.zeros(len(values), np.int64), np.zeros(len(values), bool)
    if len(table) == len(values) > 1 and np.array_equal(table, values):
        # Every live chunk against the stored rows, when nothing changed since they were written (a
        # query's load checks this twice): a comparison is ~40x cheaper than a million binary searches.
        return np.arange(len(values)), np.ones(len(values), bool)
    pos = np.minimum(np.searchsorted(table, values), len(table) - 1)
    return pos, table[pos] == values


def unique_ids(ids: np.ndarray) -> np.ndarray:
    """np.unique of a 1-D integer array: sorted, each value once. numpy 2's np.unique imports numpy.ma on
    its first plain call (~9 ms: the largest avoidable import of a one-shot query), so sort and drop repeats."""
    ids = np.sort(ids)
    if len(ids) < 2:
        return ids
    return ids[np.concatenate(([True], ids[1:] != ids[:-1]))]


def union_ids(*arrays: np.ndarray) -> np.ndarray:
    """np.union1d of 1-D integer arrays (sorted, each value once), without the numpy.ma import of np.unique."""
    return unique_ids(np.concatenate([np.ravel(a) for a in arrays]))


def ids_minus(ids: np.ndarray, others: np.ndarray) -> np.ndarray:
    """np.setdiff1d of 1-D integer arrays: the sorted values of `ids`, each once, that `others` lacks
    (without the numpy.ma import of np.unique: ~10 ms of a one-file edit)."""
    ids = unique_ids(np.ravel(ids))
    return ids[~isin_ids(ids, others)]


def isin_ids(values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """np.isin(values, ids) for integer arrays, through one sort and a binary search: np.isin's sorting
    route (taken when the values span a wide range) calls np.unique, which imports numpy.ma."""
    return find_sorted(unique_ids(np.ravel(ids)), np.ravel(values))[1]
