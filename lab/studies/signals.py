"""Per-node signals of a cached pass, every one defined on the pass's full node set (the shared
candidate budget): dense cosine, BM25, their ranks, RRF and min-max normalised linear fusion."""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np

from ragx.scoring import fuse
from ragx.scoring.candidates import Candidates
from ragx.scoring.params import Params
from ragx.scoring.score import combine, minmax


def ranks_desc(values: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """1-based rank of each value among the valid ones (higher is better, ties by position); +inf elsewhere."""
    order = np.argsort(-values, kind="stable")
    if valid is not None:
        order = order[valid[order]]
    r = np.full(len(values), np.inf)
    r[order] = np.arange(1, len(order) + 1)
    return r


def dense_rank(c: Candidates) -> np.ndarray:
    return ranks_desc(c.qsim.astype(np.float64))


def lexical_rank(c: Candidates) -> np.ndarray:
    return ranks_desc(c.lexical, c.lexical > 0)


def rrf(c: Candidates, k: float = 60.0) -> np.ndarray:
    """RRF of the dense and BM25 rankings of all the pass's nodes (a node BM25 does not match adds 0): ragx's
    own fuse.rrf over two legs that rank every node, not only the seeds."""
    dense = np.argsort(-c.qsim.astype(np.float64), kind="stable")
    lexical = np.argsort(-c.lexical, kind="stable")
    lexical = lexical[c.lexical[lexical] > 0]
    legs = replace(c, dense_ids=[c.nodes[dense]], lexical_ids=c.nodes[lexical])
    n = len(c.nodes)
    return fuse.rrf(legs, _defaults().replace(rrf_k=k, dense_n=n, lexical_n=n))


def linear(c: Candidates, w_dense: float, w_lex: float) -> np.ndarray:
    """ragx's own fusion (min-max per query, weighted mean: score.combine) over the full node set, no heat."""
    p = _defaults().replace(heat_weight=0.0, dense_weight=w_dense, lexical_weight=w_lex)
    return combine(p, np.zeros(len(c.nodes)), minmax(c.qsim), minmax(c.lexical))


@functools.cache
def _defaults() -> Params:
    from ragx.config import load_settings

    return load_settings(None, warn=False).search


def adjacency(c: Candidates):
    """The pass's induced kNN graph as a symmetric scipy CSR matrix (weights as stored)."""
    import scipy.sparse as sp

    n = len(c.nodes)
    src = np.repeat(np.arange(n), np.diff(c.indptr))
    a = sp.csr_matrix((c.weight, (src, c.nbr)), shape=(n, n))
    return a.maximum(a.T).tocsr()


def seeds_mask(c: Candidates, n: int = 100) -> np.ndarray:
    """Nodes among the dense top-n (query vector) or the BM25 top-n: ragx's hybrid candidate set."""
    ids = np.concatenate([c.dense_ids[0][:n], c.lexical_ids[:n]]) if c.dense_ids else c.lexical_ids[:n]
    m = np.zeros(len(c.nodes), bool)
    m[c.local(np.unique(ids))] = True
    return m


def on_seeds(scorer, n: int = 100):
    """The same scorer restricted to the seeds-only candidate set (others NaN = not candidates).
    Signals (min-max, ranks) are computed over the seeds only, as ragx's hybrid preset does."""

    def score(c: Candidates) -> np.ndarray:
        m = seeds_mask(c, n)
        sub = restrict(c, m)
        out = np.full(len(c.nodes), np.nan)
        out[m] = scorer(sub)
        return out

    return score


def restrict(c: Candidates, m: np.ndarray) -> Candidates:
    """A Candidates view on the nodes in mask m (graph edges dropped: seeds-only scoring needs none)."""
    k = int(m.sum())
    return replace(c, nodes=c.nodes[m], file_ids=c.file_ids[m], qsim=c.qsim[m], lexical=c.lexical[m],
                   indptr=np.zeros(k + 1, np.int64), nbr=np.empty(0, np.int64), weight=np.empty(0), rerank=c.rerank[m],
                   notes=dict(c.notes))
