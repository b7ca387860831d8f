"""An incremental run's graph work, local to the change: which kNN lists to redo, the graph rows that
change, and the communities of new chunks. Nothing here reads every kNN row or every vector of a
large index, so the cost follows the size of the change, not of the index (bench_scale.py).

Which lists change, exactly as a full rebuild would have them:
- new chunks: computed;
- chunks whose list named a deleted chunk (`losing`): computed again;
- old chunks whose list would take in a new chunk (`gaining`): a new chunk at least as similar as
  their weakest neighbour (or a list not yet full). Only old chunks within `min_sim` of a new chunk
  can gain, so only their lists are read.
While the index holds at most EXACT_MAX_CHUNKS chunks the lists and the gaining test compare with
every chunk (the repaired lists equal a full rebuild's); above it both ask the HNSW index: the gaining
test then checks the old chunks among each new chunk's REVERSE_CANDIDATES nearest. Full builds compare
exactly up to ~20k chunks (graph.EXACT_MAX_PAIRS); an incremental run takes the HNSW route from far
lower, where it was measured cheaper (below).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import CorruptIndexError
from ..lookup import find_sorted, ids_minus, isin_ids, union_ids
from .communities import NO_COMMUNITY
from .graph import BLOCK_ROWS, Adjacency, Graph, approximate_top_k_lists, pair_weights, top_k_lists, undirected
from .store import Store
from .verified import HINT

# Chunks above which an incremental run asks the HNSW index instead of comparing with every chunk. The
# exact route widens every stored float16 vector, whatever the change; the HNSW route reads the
# candidates' alone. Graph stage of a one-file edit, medians of 4 per route, routes interleaved on one
# index (scripts/bench/bench_repair_route.py, 2026-12-05, load 1-18 on 2 cores): 1k chunks 157 ms exact
# against 96 ms HNSW, 2k 233/215, 5k 312/230, 10k 425/207, 20k 741/335 (100k, earlier: 2.5-3.6 s against
# 0.07-0.21 s). No size measured was cheaper exactly, so the HNSW route starts at the smallest measured;
# after its edits every list at 5k, 10k and 20k still equalled the exact one (bench_scale `_recall` of
# every chunk: recall 1.0). At or below this the lists stay exactly a full rebuild's.
EXACT_MAX_CHUNKS = 1_000
ROUNDS = 3  # label-propagation rounds for new chunks whose neighbours are new too


def reverse_candidates(k: int) -> int:
    """How many of a new chunk's nearest chunks are tested for gaining it: four times k, since a
    chunk in a sparse region can take a new neighbour that has many closer ones."""
    return 4 * k + 1


VecOf = Callable[[np.ndarray], np.ndarray]


@dataclass
class Repair:
    knn_src: np.ndarray   # the recomputed kNN rows (to insert)
    knn_dst: np.ndarray
    knn_weight: np.ndarray
    redo: np.ndarray      # chunk ids whose kNN rows are replaced (recomputed or removed)
    rows: Adjacency       # the new graph rows of every live chunk whose neighbours changed


def exact_is_cheap(chunks: int) -> bool:
    return chunks <= EXACT_MAX_CHUNKS


def repair_knn(
    store: Store, removed: np.ndarray, new_ids: np.ndarray, new_vecs: np.ndarray, kept_old: np.ndarray,
    live: np.ndarray, vec_of: VecOf, all_vecs: np.ndarray | None, ann, k: int, min_sim: float,
) -> Repair:
    """`all_vecs` (rows follow `live`) when an exact comparison with every chunk is cheap, else None
    and `ann` (the HNSW index over `live`) finds the candidates.

    Stored vectors that hold infinities or NaN (damage that kept the file's identity, so its checksum
    was not read again) are refused in one line, without numpy's warnings: all of them on the exact
    route (which multiplies them all anyway), those the run reads on the HNSW route (a non-finite
    weight), before Leiden or the store sees one."""
    if all_vecs is not None and not np.isfinite(all_vecs).all():  # the exact route reads them all anyway
        raise CorruptIndexError(f"stored vectors hold non-finite values (damaged): {HINT}")
    with np.errstate(invalid="ignore", over="ignore"):
        repair = _repair(store, removed, new_ids, new_vecs, kept_old, live, vec_of, all_vecs, ann, k, min_sim)
    if not np.isfinite(repair.knn_weight).all():
        raise CorruptIndexError(f"stored vectors hold non-finite values (damaged): {HINT}")
    return repair


def _repair(
    store: Store, removed: np.ndarray, new_ids: np.ndarray, new_vecs: np.ndarray, kept_old: np.ndarray,
    live: np.ndarray, vec_of: VecOf, all_vecs: np.ndarray | None, ann, k: int, min_sim: float,
) -> Repair:
    losing = ids_minus(store.knn_sources_of(removed), removed)
    if all_vecs is not None:
        cand, best = _near_new_exact(new_vecs, kept_old, all_vecs[: len(kept_old)], min_sim)
    else:
        cand, best = _near_new_ann(new_ids, new_vecs, ann, vec_of, min(reverse_candidates(k), len(live)), min_sim)
    cand_src, _, cand_w = store.knn_rows_of(cand)
    gaining = _gaining(cand, best, cand_src, cand_w, k)
    recompute = ids_minus(union_ids(losing, gaining, new_ids), removed)
    if all_vecs is not None:
        rs, rd = top_k_lists(recompute, vec_of(recompute), live, all_vecs, k, min_sim)
    else:
        rs, rd = approximate_top_k_lists(recompute, vec_of(recompute), vec_of, len(live), k, min_sim, ann)
    rw = pair_weights(vec_of, rs, rd)
    good = (rw >= min_sim) | ~np.isfinite(rw)  # non-finite: kept for repair_knn to refuse
    rs, rd, rw = rs[good], rd[good], rw[good]
    redo = union_ids(recompute, removed)
    return Repair(rs, rd, rw, redo, _changed_rows(store, redo, removed, live, rs, rd, rw))


def _near_new_exact(new_vecs, kept_old, kept_vecs, min_sim) -> tuple[np.ndarray, np.ndarray]:
    """Old chunks within min_sim of some new chunk, and their best cosine to one (every pair compared)."""
    best = np.full(len(kept_old), -np.inf, dtype=np.float32)
    if len(new_vecs) and len(kept_old):
        for start in range(0, len(new_vecs), BLOCK_ROWS):
            best = np.maximum(best, (new_vecs[start : start + BLOCK_ROWS] @ kept_vecs.T).max(axis=0))
    near = best >= min_sim
    return kept_old[near], best[near]


def _near_new_ann(new_ids, new_vecs, ann, vec_of: VecOf, want: int, min_sim: float) -> tuple[np.ndarray, np.ndarray]:
    """The same from each new chunk's `want` nearest chunks in the HNSW index, re-scored exactly."""
    if not len(new_ids):
        return np.empty(0, np.int64), np.empty(0, np.float32)
    cand = ann.knn_batch(new_vecs, want)
    owner = np.repeat(np.arange(len(new_ids)), cand.shape[1])
    cand = cand.ravel()
    old = ~isin_ids(cand, new_ids)
    cand, owner = cand[old], owner[old]
    sims = np.einsum("ij,ij->i", new_vecs[owner], vec_of(cand)).astype(np.float32)
    near = sims >= min_sim
    ids, inverse = np.unique(cand[near], return_inverse=True)
    best = np.full(len(ids), -np.inf, dtype=np.float32)
    np.maximum.at(best, inverse, sims[near])
    return ids, best


