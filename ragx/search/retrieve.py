"""The retrieval pass: the expensive, parameter-free half of a query.

Embed the query, take the dense and BM25 seeds, walk the similarity graph out to the caps (every
chunk within `hops` of a seed through chunks whose cosine to the query reaches the floor), and hand
scoring a Candidates object of arrays. Rerank scores are filled in later for a shortlist only.
"""

from __future__ import annotations

import numpy as np

from ..errors import FULL_RUN, CorruptIndexError
from ..index.snapshot import Snapshot
from ..index.store import Store
from ..index.vectors import rescore_pool
from ..lookup import find_sorted, unique_ids  # unique_ids, not np.unique: see there
from ..scoring.candidates import Candidates, PassCaps
from .lexical import bm25_leg
from .query_features import ISSUES, lexical_text


def cosines(vectors: np.ndarray, rows: np.ndarray, query_vec: np.ndarray) -> np.ndarray:
    """Cosine of each row's unit vector to the query, float32.

    An elementwise product summed along each row, not a BLAS matrix-vector product: a row's value
    then depends on that row alone, never on which other rows came along. So a pass with wider caps
    (the lab's cache) yields bit-identical similarities to a narrow one (a CLI query). Damaged vectors
    (infinities) give NaN without numpy's warning: callers refuse non-finite values in one line.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        return (np.asarray(vectors[rows], dtype=np.float32) * query_vec.astype(np.float32)).sum(axis=1, dtype=np.float32)


def _neighbourhood(snap: Snapshot, query_vec: np.ndarray, seeds: np.ndarray, caps: PassCaps) -> np.ndarray:
    """Rows (positions in the snapshot) reachable from the seed rows within the caps, seeds included."""
    g = snap.graph
    reached = np.zeros(len(g.ids), dtype=bool)
    reached[seeds] = True
    frontier = seeds
    for _ in range(caps.hops):
        if len(frontier) == 0:
            break
        _, nbr, _ = g.edges_of(frontier)
        rows = unique_ids(g.position(nbr))
        rows = rows[~reached[rows]]
        sims = cosines(snap.vectors, rows, query_vec)
        frontier = rows[sims >= caps.query_floor]
        reached[frontier] = True
    return np.flatnonzero(reached)


def induced_csr(snap: Snapshot, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The graph restricted to `rows` (sorted), neighbours as positions within `rows`."""
    g = snap.graph
    lens, nbr, weight = g.edges_of(rows)
    src_local = np.repeat(np.arange(len(rows)), lens)
    dst_rows = g.position(nbr)
    dst_local, inside = find_sorted(rows, dst_rows)
    src_local, dst_local, w = src_local[inside], dst_local[inside], weight[inside]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(np.bincount(src_local, minlength=len(rows)), out=indptr[1:])
    return indptr, dst_local.astype(np.int64), w


def _exact_dense(snap: Snapshot, rows: np.ndarray, query_vec: np.ndarray, n: int) -> np.ndarray:
    """The n chunk ids among `rows` most similar to the query, by exact cosine, ties by chunk id (a
    filtered search must not lose its matches to an ANN list full of other files; an ANN list is
    put in this order too, so the dense ranking never depends on the order the index found them in)."""
    sims = cosines(snap.vectors, rows, query_vec)
    top = np.lexsort((snap.ids[rows], -sims))[:n]
    return snap.ids[rows[top]]


def _dense_seeds(snap: Snapshot, query_vecs: np.ndarray, n: int, allowed: np.ndarray | None) -> list[np.ndarray]:
    """Per query vector, the n nearest chunk ids: the HNSW index, or exact search among `allowed`."""
    if n <= 0:
        return []
    if allowed is not None:
        return [_exact_dense(snap, allowed, v, n) for v in query_vecs]
    pool = rescore_pool(n)
    return [_exact_dense(snap, snap.positions(snap.vindex.search(v, pool, len(snap.ids))[0]), v, n) for v in query_vecs]


def retrieval_pass(
    query: str,
    query_vecs: np.ndarray,
    variants: list[str],
    snap: Snapshot,
    store: Store,
    caps: PassCaps,
    allowed: np.ndarray | None = None,
) -> Candidates:
    """`query_vecs` row 0 is the query's own vector; further rows are expansion variants'.
    `allowed`: sorted snapshot rows a filter (--tag, --path) keeps; None = every row."""
    dense_ids = _dense_seeds(snap, query_vecs, caps.dense_n, allowed)
    searched = lexical_text(query) if caps.query_features == ISSUES else query
    lex_all_ids, lex_all_scores, lexical_ceiling = bm25_leg(snap, store, searched, caps.bm25_k1, caps.bm25_b, caps.bm25_variant)
    if allowed is not None:
        keep = np.isin(lex_all_ids, snap.ids[allowed])
        lex_all_ids, lex_all_scores = lex_all_ids[keep], lex_all_scores[keep]
    lexical_ids = lex_all_ids[: caps.lexical_n]
    seed_ids = unique_ids(np.concatenate([*dense_ids, lexical_ids, np.empty(0, np.int64)]))
    seed_rows = snap.positions(seed_ids)
    rows = _neighbourhood(snap, query_vecs[0], seed_rows, caps) if caps.hops > 0 else seed_rows
    if allowed is not None:
        rows = rows[np.isin(rows, allowed)]
    nodes = snap.ids[rows]
    indptr, nbr, weight = induced_csr(snap, rows)
    qsim = cosines(snap.vectors, rows, query_vecs[0])
    if not np.isfinite(qsim).all():  # damaged vectors: never let NaN or infinity reach a score
        raise CorruptIndexError(f"index vectors in {snap.folder} hold non-finite values: {FULL_RUN}")
    lexical = np.zeros(len(rows))
    if len(lex_all_ids):
        pos = np.searchsorted(nodes, lex_all_ids)
        hit = (pos < len(nodes)) & (nodes[np.minimum(pos, len(nodes) - 1)] == lex_all_ids)
        lexical[pos[hit]] = lex_all_scores[hit]
    return Candidates(
        query=query,
        variants=variants,
        dense_ids=dense_ids,
        lexical_ids=lexical_ids,
        nodes=nodes,
        file_ids=snap.file_ids[rows],
        qsim=qsim,
        lexical=lexical,
        indptr=indptr,
        nbr=nbr,
        weight=weight,
        caps=caps,
        lexical_ceiling=lexical_ceiling,
    )
