"""Every knob of scoring in one frozen dataclass. A leaf module: the [search] section of the config
uses it as its schema, and the lab sweeps it. Defaults live in ragx/defaults.toml, not here."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .candidates import PassCaps


@dataclass(frozen=True)
class Params:
    top: int                 # results shown (chunks, or files with --files-only)
    dense_n: int             # seeds from the dense leg (per query variant)
    lexical_n: int           # seeds from the BM25 leg (0 = no lexical leg)
    rrf_k: float             # Reciprocal Rank Fusion constant: 1 / (rrf_k + rank)
    hops: int                # heat propagation depth (0 = no graph)
    decay: float             # heat kept per hop, on top of the edge weight
    query_floor: float       # a neighbour is admitted only if its cosine to the query reaches this
    max_frontier: int        # at most this many nodes admitted per hop
    rerank_weight: float     # weight of the cross-encoder score
    heat_weight: float       # weight of heat
    dense_weight: float      # weight of the dense cosine
    lexical_weight: float    # weight of BM25
    shortlist: int           # candidates the reranker scores, chosen by the pre-score
    file_chunks: int         # a file scores the sum of its best this-many chunk scores
    link_weight: float       # share of the best linked file's score a candidate gains (0 = off)
    min_dense_evidence: float    # "no match" unless the best chunk's cosine reaches this ...
    min_lexical_evidence: float  # ... or the best BM25 per query term reaches this ...
    min_lexical_share: float     # ... or the best BM25 over its ceiling reaches this (ragx/search/evidence.py; any 0 = off)
    bm25_k1: float           # BM25 term-frequency saturation (FTS5's bm25(): 1.2)
    bm25_b: float            # BM25 length normalisation, 0..1 (FTS5's bm25(): 0.75)
    bm25_variant: str        # BM25's formula: "fts5" (FTS5's bm25()), "lucene", "atire", "bm25l", "bm25+" (ragx/scoring/bm25.py)
    query_features: str      # "issues": BM25 reads a pasted issue for its prose and code names (search/query_features.py); "off"
    anchor_dense: float      # share of the dense signal taken by anchor evidence, 0..1 (0 = off): (1 - a) * cosine + a * max(cosine, best anchor cosine of its file)
    anchor_lexical: float    # the same for BM25 over the file's anchor document, both scaled by their best candidate (0 = off)
    prior_test: float        # a test file's candidates weigh this much (0..1, 1 = off) where source code is among the candidates
    prior_example: float     # the same for examples
    prior_doc: float         # the same for docs (markdown, text, files under docs/): README, agent files

    def caps(self) -> "PassCaps":
        """The retrieval pass these params need."""
        from .candidates import PassCaps

        return PassCaps(self.dense_n, self.lexical_n, self.hops, self.query_floor, self.bm25_k1, self.bm25_b, self.bm25_variant,
                        self.query_features)

    def replace(self, **changes) -> "Params":
        return dataclasses.replace(self, **changes)

    def switched(self, *, graph: bool | None = None, lexical: bool = True, rerank: bool = True) -> "Params":
        """The switches of `ragx query`: --graph / --no-graph (None keeps the configured hops),
        --no-lexical, --no-rerank. The graph is off by default (hops = 0); --graph turns on one hop."""
        p = self
        if graph is False:
            p = p.replace(hops=0)
        elif graph is True:
            p = p.replace(hops=max(p.hops, 1))
        if not lexical:
            p = p.replace(lexical_n=0, lexical_weight=0.0)
        if not rerank:
            p = p.replace(rerank_weight=0.0)
        return p
