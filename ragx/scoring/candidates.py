"""The product of a retrieval pass: plain arrays, everything scoring needs and nothing it must fetch.

Node arrays are aligned with `nodes` (sorted chunk ids of the neighbourhood: every seed plus every
chunk the graph can reach from them within the pass's caps). The CSR arrays are the similarity graph
induced on those nodes, with neighbour positions local to `nodes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from .bm25 import DEFAULT_VARIANT, K1, B

# A file's role in a code repository (ragx/ingest/file_roles.py reads it from the path; role_prior weighs it).
ROLE_SOURCE, ROLE_OTHER, ROLE_TEST, ROLE_EXAMPLE, ROLE_DOC = 0, 1, 2, 3, 4
# [search] query_features: "issues" reads a query that is a pasted issue for its prose and names (search/query_features.py).
QUERY_FEATURES = ("off", "issues")


@dataclass(frozen=True)
class PassCaps:
    """The most any scoring run over this pass may ask for."""

    dense_n: int
    lexical_n: int
    hops: int
    query_floor: float
    bm25_k1: float = K1  # BM25's parameters: the lexical scores of a pass are made with them
    bm25_b: float = B
    bm25_variant: str = DEFAULT_VARIANT
    query_features: str = "off"  # what BM25 searches with: "off" the query's words, "issues" search/query_features.py

    def covers(self, other: "PassCaps") -> bool:
        """Whether a pass under these caps holds everything a pass under `other` would (so scoring
        any params whose `caps()` are `other` over it gives the same floats)."""
        return (
            self.dense_n >= other.dense_n
            and self.lexical_n >= other.lexical_n
            and self.hops >= other.hops
            and self.query_floor <= other.query_floor
            and bm25_of(self) == bm25_of(other)
        )

    @classmethod
    def widest(cls, caps: "list[PassCaps]") -> "PassCaps":
        """The narrowest caps that cover every one given."""
        return cls(
            dense_n=max(c.dense_n for c in caps),
            lexical_n=max(c.lexical_n for c in caps),
            hops=max(c.hops for c in caps),
            query_floor=min(c.query_floor for c in caps),
            **shared_bm25(caps),
        )


def bm25_of(x) -> tuple[float, float, str, str]:
    """How params or caps score BM25: (k1, b, variant, query_features)."""
    return x.bm25_k1, x.bm25_b, x.bm25_variant, x.query_features


def shared_bm25(items) -> dict[str, Any]:
    """The one (k1, b, variant) that params or caps share: a pass scores BM25 one way (ValueError otherwise)."""
    found = {bm25_of(x) for x in items}
    if len(found) > 1:
        raise ValueError(f"one retrieval pass cannot score BM25 with different parameters: (k1, b, variant, query_features) in {sorted(found)}")
    k1, b, variant, features = found.pop() if found else (K1, B, DEFAULT_VARIANT, "off")
    return {"bm25_k1": k1, "bm25_b": b, "bm25_variant": variant, "query_features": features}


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
    # float64 per node, NaN where not scored; None (the default) becomes all-NaN in __post_init__
    rerank: np.ndarray = field(default=cast(np.ndarray, None))
    rerank_model: str | None = None
    notes: dict = field(default_factory=dict)  # what the pass skipped and why (e.g. rerank unavailable)
    # The second edge type: (m, 2) file ids of linked files among the candidates' files, each unordered
    # pair once (ragx/search/link_edges.py); None when the pass did not read the link table.
    link_pairs: np.ndarray | None = None
    # Anchor evidence per node, of the node's file (ragx/search/anchor_signals.py): the best cosine of the
    # query to an anchor text written towards the file (float32, NaN: none), and the query's BM25 over
    # the file's anchor document (float64, 0: none or no match). None (the default) fills those values.
    anchor_sim: np.ndarray = field(default=cast(np.ndarray, None))
    anchor_lexical: np.ndarray = field(default=cast(np.ndarray, None))
    # The labelled query this pass answers, when it came from a query set (the lab's pass cache);
    # empty for a user's query.
    qid: str = ""
    # The most BM25 could give one chunk on the query's words (0: not known, an index without
    # postings): the "nothing relevant" rule reads the best score as a share of it.
    lexical_ceiling: float = 0.0
    # int8 per node: its file's role (ragx/ingest/file_roles.py: 0 source, 1 other, 2 test, 3 example,
    # 4 doc); None (the default) reads as "other" everywhere, which no role prior weighs.
    file_role: np.ndarray = field(default=cast(np.ndarray, None))

    def __post_init__(self):
        if self.rerank is None:
            self.rerank = np.full(len(self.nodes), np.nan)
        if self.anchor_sim is None:
            self.anchor_sim = np.full(len(self.nodes), np.nan, dtype=np.float32)
        if self.anchor_lexical is None:
            self.anchor_lexical = np.zeros(len(self.nodes))
        if self.file_role is None:
            self.file_role = np.full(len(self.nodes), ROLE_OTHER, dtype=np.int8)

    def cache_row(self) -> dict:
        """The fields a pass cache stores, as plain lists (see CACHE_COLUMNS)."""
        return {col: getattr(self, col).tolist() for col in CACHE_COLUMNS}

    def local(self, chunk_ids: np.ndarray) -> np.ndarray:
        """Positions of chunk ids in `nodes` (they must be there)."""
        return np.searchsorted(self.nodes, chunk_ids)


# What a pass cache keeps of a Candidates: every per-node or CSR array, with its element dtype.
# The remaining fields are either carried separately by the cache (query, variants, dense_ids, caps) or
# filled after the pass (rerank, rerank_model, notes). A new field must be added to one of the two.
# link_pairs is per pass, not per node: a cache keeps it apart, flattened (lab/passes.py).
CACHE_COLUMNS = {
    "lexical_ids": np.int64,
    "nodes": np.int64,
    "file_ids": np.int64,
    "qsim": np.float32,
    "lexical": np.float64,
    "indptr": np.int64,
    "nbr": np.int64,
    "weight": np.float64,
    "anchor_sim": np.float32,
    "anchor_lexical": np.float64,
    "file_role": np.int8,
}
CACHED_APART = ("query", "variants", "dense_ids", "caps", "link_pairs", "qid", "lexical_ceiling")
NOT_CACHED = ("rerank", "rerank_model", "notes")
