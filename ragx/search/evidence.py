"""The "nothing relevant" rule: an absolute test of a query's evidence before any per-query rescaling.

Scores shown to users are min-max rescaled per query, so by themselves they never say "no match".
This test looks at three absolute signals of the retrieval pass instead:

* dense evidence   -- the best cosine between the query and any chunk (the embedder's own scale);
* lexical evidence -- the best BM25 score divided by the number of query terms BM25 looked for, so
  that long queries do not pass on the sum of many weak, common-word matches (none at all, nor a share,
  for a query of function words only: BM25 still searches "what is it" for its words, but they name no
  topic, and where most chunks hold them their idf is near 0 and the best chunk scores 90% of a
  ceiling of almost nothing);
* lexical share    -- the best BM25 score as a share of the most any chunk could score on the query's
  terms (each term's idf times (k1 + 1); a word the corpus lacks at its highest idf). Per-term
  division charges a long question for its common words; the share charges each word by what it
  would be worth, and a question whose rare words are absent from the corpus stays far below it.

A query has a match when ANY signal reaches its threshold (`Params.min_dense_evidence`,
`min_lexical_evidence`, `min_lexical_share`). A threshold of 0 passes every query, so any one at 0
turns the test off; `min_lexical_share = 1` turns off that signal alone (a share reaches 1 only in
the limit, or at bm25_k1 = 0). The thresholds are calibrated on train splits (scripts/bench/bench_no_match.py), and
`ragx query` exits 1 with an empty result (the JSON's `evidence` says why) when all three fall short.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schemas import NO_EVIDENCE
from ..scoring.candidates import Candidates
from ..scoring.params import Params
from .lexical import only_function_words, query_words


@dataclass(frozen=True)
class Verdict:
    match: bool
    dense: float             # best cosine to the query among the pass's chunks (0 when none)
    lexical: float           # best BM25 score per query term (0 when nothing matched)
    share: float             # best BM25 score over the query's BM25 ceiling (0 when nothing matched or unknown)
    min_dense: float
    min_lexical: float
    min_share: float

    def describe(self) -> dict:
        out: dict[str, object] = {
            "match": self.match,
            "dense": round(self.dense, 6),
            "lexical": round(self.lexical, 6),
            "lexical_share": round(self.share, 6),
            "min_dense": self.min_dense,
            "min_lexical": self.min_lexical,
            "min_lexical_share": self.min_share,
        }
        if not self.match:
            out["reason"] = (
                f"{NO_EVIDENCE}: best cosine {self.dense:.3f} < {self.min_dense:.3f}, "
                f"best BM25 per query term {self.lexical:.3f} < {self.min_lexical:.3f} and "
                f"best BM25 share of its ceiling {self.share:.3f} < {self.min_share:.3f}"
            )
        return out


def query_terms(query: str) -> int:
    """How many terms the BM25 leg searched for (its OR-ed words)."""
    return len(query_words(query))


def signals(c: Candidates) -> tuple[float, float, float]:
    """(dense, lexical, share) evidence of a pass: see the module docstring."""
    dense = float(np.max(c.qsim)) if len(c.qsim) else 0.0
    best_bm25 = float(np.max(c.lexical)) if len(c.lexical) else 0.0
    if best_bm25 <= 0 or only_function_words(c.query):  # "what is it": no topic for BM25 to find
        return max(dense, 0.0), 0.0, 0.0
    terms = query_terms(c.query)
    lexical = best_bm25 / terms if terms else 0.0
    share = best_bm25 / c.lexical_ceiling if c.lexical_ceiling > 0 else 0.0
    return max(dense, 0.0), lexical, share


def decide(dense, lexical, share, min_dense: float, min_lexical: float, min_share: float):
    """Whether the evidence is enough: any signal at its threshold (the share's at 1: never). Vectorises
    over arrays."""
    by_share = np.greater_equal(share, min_share) & (min_share < 1.0)
    return (np.greater_equal(dense, min_dense) | np.greater_equal(lexical, min_lexical)) | by_share


def judge(c: Candidates, p: Params) -> Verdict:
    dense, lexical, share = signals(c)
    match = bool(decide(dense, lexical, share, p.min_dense_evidence, p.min_lexical_evidence, p.min_lexical_share))
    return Verdict(match, dense, lexical, share, p.min_dense_evidence, p.min_lexical_evidence, p.min_lexical_share)
