"""Heat propagation from the seeds along the similarity graph, hop by hop, all in numpy.

Seeds start with their fused score. At each hop every admitted node of the last hop pushes
heat x edge weight x decay to its neighbours. A neighbour is admitted only if its cosine to the query
reaches the floor; it is settled at the first hop that reaches it, with the largest contribution of
that hop (a max, not a sum: a hub can't inflate itself), and it remembers the seed, parent and edge
behind that contribution. At most max_frontier nodes are admitted per hop (the hottest).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .candidates import Candidates
from .params import Params


@dataclass
class Trace:
    heat: np.ndarray     # float64 per node (0 where not admitted)
    hop: np.ndarray      # int64 per node: 0 for seeds, -1 where not admitted
    parent: np.ndarray   # int64 local position of the node that passed the heat on, -1 for seeds
    edge: np.ndarray     # float64 weight of the edge from the parent (NaN for seeds)
    seed: np.ndarray     # int64 local position of the seed the heat came from

    @property
    def admitted(self) -> np.ndarray:
        return np.flatnonzero(self.hop >= 0)


def _out_edges(c: Candidates, frontier: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(source position, edge index) of every edge leaving `frontier`, without a Python loop."""
    starts = c.indptr[frontier]
    lens = c.indptr[frontier + 1] - starts
    total = int(lens.sum())
    src = np.repeat(frontier, lens)
    offsets = np.repeat(starts - (np.cumsum(lens) - lens), lens)
    return src, offsets + np.arange(total)


def propagate(c: Candidates, p: Params, fused: np.ndarray) -> Trace:
    n = len(c.nodes)
    heat = np.zeros(n)
    hop = np.full(n, -1, dtype=np.int64)
    parent = np.full(n, -1, dtype=np.int64)
    edge = np.full(n, np.nan)
    seed = np.full(n, -1, dtype=np.int64)
    frontier = np.flatnonzero(fused > 0)
    heat[frontier] = fused[frontier]
    hop[frontier] = 0
    seed[frontier] = frontier
    for h in range(1, p.hops + 1):
        if len(frontier) == 0:
            break
        src, eidx = _out_edges(c, frontier)
        dst = c.nbr[eidx]
        ok = (hop[dst] < 0) & (c.qsim[dst] >= p.query_floor)
        src, dst, eidx = src[ok], dst[ok], eidx[ok]
        if len(dst) == 0:
            break
        w = c.weight[eidx]
        contrib = heat[src] * w * p.decay
        # Best contribution per destination; ties go to the parent with the smaller chunk id.
        order = np.lexsort((c.nodes[src], -contrib, dst))
        first = np.ones(len(order), dtype=bool)
        first[1:] = dst[order][1:] != dst[order][:-1]
        best = order[first]
        if len(best) > p.max_frontier:
            best = best[np.lexsort((c.nodes[dst[best]], -contrib[best]))[: p.max_frontier]]
        d = dst[best]
        heat[d] = contrib[best]
        hop[d] = h
        parent[d] = src[best]
        edge[d] = w[best]
        seed[d] = seed[src[best]]
        frontier = np.sort(d)
    return Trace(heat, hop, parent, edge, seed)


def path_of(trace: Trace, node: int) -> list[int]:
    """Local positions from the seed to `node` (inclusive)."""
    path = [node]
    while trace.parent[path[-1]] >= 0:
        path.append(int(trace.parent[path[-1]]))
    return path[::-1]
