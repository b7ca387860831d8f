"""lab/studies/signals.py fuses with the product's own code (scoring.fuse.rrf, scoring.score.combine);
its figures are the ones of the hand-written fusion it replaced, bit for bit (the earlier code is kept
here as the reference)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from lab.studies import signals
from ragx.scoring.candidates import Candidates, PassCaps
from ragx.scoring.score import minmax


def _reference_rrf(c: Candidates, k: float = 60.0) -> np.ndarray:
    """The study's earlier RRF: ranks over every node (BM25's over the nodes it matched), w = 1."""
    return 1.0 / (k + signals.dense_rank(c)) + 1.0 / (k + signals.lexical_rank(c))


def _reference_linear(c: Candidates, w_dense: float, w_lex: float) -> np.ndarray:
    t = w_dense + w_lex
    return (w_dense * minmax(c.qsim) + w_lex * minmax(c.lexical)) / (t if t > 0 else 1.0)


def _pass(rng: np.random.Generator, n: int) -> Candidates:
    nodes = np.sort(rng.choice(10 * n, n, replace=False)).astype(np.int64)
    qsim = rng.uniform(-0.2, 0.9, n).astype(np.float32)
    qsim[rng.integers(0, n, n // 5)] = qsim[0]  # ties keep their order by position
    lexical = np.where(rng.random(n) < 0.4, rng.gamma(2.0, 3.0, n), 0.0)
    return Candidates("q", ["q"], [nodes[np.argsort(-qsim)][:10]], nodes[np.argsort(-lexical)][:5], nodes,
                      rng.integers(0, 9, n).astype(np.int64), qsim, lexical, np.zeros(n + 1, np.int64),
                      np.empty(0, np.int64), np.empty(0), PassCaps(10, 5, 0, 0.2))


@pytest.mark.parametrize("seed", range(20))
def test_signals_fuse_as_before_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    c = _pass(rng, int(rng.integers(1, 300)))
    for k in (60.0, 1.0):
        assert np.array_equal(signals.rrf(c, k), _reference_rrf(c, k))
    for w in ((0.4976581150386485, 0.36041733346022464), (0.7, 0.3), (1.0, 0.0)):
        assert np.array_equal(signals.linear(c, *w), _reference_linear(c, *w))
