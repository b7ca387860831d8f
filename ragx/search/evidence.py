"""The "nothing relevant" rule: an absolute test of a query's evidence before any per-query rescaling.

Scores shown to users are min-max rescaled per query, so by themselves they never say "no match".
This test looks at two absolute signals of the retrieval pass instead:

* dense evidence   -- the best cosine between the query and any chunk (the embedder's own scale);
* lexical evidence -- the best BM25 score divided by the number of query terms BM25 looked for, so
  that long queries do not pass on the sum of many weak, common-word matches.

A query has a match when EITHER signal reaches its threshold (`Params.min_dense_evidence`,
`Params.min_lexical_evidence`; 0 = the test is off). The thresholds are calibrated on train splits
(scripts/bench_no_match.py), and `ragx query` exits 1 with an empty result (the JSON's `evidence`
says why) when both fall short.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..scoring.candidates import Candidates
from ..scoring.params import Params
from .lexical import query_words


# How the reason of a query without evidence begins: the CLI tells it from other empty answers by it.
NO_EVIDENCE = "no relevant evidence"


@dataclass(frozen=True)
class Verdict:
    match: bool
    dense: float             # best cosine to the query among the pass's chunks (0 when none)
    lexical: float           # best BM25 score per query term (0 when nothing matched)
    min_dense: float
    min_lexical: float

    def describe(self) -> dict:
        out: dict[str, object] = {
            "match": self.match,
            "dense": round(self.dense, 6),
            "lexical": round(self.lexical, 6),
            "min_dense": self.min_dense,
            "min_lexical": self.min_lexical,
        }
        if not self.match:
            out["reason"] = (
                f"{NO_EVIDENCE}: best cosine {self.dense:.3f} < {self.min_dense:.3f} and "
                f"best BM25 per query term {self.lexical:.3f} < {self.min_lexical:.3f}"
            )
        return out


def query_terms(query: str) -> int:
    """How many terms the BM25 leg searched for (its OR-ed words)."""
    return len(query_words(query))


def signals(c: Candidates) -> tuple[float, float]:
    """(dense, lexical) evidence of a pass: see the module docstring."""
    dense = float(np.max(c.qsim)) if len(c.qsim) else 0.0
    best_bm25 = float(np.max(c.lexical)) if len(c.lexical) else 0.0
    terms = query_terms(c.query)
    lexical = best_bm25 / terms if terms and best_bm25 > 0 else 0.0
    return max(dense, 0.0), lexical


def decide(dense: float, lexical: float, min_dense: float, min_lexical: float) -> bool:
    """Whether the evidence is enough: either signal at its threshold. Vectorises over arrays."""
    return np.logical_or(np.greater_equal(dense, min_dense), np.greater_equal(lexical, min_lexical))


def judge(c: Candidates, p: Params) -> Verdict:
    dense, lexical = signals(c)
    off = p.min_dense_evidence <= 0 and p.min_lexical_evidence <= 0
    match = off or bool(decide(dense, lexical, p.min_dense_evidence, p.min_lexical_evidence))
    return Verdict(match, dense, lexical, p.min_dense_evidence, p.min_lexical_evidence)
