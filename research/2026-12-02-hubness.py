"""Hub chunks (issue 13): a chunk close to many other chunks is close to many queries too.

In a vector space some points are the nearest neighbours of a great many others ("hubs"); they turn
up in the results of queries they do not answer. On dendron-vault, release-note chunks that list a
dozen features in a line each sit in the top three of training questions about any one of them. The
cross-domain similarity local scaling (CSLS) correction of word-translation retrieval subtracts each
target's mean similarity to its own nearest neighbours; the query's own term is the same for all its
candidates, so a ranking only needs

    dense signal = cosine(query, chunk) − beta × r(chunk),   r = mean cosine of the chunk to its k = 10
                                                              nearest other chunks of the corpus

(beta = 0.5 is CSLS proper, up to a factor of 2). r is exact (every pair of the collection's stored
vectors, in blocks), needs no query, and an index could keep it beside the vectors. Everything else is
the shipped defaults' scoring of the same cached pass (dense 100 + BM25 100 seeds, graph off): equal
candidates by construction. Grid fixed before the first run: beta in (0.25, 0.5, 1.0). Chosen on TRAIN
(dendron-vault train, SciFact train) by the mean gain, only if positive; then the four test splits once.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-hubness.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-hubness.py study <four test specs>   # once, after choosing
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-hubness.py compare beta0.25 <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-hubness.py pooled beta0.25 <four test specs>

Per-query results go to $RAGX_CACHE_DIR/research-prf/hubness-results.json.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness
from lab.studies.harness import run_command, studied

GRID = (0.25, 0.5, 1.0)
K = 10
BLOCK = 1024
RESULTS = harness.OUT / "hubness-results.json"


def neighbourhood_means(vectors: np.ndarray, k: int = K) -> np.ndarray:
    """Each row's mean cosine to its k most similar other rows (rows are unit vectors)."""
    v = np.ascontiguousarray(vectors, dtype=np.float32)
    out = np.empty(len(v))
    for start in range(0, len(v), BLOCK):
        sims = v[start:start + BLOCK] @ v.T
        sims[np.arange(len(sims)), np.arange(start, start + len(sims))] = -np.inf  # not itself
        top = np.partition(sims, -k, axis=1)[:, -k:]
        out[start:start + len(sims)] = top.mean(axis=1)
    return out


def hub_scores(corpus, passes) -> list[np.ndarray]:
    """Per pass, each candidate chunk's r."""
    corpus.searcher.refresh()
    snap = corpus.searcher.snapshot
    ids = np.asarray(snap.ids)
    r = neighbourhood_means(np.asarray(snap.vectors[np.arange(len(ids))]))
    print(f"r over {len(ids)} chunks: mean {r.mean():.3f}, p10 {np.quantile(r, 0.1):.3f}, p90 {np.quantile(r, 0.9):.3f}", flush=True)
    order = np.argsort(ids)
    return [r[order[np.searchsorted(ids[order], c.nodes)]] for c in passes]


def study(specs: list[str]) -> None:
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        _coll, corpus, passes, meta, _qv, p = loaded
        hubs = hub_scores(corpus, passes)
        for beta in GRID:
            variant = [replace(c, qsim=(c.qsim - beta * r).astype(np.float32)) for c, r in zip(passes, hubs)]
            mean, per_variant[f"beta{beta}"] = harness.ndcg(variant, p, meta)
            print(f"{spec} beta{beta} {mean:.4f} ({mean - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
