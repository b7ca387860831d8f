"""Centred embedding space (issue 13): cosines after removing what every chunk vector shares.

Sentence-embedding spaces are anisotropic: every vector leans along a few common directions, so raw
cosines carry a component that says "this is text of this collection" more than "this answers the
query". Post-processing by removing the mean vector, and then the top principal directions of the
centred vectors ("all-but-the-top"), is a known cheap correction. Here the dense signal becomes

    cosine(P(q - gamma·mu), P(v - gamma·mu))     mu = the mean of the collection's chunk vectors,
                                                 P = projection off the top d principal directions

computed from the stored vectors, no query needed, so an index could keep mu and P. Everything else is
the shipped defaults' scoring (anchors included; the anchors' own cosines are not re-centred) of the
same cached pass (dense 100 + BM25 100 seeds, graph off): equal candidates by construction. Grid fixed
before the first run: (gamma, d) in (0.5, 0), (1, 0), (1, 1), (1, 3). Chosen on TRAIN (dendron-vault
train, SciFact train) by the mean gain, only if positive; then the four test splits once.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-centred-vectors.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-centred-vectors.py study <four test specs> --only KEY
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-centred-vectors.py compare KEY <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-centred-vectors.py pooled KEY <four test specs>

Per-query results go to $RAGX_CACHE_DIR/research-prf/centred-results.json.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness
from lab.studies.harness import run_command, studied, train_or_choice

GRID = ((0.5, 0), (1.0, 0), (1.0, 1), (1.0, 3))
RESULTS = harness.OUT / "centred-results.json"


def key(gamma: float, d: int) -> str:
    return f"g{gamma}-d{d}"


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def transform(vectors: np.ndarray, gamma: float, d: int):
    """The map x -> unit(P(x - gamma·mu)) fitted on the collection's vectors."""
    mu = vectors.mean(axis=0)
    top = np.empty((0, vectors.shape[1]))
    if d:
        _u, _s, vt = np.linalg.svd(vectors - mu, full_matrices=False)
        top = vt[:d]

    def apply(x: np.ndarray) -> np.ndarray:
        y = x - gamma * mu
        return unit(y - (y @ top.T) @ top)

    return apply


def study(argv: list[str]) -> None:
    specs, only = train_or_choice(argv)
    grid = [g for g in GRID if only is None or key(*g) == only]
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        _coll, corpus, passes, meta, qv, p = loaded
        corpus.searcher.refresh()
        snap = corpus.searcher.snapshot
        ids = np.asarray(snap.ids)
        vectors = np.asarray(snap.vectors[np.arange(len(ids))], dtype=np.float64)
        order = np.argsort(ids)
        rows = [order[np.searchsorted(ids[order], c.nodes)] for c in passes]
        for gamma, d in grid:
            f = transform(vectors, gamma, d)
            moved = f(vectors)
            variant = [replace(c, qsim=(moved[r] @ f(np.asarray(qv[c.qid], dtype=np.float64))).astype(np.float32))
                       for c, r in zip(passes, rows)]
            mean, per_variant[key(gamma, d)] = harness.ndcg(variant, p, meta)
            print(f"{spec} {key(gamma, d)} {mean:.4f} ({mean - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
