"""One more dense signal at equal candidates (issue 13): the cosine of the query to the chunk's whole
file, as the normalised mean of the file's chunk vectors (no new embedding). A candidate's dense signal
becomes (1 - a) * chunk cosine + a * file-centroid cosine; everything else is the shipped defaults'
scoring of the same cached pass (dense 100 + BM25 100 seeds, graph off), as in
the research harness (lab/studies/harness.py), whose pass caches and helpers this script reuses.

    RAGX_CACHE_DIR=... python research/2026-12-01-file-centroid.py study dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-01-file-centroid.py study dendron-vault-test scifact-test   # once, after choosing on train
    RAGX_CACHE_DIR=... python research/2026-12-01-file-centroid.py compare a0.2 dendron-vault-test scifact-test

Per-query results go to $RAGX_CACHE_DIR/research-prf/centroid-results.json.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness

GRID = (0.1, 0.2, 0.3, 0.5)
RESULTS = harness.OUT / "centroid-results.json"


def centroid_cosines(corpus, passes, qv) -> list[np.ndarray]:
    """Per pass, each candidate chunk's file-centroid cosine to the query."""
    corpus.searcher.refresh()
    snap = corpus.searcher.snapshot
    vectors = np.asarray(snap.vectors[np.arange(len(snap.ids))], dtype=np.float64)
    files, inverse = np.unique(np.asarray(snap.file_ids), return_inverse=True)
    sums = np.zeros((len(files), vectors.shape[1]))
    np.add.at(sums, inverse, vectors)
    centroids = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    order = np.argsort(snap.ids)
    out = []
    for c in passes:
        rows = order[np.searchsorted(np.asarray(snap.ids)[order], c.nodes)]
        out.append((centroids[inverse[rows]] @ qv[c.qid]).astype(np.float32))
    return out


def study(specs: list[str]) -> None:
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    for spec in specs:
        _coll, corpus, passes, meta, qv, p = harness.load(spec)
        base, per = harness.ndcg(passes, p, meta)
        results[spec] = {"base": per}
        print(f"{spec} default {base:.4f}", flush=True)
        cents = centroid_cosines(corpus, passes, qv)
        for a in GRID:
            variant = [replace(c, qsim=((1 - a) * c.qsim + a * f).astype(np.float32)) for c, f in zip(passes, cents)]
            mean, results[spec][f"a{a}"] = harness.ndcg(variant, p, meta)
            print(f"{spec} a{a} {mean:.4f} ({mean - base:+.4f})", flush=True)
    RESULTS.write_text(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "compare":
        harness.compare(sys.argv[2], sys.argv[3:], RESULTS)
    else:
        study(sys.argv[2:])
