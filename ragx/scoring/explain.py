"""The --explain trace: the exact seed -> edge -> chunk path behind a result."""

from __future__ import annotations

from typing import Any

import numpy as np

from .candidates import Candidates
from .params import Params
from .traverse import Trace, path_of


def leg_ranks(c: Candidates, p: Params, node: int) -> dict[str, int | list[int | None] | None]:
    """1-based rank of a seed in the query's own dense leg and in the BM25 leg (None: not there)."""
    chunk = c.nodes[node]
    out: dict[str, int | list[int | None] | None] = {"dense_rank": None, "lexical_rank": None}
    dense = c.dense_ids[0][: p.dense_n] if c.dense_ids else np.empty(0, np.int64)
    hit = np.flatnonzero(dense == chunk)
    if len(hit):
        out["dense_rank"] = int(hit[0]) + 1
    if p.lexical_n > 0:
        hit = np.flatnonzero(c.lexical_ids[: p.lexical_n] == chunk)
        if len(hit):
            out["lexical_rank"] = int(hit[0]) + 1
    if len(c.dense_ids) > 1:
        out["variant_ranks"] = [
            (int(np.flatnonzero(ids[: p.dense_n] == chunk)[0]) + 1) if np.any(ids[: p.dense_n] == chunk) else None
            for ids in c.dense_ids[1:]
        ]
    return out


def explain_path(c: Candidates, p: Params, trace: Trace, node: int) -> list[dict]:
    steps = path_of(trace, node)
    seed = steps[0]
    out: list[dict[str, Any]] = [{"chunk_id": int(c.nodes[seed]), "hop": 0, "role": "seed", **leg_ranks(c, p, seed)}]
    for prev, cur in zip(steps, steps[1:]):
        out.append(
            {
                "chunk_id": int(c.nodes[cur]),
                "hop": int(trace.hop[cur]),
                "from": int(c.nodes[prev]),
                "edge_weight": float(trace.edge[cur]),
            }
        )
    return out

