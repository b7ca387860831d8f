"""Graph families as per-node scorers over one cached pass (equal budget: every family ranks the same
nodes). Each starts from a base fused score s0 over the nodes and adds graph evidence; all sparse ops
are vectorised (scipy.sparse), no per-node Python loop.

    hybrid       s0 = RRF(dense, BM25) over the nodes                       (the reference)
    heat         ragx's propagate() from the RRF seeds, mixed: mm(s0) + w*mm(heat)
    regularise   label spreading on the kNN graph: s <- (1-lam) s0 + lam * D^-1 W s  (t steps)
    ppr          personalised PageRank from s0 on the kNN graph, mixed: mm(s0) + w*mm(ppr)
    adjacent     chunks next to each other in one file: mm(s0) + w * max over adjacent chunk's mm(s0)
    rareterm     chunks sharing rare terms (document frequency <= df_max) are linked with weight
                 sum of shared idf, row-normalised; mm(s0) + w * mm(W s0)   (multi-hop bridges)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ragx.scoring.candidates import Candidates
from ragx.scoring.params import Params
from ragx.scoring.score import minmax
from ragx.scoring.traverse import propagate

from . import signals

Scorer = Callable[[Candidates], np.ndarray]


def _rownorm(a: sp.csr_matrix) -> sp.csr_matrix:
    deg = np.asarray(a.sum(axis=1)).ravel()
    inv = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
    return sp.diags(inv) @ a


# The base fusion every family builds on: RRF (the reference) or ragx's min-max linear fusion
# with today's promoted lexical share (delta / (gamma + delta) = 0.42).
BASES = {"rrf": lambda c: signals.rrf(c, 60.0), "linear": lambda c: signals.linear(c, 0.4976581150386485, 0.36041733346022464)}


def hybrid(base: str = "rrf") -> Scorer:
    return BASES[base]


def heat(w: float, decay: float = 0.5, hops: int = 2, base: str = "rrf", seeds: int = 100) -> Scorer:
    p = Params(top=10, dense_n=seeds, lexical_n=seeds, rrf_k=60.0, hops=hops, decay=decay, query_floor=0.2,
               max_frontier=100000, rerank_weight=0.0, heat_weight=1.0, dense_weight=0.0, lexical_weight=0.0, shortlist=0, file_chunks=1,
                      link_weight=0.0, min_dense_evidence=0.0, min_lexical_evidence=0.0, min_lexical_share=0.0, bm25_k1=1.2, bm25_b=0.75, bm25_variant="fts5", query_features="off", anchor_dense=0.0, anchor_lexical=0.0, prior_test=1.0, prior_example=1.0, prior_doc=1.0)

    def score(c: Candidates) -> np.ndarray:
        from ragx.scoring.fuse import rrf as seed_rrf

        tr = propagate(c, p, seed_rrf(c, p))
        return minmax(BASES[base](c)) + w * minmax(tr.heat)

    return score


def regularise(lam: float, steps: int = 2, base: str = "rrf") -> Scorer:
    def score(c: Candidates) -> np.ndarray:
        s0 = minmax(BASES[base](c))
        p = _rownorm(signals.adjacency(c))
        s = s0
        for _ in range(steps):
            s = (1 - lam) * s0 + lam * (p @ s)
        return s

    return score


def ppr(w: float, damping: float = 0.5, iters: int = 20, base: str = "rrf") -> Scorer:
    def score(c: Candidates) -> np.ndarray:
        s0 = BASES[base](c)
        e = s0 / s0.sum() if s0.sum() > 0 else s0
        pt = _rownorm(signals.adjacency(c)).T.tocsr()
        x = e.copy()
        for _ in range(iters):
            x = (1 - damping) * e + damping * (pt @ x)
        return minmax(s0) + w * minmax(x)

    return score


@dataclass
class SideGraphs:
    """Per-collection data the non-kNN families need: chunk order in files, a chunk x rare-term matrix."""

    ids: np.ndarray          # chunk ids, sorted
    file_ids: np.ndarray
    ordinal: np.ndarray
    terms: sp.csr_matrix     # chunk rows x term columns, binary
    idf: np.ndarray          # per term
    df: np.ndarray           # chunks containing the term


def side_graphs(table) -> SideGraphs:
    from sklearn.feature_extraction.text import CountVectorizer

    from ragx.search.lexical import STOPWORDS

    cv = CountVectorizer(lowercase=True, token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z0-9_\-]{2,}\b", stop_words=list(STOPWORDS), binary=True,
                         dtype=np.float32)
    x = cv.fit_transform(table.texts).tocsr()
    df = np.asarray(x.sum(axis=0)).ravel()
    n = x.shape[0]
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
    return SideGraphs(table.ids, table.file_ids, table.ordinal, x, idf, df)


def adjacent(side: SideGraphs, w: float, base: str = "rrf") -> Scorer:
    def score(c: Candidates) -> np.ndarray:
        s0 = minmax(BASES[base](c))
        rows = np.searchsorted(side.ids, c.nodes)
        f, o = side.file_ids[rows], side.ordinal[rows]
        # neighbours within a file: same file, ordinal +-1, both among the pass's nodes
        key = f * 1_000_000 + o
        order = np.argsort(key)
        ks = key[order]
        best = np.zeros(len(c.nodes))
        for step in (-1, 1):
            pos = np.searchsorted(ks, key + step)
            ok = (pos < len(ks)) & (ks[np.minimum(pos, len(ks) - 1)] == key + step)
            nb = np.where(ok, order[np.minimum(pos, len(ks) - 1)], -1)
            best = np.maximum(best, np.where(nb >= 0, s0[np.maximum(nb, 0)], 0.0))
        return s0 + w * best

    return score


def rareterm(side: SideGraphs, w: float, df_max: int = 20, base: str = "rrf") -> Scorer:
    rare = (side.df >= 2) & (side.df <= df_max)
    weights = sp.diags(np.where(rare, side.idf, 0.0).astype(np.float32))
    x = (side.terms @ weights).tocsr()
    x.eliminate_zeros()
    binx = side.terms.multiply(rare[None, :].astype(np.float32)).tocsr()

    def score(c: Candidates) -> np.ndarray:
        s0 = minmax(BASES[base](c))
        rows = np.searchsorted(side.ids, c.nodes)
        a = (x[rows] @ binx[rows].T).tocsr()  # shared rare terms, weighted by idf
        a.setdiag(0)
        a.eliminate_zeros()
        bridge = _rownorm(a) @ s0
        return s0 + w * minmax(bridge)

    return score
