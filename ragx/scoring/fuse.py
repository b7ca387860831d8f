"""Reciprocal Rank Fusion of the seed rankings."""

from __future__ import annotations

import numpy as np

from .candidates import Candidates
from .params import Params


def seed_lists(c: Candidates, p: Params) -> list[np.ndarray]:
    """The rankings that seed a query under `p`: each dense variant's top dense_n, BM25's top lexical_n."""
    legs = [ids[: p.dense_n] for ids in c.dense_ids]
    if p.lexical_n > 0:
        legs.append(c.lexical_ids[: p.lexical_n])
    return [leg for leg in legs if len(leg)]


def rrf(c: Candidates, p: Params) -> np.ndarray:
    """Fused score per node: sum over legs of 1 / (rrf_k + rank), rank from 1; 0 for non-seeds."""
    fused = np.zeros(len(c.nodes), dtype=np.float64)
    for leg in seed_lists(c, p):
        np.add.at(fused, c.local(leg), 1.0 / (p.rrf_k + np.arange(1, len(leg) + 1, dtype=np.float64)))
    return fused
