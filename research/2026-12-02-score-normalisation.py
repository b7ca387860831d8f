"""How the two legs' scores are normalised before the linear fusion (issue 13).

ragx fuses dense and BM25 linearly after a per-query min-max over the candidates (ragx/scoring/score.py
`minmax`). Min-max makes the weakest candidate of each leg 0 whatever its absolute score, so the
spread of a leg depends on which candidates the other leg brought in. Studies of fusion functions for
hybrid retrieval report that a theoretical lower bound (cosine -1 or 0, BM25 0) instead of the observed
minimum, or z-scores, can rank better than min-max. Each variant re-scores the shipped defaults'
cached pass (dense 100 + BM25 100 seeds, graph off), so the candidates are equal by construction:

    mm     (x - min) / (max - min) over the candidates (the defaults)
    tmm    dense (x + 1) / (max + 1); BM25 x / max           (theoretical minima: cosine -1, BM25 0)
    tmm0   dense max(x, 0) / max; BM25 x / max               (cosine floored at 0)
    z      (x - mean) / std over the candidates (a constant signal: 0)

The normalisation applies to what the defaults' dense_signal / lexical_signal return (anchor evidence
mixed in), the heat signal keeps min-max (its weight is ~0.008, the graph is off). Because a
normalisation changes the legs' effective weights, each is paired with a lexical share
s = lexical_weight / (dense_weight + lexical_weight) from a grid, the sum of the two weights kept.

Grid fixed before running: norm in {mm, tmm, tmm0, z} x s in {0.25, 0.33, 0.42 (the defaults'), 0.5,
0.6}. Chosen on TRAIN by the mean gain over dendron-vault train and SciFact train (mm at the other
shares is in the grid, so a norm must beat a re-tuned share, not just the defaults); the four test sets
run once with the choice.

    RAGX_CACHE_DIR=... python research/2026-12-02-score-normalisation.py study dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-02-score-normalisation.py study --only KEY dendron-vault-test scifact-test cranfield-test musique-small-test
    RAGX_CACHE_DIR=... python research/2026-12-02-score-normalisation.py compare KEY <specs>
    RAGX_CACHE_DIR=... python research/2026-12-02-score-normalisation.py pooled KEY <specs>

Per-query results go to $RAGX_CACHE_DIR/research-prf/score-normalisation-results.json.
"""

from __future__ import annotations

import sys
from typing import Callable

import numpy as np

import ragx.scoring.score as scoring
from lab.studies import harness
from lab.studies.harness import run_command, studied

RESULTS = harness.OUT / "score-normalisation-results.json"
SHARES = (0.25, 0.33, None, 0.5, 0.6)  # None: the defaults' own weights (share 0.4200)


def _top_scaled(x: np.ndarray, floor: float) -> np.ndarray:
    """(x - floor) / (max - floor): a fixed lower bound instead of the observed one."""
    x = np.maximum(x.astype(np.float64), floor)
    top = float(np.max(x)) if len(x) else floor
    return (x - floor) / (top - floor) if top > floor else np.zeros(len(x))


def _z(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    sd = float(np.std(x)) if len(x) else 0.0
    return (x - x.mean()) / sd if sd > 0 else np.zeros(len(x))


NORMS: dict[str, tuple[Callable, Callable]] = {  # (dense, lexical)
    "mm": (scoring.minmax, scoring.minmax),
    "tmm": (lambda x: _top_scaled(x, -1.0), lambda x: _top_scaled(x, 0.0)),
    "tmm0": (lambda x: _top_scaled(x, 0.0), lambda x: _top_scaled(x, 0.0)),
    "z": (_z, _z),
}


def _signals_with(norm: str):
    dense_norm, lexical_norm = NORMS[norm]

    def signals(c, p, trace, cand):
        return (scoring.minmax(trace.heat[cand]), dense_norm(scoring.dense_signal(c, p, cand)),
                lexical_norm(scoring.lexical_signal(c, p, cand)))

    return signals


def _with_share(p, share: float | None):
    if share is None:
        return p
    total = p.dense_weight + p.lexical_weight
    return p.replace(dense_weight=total * (1 - share), lexical_weight=total * share)


def study(argv: list[str]) -> None:
    only = None
    if argv[0] == "--only":
        only, argv = argv[1], argv[2:]
    default_signals = scoring._signals
    try:
        for spec, (_coll, _corpus, passes, meta, _qv, p), base, results in studied(argv, RESULTS):
            for norm in NORMS:
                scoring._signals = _signals_with(norm)
                for share in SHARES:
                    key = f"{norm}-s{0.42 if share is None else share}"
                    if only is not None and key != only:
                        continue
                    mean, results[key] = harness.ndcg(passes, _with_share(p, share), meta)
                    print(f"{spec} {key} {mean:.4f} ({mean - base:+.4f})", flush=True)
            scoring._signals = default_signals  # `studied` scores the next spec's base with the defaults' own
    finally:
        scoring._signals = default_signals


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
