"""Leiden communities over the similarity graph (graspologic-native), seeded and deterministic: a full
run starts from singletons, an incremental run from the stored partition (so its result depends on the
index's history, as the vote that places new chunks above LEIDEN_EVERY_RUN_MAX does)."""

from __future__ import annotations

import numpy as np

from ..lookup import union_ids

NO_COMMUNITY = -1  # chunks without edges belong to no community
# Chunks up to which every index run runs Leiden over the whole graph. A larger index runs it when
# its graph is compacted; in between, new chunks join their neighbours' communities (arrays.py,
# repair.assign_communities). A whole run costs Leiden plus rewriting every community row and label:
# 7 s of an 8 s one-file run at 100k chunks (bench_scale), so it stops well below that.
LEIDEN_EVERY_RUN_MAX = 20_000


def leiden(ids: np.ndarray, a: np.ndarray, b: np.ndarray, w: np.ndarray, resolution: float, seed: int,
           start: np.ndarray | None = None) -> np.ndarray:
    """Community of each id in `ids` (NO_COMMUNITY where it has no edge), numbered by size then id.

    `start`: the previous community of each id (NO_COMMUNITY: none), from which Leiden refines instead
    of starting from singletons. An incremental run passes it, so a small edit moves few chunks: over
    five one-file edits of a 16,700-chunk index (scripts/bench/bench_communities.py), the partition's
    adjusted Rand index against the one before was 0.71-0.80 from singletons and 0.97-0.998 refined,
    with a higher modularity at the end (0.882 against 0.874)."""
    out = np.full(len(ids), NO_COMMUNITY, dtype=np.int64)
    if len(a) == 0:
        return out
    import graspologic_native as gn

    # The edge list's order is part of the algorithm's input: keep it canonical (sorted by a, b).
    order = np.lexsort((b, a))
    edges = list(zip(a[order].astype(str).tolist(), b[order].astype(str).tolist(), w[order].tolist()))
    starting = _starting(ids, union_ids(a, b), start)
    _, partition = gn.leiden(edges=edges, starting_communities=starting, resolution=resolution, seed=seed,
                             use_modularity=True, trials=1)
    nodes = np.fromiter((int(n) for n in partition), dtype=np.int64, count=len(partition))
    labels = np.fromiter(partition.values(), dtype=np.int64, count=len(partition))
    # Renumber: largest community first, ties by smallest member id, so numbers are stable and readable.
    uniq, inv, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    first = np.full(len(uniq), np.iinfo(np.int64).max)
    np.minimum.at(first, inv, nodes)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[np.lexsort((first, -sizes))] = np.arange(len(uniq))
    out[np.searchsorted(ids, nodes)] = rank[inv]
    return out


def _starting(ids: np.ndarray, nodes: np.ndarray, start: np.ndarray | None) -> dict[str, int] | None:
    """Leiden's starting partition: every node of the edge list (sorted) keeps its previous community,
    a node without one starts alone; None (singletons) when no node has one."""
    if start is None:
        return None
    known = np.asarray(start, dtype=np.int64)[np.searchsorted(ids, nodes)]  # a copy: fancy indexing
    alone = known < 0
    if alone.all():
        return None
    known[alone] = known.max() + 1 + np.arange(int(alone.sum()))
    return dict(zip(nodes.astype(str).tolist(), known.tolist()))
