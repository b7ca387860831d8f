"""Two granularities at equal candidates (issue 13): the chunk-size study found that whole-abstract
chunks (the same weights with a 512-token window) help SciFact and hurt the vault as a *replacement* for
200-token chunks. Here they are a second dense signal beside them: a candidate chunk's dense signal
becomes (1 - a) * chunk cosine + a * best cosine of the query to its file's 512-token-window chunks
(the chunk-size study's `w512` build of the same files; one vector for a file that fits the window).
The candidates are the shipped defaults' pass (dense 100 + BM25 100 seeds, graph off); only the dense
signal of the same candidates changes, scored with the shipped defaults.

    RAGX_CACHE_DIR=... python research/2026-12-01-file-window.py study dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-01-file-window.py study dendron-vault-test scifact-test cranfield-test musique-small-test  # once, after choosing on train
    RAGX_CACHE_DIR=... python research/2026-12-01-file-window.py compare a0.3 dendron-vault-test scifact-test cranfield-test musique-small-test
    RAGX_CACHE_DIR=... python research/2026-12-01-file-window.py pooled a0.3 dendron-vault-test scifact-test cranfield-test musique-small-test

Per-query results go to $RAGX_CACHE_DIR/research-prf/file-window-results.json.
"""

from __future__ import annotations

import sys

import numpy as np

from lab.studies import harness
from lab.studies.harness import dense_mixes, run_command, studied
from lab.studies.research_scripts import load_script

chunk_size = load_script("2026-12-01-chunk-size.py")

from lab.builds import build  # noqa: E402

GRID = (0.1, 0.2, 0.3, 0.5)  # fixed before the first run, as the centroid study's
RESULTS = harness.OUT / "file-window-results.json"


def window_cosines(coll: str, corpus, passes, qv) -> list[np.ndarray]:
    """Per pass, each candidate's best cosine to the query over its file's chunks in the w512 build
    (NaN for a file the build lacks)."""
    wide = build(corpus, "wide-chunk512", chunk_size.settings_of("w512"), harness.OUT / "chunk-builds" / coll)
    wide.searcher.refresh()
    snap = wide.searcher.snapshot
    vectors = np.asarray(snap.vectors[np.arange(len(snap.ids))], dtype=np.float64)
    # The two indexes number files independently: map the wide build's file ids to the base's by path.
    base_id = {path: fid for fid, path in corpus.searcher.store.file_paths().items()}
    wide_to_base = {fid: base_id.get(path, -1) for fid, path in wide.searcher.store.file_paths().items()}
    row_file = np.array([wide_to_base[int(f)] for f in np.asarray(snap.file_ids)], dtype=np.int64)
    known = row_file >= 0
    vectors, row_file = vectors[known], row_file[known]
    out = []
    for c in passes:
        best = np.full(max(base_id.values()) + 1, np.nan)
        best[row_file] = -np.inf
        np.maximum.at(best, row_file, vectors @ qv[c.qid])
        out.append(best[c.file_ids].astype(np.float32))
    return out


def study(specs: list[str]) -> None:
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        coll, corpus, passes, meta, qv, p = loaded
        wide = window_cosines(coll, corpus, passes, qv)
        missing = sum(int(np.isnan(w).sum()) for w in wide)
        if missing:
            raise SystemExit(f"{spec}: {missing} candidates have no file in the w512 build")
        dense_mixes(spec, loaded, base, per_variant, wide, GRID)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
