"""Query-adaptive fusion weights: pure numpy, no dependency beyond ragx's own arrays.

A fixed lexical weight cannot serve both a keyword-heavy scientific claim and a paraphrased question
about notes. Here each leg's weight is scaled, per query, by how decisive that leg's own ranking is:
the relative gap between its best score and its `depth`-th best score among the candidates. A leg
whose scores are flat (no chunk clearly stands out) gets less say; one with a clear head gets more.

    conf_leg  = (s_1 - s_depth) / (|s_1| + eps)      over the leg's scores on the candidates
    w_leg     = base_leg * conf_leg ** tau           (tau = 0: fixed weights)

Not wired into the pipeline: `adaptive_weights` returns the (dense, lexical) weights that
`score._pre` would use in place of (gamma, delta); see the study in research/.
"""

from __future__ import annotations

import numpy as np

EPS = 1e-9


def decisiveness(values: np.ndarray, depth: int) -> float:
    """Relative drop from the best to the depth-th best value (0 when fewer than 2 values)."""
    v = values[values > 0] if np.any(values > 0) else values
    if len(v) < 2:
        return 0.0
    top = np.partition(-v, min(depth, len(v)) - 1)[: min(depth, len(v))]
    top = -np.sort(top)
    return float((top[0] - top[-1]) / (abs(top[0]) + EPS))


def adaptive_weights(qsim: np.ndarray, lexical: np.ndarray, gamma: float, delta: float, tau: float, depth: int = 10) -> tuple[float, float]:
    """(dense weight, lexical weight) for one query's candidates."""
    if tau == 0:
        return gamma, delta
    cd = decisiveness(np.asarray(qsim, dtype=np.float64), depth)
    cl = decisiveness(np.asarray(lexical, dtype=np.float64), depth)
    g, d = gamma * (cd + EPS) ** tau, delta * (cl + EPS) ** tau
    total = g + d
    if not total > 0:
        return gamma, delta
    # keep the sum of the two weights, so the other weights (heat, rerank) keep their share
    return (gamma + delta) * g / total, (gamma + delta) * d / total
