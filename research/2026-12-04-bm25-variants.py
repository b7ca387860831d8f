"""BM25's variant in the fused ranking (issue 13, item 4): does another formula than FTS5's help?

ragx's BM25 postings score FTS5's bm25() by default; `search.bm25_variant` now also takes Lucene's,
ATIRE's, BM25L and BM25+ (ragx/scoring/bm25.py, checked against bm25s in tests/test_bm25_variants.py).
Each variant gets its own retrieval pass (its BM25 picks its own 100 seeds: dense 100 + BM25 100,
graph off, the shipped defaults' caps), scored with the shipped defaults but for the variant: the
candidate budget is the same per leg. Chosen on TRAIN (dendron-vault train, SciFact train) by the mean
gain, only if positive; then the four test splits once with the choice. No other knob is re-tuned
(the defaults' k1 1.2 and b 0.75 hold for every variant).

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-bm25-variants.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-bm25-variants.py study <four test specs> --only KEY
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-bm25-variants.py compare KEY <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-bm25-variants.py pooled KEY <four test specs>

Pass caches go to $RAGX_CACHE_DIR/research-prf/<spec>-bm25-<variant>/, per-query results to
bm25-variants-results.json beside them.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from lab.builds import prepare
from lab.studies import harness
from lab.studies.harness import run_command, studied, train_or_choice
from ragx.scoring.bm25 import DEFAULT_VARIANT, VARIANTS

RESULTS = harness.OUT / "bm25-variants-results.json"
OTHERS = tuple(v for v in VARIANTS if v != DEFAULT_VARIANT)


def study(argv: list[str]) -> None:
    specs, only = train_or_choice(argv)
    grid = [v for v in OTHERS if only is None or v == only]
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        coll, _corpus, _passes, meta, _qv, p = loaded
        corpus, queries = prepare({"data_dir": str(harness.DATA / coll), "cache": None}, spec.rsplit("-", 1)[1])
        for variant in grid:
            caps = replace(harness.CAPS, bm25_variant=variant)
            passes, variant_meta = harness.cached_passes(corpus, queries, harness.OUT / f"{spec}-bm25-{variant}", caps)
            assert variant_meta["labels"] == meta["labels"]
            mean, per_variant[variant] = harness.ndcg(passes, p.replace(bm25_variant=variant), variant_meta)
            print(f"{spec} {variant} {mean:.4f} ({mean - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
