"""The product of a retrieval pass: plain arrays, everything scoring needs and nothing it must fetch.

Node arrays are aligned with `nodes` (sorted chunk ids of the neighbourhood: every seed plus every
chunk the graph can reach from them within the pass's caps). The CSR arrays are the similarity graph
induced on those nodes, with neighbour positions local to `nodes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class PassCaps:
    """The most any scoring run over this pass may ask for."""

    dense_n: int
    lexical_n: int
    hops: int
    query_floor: float


@dataclass
class Candidates:
    query: str
    variants: list[str]            # texts whose dense legs follow; variants[0] is the query itself
    dense_ids: list[np.ndarray]    # per variant: chunk ids, best first (up to caps.dense_n)
    lexical_ids: np.ndarray        # BM25 matches, best first (up to caps.lexical_n)
    nodes: np.ndarray              # int64 chunk ids, sorted
    file_ids: np.ndarray           # int64 per node
    qsim: np.ndarray               # float32 per node: cosine of the chunk to the query vector
    lexical: np.ndarray            # float64 per node: BM25 score (0 where the chunk does not match)
    indptr: np.ndarray             # int64 (len(nodes) + 1)
    nbr: np.ndarray                # int64 local positions
    weight: np.ndarray             # float64 edge weights, as stored
    caps: PassCaps
    rerank: np.ndarray = field(default=None)  # float64 per node, NaN where not scored
    rerank_model: str | None = None
    notes: dict = field(default_factory=dict)  # what the pass skipped and why (e.g. rerank unavailable)
    # [ranking] the second edge type: (m, 2) file ids of linked files among the candidates' files
    # (ragx/search/link_edges.py); None when the pass did not read the link table
    link_pairs: np.ndarray | None = None

    def __post_init__(self):
        if self.rerank is None:
            self.rerank = np.full(len(self.nodes), np.nan)

    def local(self, chunk_ids: np.ndarray) -> np.ndarray:
        """Positions of chunk ids in `nodes` (they must be there)."""
        return np.searchsorted(self.nodes, chunk_ids)
