"""Rerank scores for offline re-scoring: the shortlist a configuration asks for, scored through the
same cached cross-encoder (`ragx.models.rerank_cache.CachedReranker`) that `ragx eval` uses.

A pass cache holds no rerank scores (`Candidates.rerank` is NOT_CACHED): they depend on the
configuration's shortlist, which depends on every other weight. Each trial therefore picks its
shortlist with ragx's own `prepare` and asks the cached reranker for it; only pairs no earlier trial
(or evaluation) scored run the cross-encoder. Chunk text keys are memoised by chunk id (a chunk id
is never reused for another text in one index, and a pass cache belongs to one index), so a trial
reads chunk texts from the store only for pairs the score file lacks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ragx.models.rerank_cache import score_keys
from ragx.scoring.candidates import Candidates
from ragx.scoring.params import Params
from ragx.scoring.score import prepare


class ShortlistScorer:
    """Fills a pass's rerank scores for a configuration's shortlist, from chunk ids."""

    def __init__(self, reranker: Any, store: Any) -> None:
        self.reranker = reranker  # a CachedReranker (counts hits and computed pairs)
        self.store = store        # the index store the passes came from (chunk texts by id)
        self._ids = np.empty(0, np.int64)   # sorted chunk ids whose text keys are known
        self._keys = np.empty(0, np.int64)

    def texts(self, ids: np.ndarray) -> list[str]:
        return [r["text"] for r in self.store.chunk_rows(ids, ("id", "text"))]

    def keys(self, ids: np.ndarray) -> np.ndarray:
        """Text keys of chunk ids; texts are read (once, in one call) only for ids not seen before."""
        pos = np.minimum(np.searchsorted(self._ids, ids), max(len(self._ids) - 1, 0))
        known = (self._ids[pos] == ids) if len(self._ids) else np.zeros(len(ids), dtype=bool)
        if not known.all():
            new = np.unique(ids[~known])
            ids_all = np.concatenate([self._ids, new])
            order = np.argsort(ids_all, kind="stable")
            self._ids, self._keys = ids_all[order], np.concatenate([self._keys, score_keys(self.texts(new))])[order]
            pos = np.searchsorted(self._ids, ids)
        return self._keys[pos]

    def reranked(self, c: Candidates, params: Params) -> Candidates:
        """`c` with the rerank scores of `params`' shortlist (a copy: the cached pass stays unscored),
        exactly what `Searcher.rerank` fills for the same pass and params."""
        if params.rerank_weight <= 0:
            return c
        picked = prepare(c, params).shortlist
        ids = c.nodes[picked]
        scores = self.reranker.score_keyed(c.query, self.keys(ids), lambda positions: self.texts(ids[positions]))
        rerank = np.full(len(c.nodes), np.nan)
        rerank[picked] = scores
        return dataclasses.replace(c, rerank=rerank, rerank_model=self.reranker.name)


def shortlist_scorer(corpus: Any) -> ShortlistScorer | None:
    """The corpus's configured reranker (`[rerank] model`, e.g. from ~/.ragxrc, as `ragx eval` reads it)
    behind the one rerank-score cache every caller shares (`Corpus.reranker`: <ragx cache>/rerank/
    scores.sqlite unless the corpus was given another file): a pair `ragx eval`, a query or the MCP
    server scored is never scored again by a sweep, nor the reverse. None when no reranker is configured."""
    if corpus is None or not corpus.settings.rerank.model.strip():
        return None
    return ShortlistScorer(corpus.reranker, corpus.searcher.store)
