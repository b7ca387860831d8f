"""Fusion weights from the query's absolute evidence (issue 13, item 2): one more query-adaptive scheme.

The shipped fusion mixes the two legs' min-max'd signals with one lexical:dense ratio for every query.
The earlier adaptive scheme (research/2026-11-30-ranking-study.md) scaled each leg by how *decisive*
its own ranking was, a relative quantity, and lost slightly everywhere. The "nothing relevant" rule
has since given two absolute, corpus-calibrated measures of how well each leg matched the query at all:

    share s = best BM25 / the query's BM25 ceiling (Σ idf · (k1 + 1)): how much of what the query's
              words could score the best chunk holds; a paraphrase lands low, a keyword query high;
    dense d = the best cosine of any chunk to the query, on the embedder's own scale.

Here the per-query ratio of the lexical to the dense weight follows them:

    r_q = r_0 · (s / m_s) ** alpha · (m_d / d) ** beta

r_0 = the defaults' lexical_weight / dense_weight; m_s, m_d = the medians of s and d over the TRAIN
queries (dendron-vault train and SciFact train pooled), so a median query keeps the shipped weights.
The sum of the two weights is kept; a query with no BM25 match (s = 0) has an all-zero lexical signal
either way. Everything else is the shipped defaults' scoring of the same cached pass (dense 100 +
BM25 100 seeds, graph off): equal candidates by construction.

Grid fixed before running: alpha in (0, 0.5, 1, 2) x beta in (0, 1, 2, 4) (15 variants besides the
defaults). Chosen on TRAIN (dendron-vault train, SciFact train) by the mean gain, only if positive; then
the four test splits once with that choice.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-evidence-weighted-fusion.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-evidence-weighted-fusion.py study <four test specs> --only KEY
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-evidence-weighted-fusion.py compare KEY <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-evidence-weighted-fusion.py pooled KEY <four test specs>

Per-query results go to $RAGX_CACHE_DIR/research-prf/evidence-fusion-results.json; the train medians to
evidence-fusion-medians.json (written by the train run, read by the test run).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness
from lab.studies.harness import run_command, studied, train_or_choice
from ragx.search.evidence import signals

ALPHAS = (0.0, 0.5, 1.0, 2.0)
BETAS = (0.0, 1.0, 2.0, 4.0)
TRAIN = ("dendron-vault-train", "scifact-train")
RESULTS = harness.OUT / "evidence-fusion-results.json"
MEDIANS = harness.OUT / "evidence-fusion-medians.json"


def key(alpha: float, beta: float) -> str:
    return f"s{alpha}-d{beta}"


def evidence(passes) -> tuple[np.ndarray, np.ndarray]:
    """(share, dense evidence) per pass."""
    rows = np.array([signals(c) for c in passes], dtype=np.float64).reshape(-1, 3)
    return rows[:, 2], rows[:, 0]


def weights(p, share: np.ndarray, dense: np.ndarray, alpha: float, beta: float, m_s: float, m_d: float) -> tuple[np.ndarray, np.ndarray]:
    """Per query (dense weight, lexical weight), their sum the defaults'."""
    r0 = p.lexical_weight / p.dense_weight
    ratio = r0 * (np.maximum(share, 1e-9) / m_s) ** alpha * (m_d / np.maximum(dense, 1e-9)) ** beta
    total = p.dense_weight + p.lexical_weight
    return total / (1 + ratio), total * ratio / (1 + ratio)


def train_medians() -> tuple[float, float]:
    if MEDIANS.exists():
        m = json.loads(MEDIANS.read_text())
        return m["share"], m["dense"]
    shares, denses = [], []
    for spec in TRAIN:
        _coll, _corpus, passes, _meta, _qv, _p = harness.load(spec)
        s, d = evidence(passes)
        shares.append(s)
        denses.append(d)
    m_s, m_d = float(np.median(np.concatenate(shares))), float(np.median(np.concatenate(denses)))
    MEDIANS.write_text(json.dumps({"share": m_s, "dense": m_d, "from": list(TRAIN)}))
    return m_s, m_d


def study(argv: list[str]) -> None:
    specs, only = train_or_choice(argv)
    m_s, m_d = train_medians()
    print(f"train medians: share {m_s:.4f}, dense {m_d:.4f}")
    grid = [(a, b) for a in ALPHAS for b in BETAS if (a, b) != (0.0, 0.0)]
    if only is not None:
        grid = [g for g in grid if key(*g) == only]
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        _coll, _corpus, passes, meta, _qv, p = loaded
        share, dense = evidence(passes)
        print(f"{spec} share quartiles {np.percentile(share, [25, 50, 75]).round(3)}, dense {np.percentile(dense, [25, 50, 75]).round(3)}")
        for alpha, beta in grid:
            dw, lw = weights(p, share, dense, alpha, beta, m_s, m_d)
            params = [replace(p, dense_weight=float(g), lexical_weight=float(d)) for g, d in zip(dw, lw)]
            mean, per_variant[key(alpha, beta)] = harness.ndcg(passes, params, meta)
            print(f"{spec} {key(alpha, beta)} {mean:.4f} ({mean - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
