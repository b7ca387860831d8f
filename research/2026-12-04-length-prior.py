"""A chunk-length prior on the dense leg (issue 13): do short chunks win cosines they should not?

Bi-encoders are reported to favour short passages: a heading, a one-line list item or the tail of a
split abstract says little, so its vector sits near the centre of its topic and scores a fair cosine
against every query about it. BM25 corrects for length already (b); the dense leg does not. Here

    dense signal = cosine(query, chunk) + beta × log(words(chunk) / median words of the corpus's chunks)

words = white-space separated pieces of the chunk's indexed text (what the embedder read), known at indexing time, so an index
could keep the prior beside the vectors. A negative beta favours short chunks (in the grid for
symmetry). Everything else is the shipped defaults' scoring of the same cached pass (dense 100 +
BM25 100 seeds, graph off): equal candidates by construction. Grid fixed before the first run:
beta in (-0.02, -0.01, 0.01, 0.02, 0.04). Chosen on TRAIN (dendron-vault train, SciFact train) by the
mean gain, only if positive; then the four test splits once with the choice.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-length-prior.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-length-prior.py study <four test specs> --only KEY
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-length-prior.py compare KEY <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-length-prior.py pooled KEY <four test specs>

Per-query results go to $RAGX_CACHE_DIR/research-prf/length-prior-results.json.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness
from lab.studies.harness import run_command, studied, train_or_choice

GRID = (-0.02, -0.01, 0.01, 0.02, 0.04)
RESULTS = harness.OUT / "length-prior-results.json"


def key(beta: float) -> str:
    return f"beta{beta}"


def log_lengths(corpus, passes) -> list[np.ndarray]:
    """Per pass, each candidate chunk's log(words / the corpus's median words)."""
    ids, texts = corpus.searcher.store.chunk_texts()  # what was embedded: frontmatter header + text, ids sorted
    words = np.fromiter((len(t.split()) for t in texts), np.float64, len(texts))
    rel = np.log(np.maximum(words, 1.0) / np.median(words))
    print(f"words per chunk over {len(ids)} chunks: p10 {np.quantile(words, 0.1):.0f}, median {np.median(words):.0f}, "
          f"p90 {np.quantile(words, 0.9):.0f}", flush=True)
    return [rel[np.searchsorted(ids, c.nodes)] for c in passes]


def study(argv: list[str]) -> None:
    specs, only = train_or_choice(argv)
    grid = [b for b in GRID if only is None or key(b) == only]
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        _coll, corpus, passes, meta, _qv, p = loaded
        lengths = log_lengths(corpus, passes)
        for beta in grid:
            variant = [replace(c, qsim=(c.qsim + beta * r).astype(np.float32)) for c, r in zip(passes, lengths)]
            mean, per_variant[key(beta)] = harness.ndcg(variant, p, meta)
            print(f"{spec} {key(beta)} {mean:.4f} ({mean - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