def _gaining(cand: np.ndarray, best: np.ndarray, src: np.ndarray, weight: np.ndarray, k: int) -> np.ndarray:
    """Candidates whose list is not full or whose weakest neighbour the best new chunk matches."""
    if not len(cand):
        return np.empty(0, np.int64)
    pos = np.searchsorted(cand, src)
    count = np.bincount(pos, minlength=len(cand))
    weakest = np.full(len(cand), np.inf)
    np.minimum.at(weakest, pos, weight)
    return cand[(count < k) | (best >= weakest - 1e-6)]


def _changed_rows(store: Store, redo, removed, live, rs, rd, rw) -> Adjacency:
    """New graph rows of every live chunk an edge was added to or taken from. A chunk's undirected
    edges are the kNN rows naming it on either side, so reading the rows that touch those chunks,
    dropping the replaced ones and adding the recomputed ones gives their complete new rows."""
    _, old_dst, _ = store.knn_rows_of(redo)
    touched = union_ids(redo, old_dst, rd)
    ts, td, tw = store.knn_rows_touching(touched)
    stay = ~(isin_ids(ts, redo) | isin_ids(td, removed))
    a, b, w = undirected(np.concatenate([ts[stay], rs]), np.concatenate([td[stay], rd]), np.concatenate([tw[stay], rw]))
    return Adjacency.of_rows(touched[find_sorted(live, touched)[1]], a, b, w)


def assign_communities(graph: Graph, targets: np.ndarray, community_of: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Communities for `targets` (sorted chunk ids: new chunks, and old ones without a community) by
    weighted vote of their neighbours' communities; every other chunk keeps its own (`community_of`).
    A few rounds, so a new chunk whose neighbours are all new joins the community they join; one no
    vote reaches stays NO_COMMUNITY until Leiden runs over the whole graph again."""
    out = np.full(len(targets), NO_COMMUNITY, dtype=np.int64)
    if not len(targets):
        return out
    lens, nbr, weight = graph.edges_of(graph.position(targets))
    owner = np.repeat(np.arange(len(targets)), lens)
    others = ids_minus(nbr, targets)
    known = community_of(others)
    ids = np.concatenate([others, targets])
    order = np.argsort(ids, kind="stable")
    where = order[np.searchsorted(ids[order], nbr)]  # each neighbour's slot in concatenate([known, out])
    for _ in range(ROUNDS):
        vote = np.concatenate([known, out])[where]
        ok = vote >= 0
        if not ok.any():
            break
        pairs, inverse = np.unique(np.stack([owner[ok], vote[ok]], axis=1), axis=0, return_inverse=True)
        total = np.bincount(inverse.ravel(), weights=weight[ok])
        best = np.lexsort((pairs[:, 1], -total, pairs[:, 0]))  # per target: heaviest vote, then smaller number
        first = best[np.r_[True, pairs[best[1:], 0] != pairs[best[:-1], 0]]]
        out[pairs[first, 0]] = pairs[first, 1]
    return out
