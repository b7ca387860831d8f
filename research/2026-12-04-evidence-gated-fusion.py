"""Fusion gated by the "nothing relevant" rule's own verdict per leg (issue 13, item 2).

Found by using the product: in a folder where many chunks are about equally close in meaning to a
query (a file of random words beside a few notes), the one note that holds the query's rare word
ranked last of 101. The rule's verdict rested on BM25 alone (the best cosine, 0.317, was under its
threshold 0.371), yet the min-max fusion stretched the dense leg's near-equal cosines over [0, 1] and
let them outvote the only lexical match. When a leg has no evidence of its own, its ordering is noise.

Here, per query, a leg that fails its part of the rule while the other leg passes has its weight
multiplied by g:

    dense fails   = best cosine < min_dense_evidence
    lexical fails = best BM25 per term < min_lexical_evidence and share < min_lexical_share

(the shipped thresholds, calibrated on train). A query where both pass, or both fail, keeps the
shipped weights. Everything else is the shipped defaults' scoring of the same cached pass (dense 100 +
BM25 100 seeds, graph off): equal candidates by construction.

Grid fixed before running: g in (0, 0.25, 0.5). Chosen on TRAIN (dendron-vault train, SciFact train) by
the mean gain, only if positive; then the four test splits once with that choice.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-evidence-gated-fusion.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-evidence-gated-fusion.py study <four test specs> --only KEY
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-evidence-gated-fusion.py compare KEY <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-evidence-gated-fusion.py pooled KEY <four test specs>

Per-query results go to $RAGX_CACHE_DIR/research-prf/evidence-gated-results.json.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from lab.studies import harness
from lab.studies.harness import run_command, studied, train_or_choice
from ragx.search.evidence import signals

GRID = (0.0, 0.25, 0.5)
RESULTS = harness.OUT / "evidence-gated-results.json"


def key(g: float) -> str:
    return f"g{g}"


def gated(c, p, g: float):
    """The defaults' Params for this pass, the weight of a leg without evidence (the other having some) times g."""
    dense, lexical, share = signals(c)
    dense_ok = dense >= p.min_dense_evidence
    lexical_ok = lexical >= p.min_lexical_evidence or share >= p.min_lexical_share
    if dense_ok == lexical_ok:
        return p
    return replace(p, dense_weight=p.dense_weight * g) if lexical_ok else replace(p, lexical_weight=p.lexical_weight * g)


def study(argv: list[str]) -> None:
    specs, only = train_or_choice(argv)
    grid = [g for g in GRID if only is None or key(g) == only]
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        _coll, _corpus, passes, meta, _qv, p = loaded
        affected = sum(1 for c in passes if gated(c, p, 0.5) is not p)
        print(f"{spec}: {affected} of {len(passes)} queries have one leg without evidence", flush=True)
        for g in grid:
            mean, per_variant[key(g)] = harness.ndcg(passes, [gated(c, p, g) for c in passes], meta)
            print(f"{spec} {key(g)} {mean:.4f} ({mean - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
