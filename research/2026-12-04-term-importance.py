"""Query-term weights from the embedder (issue 13): BM25 that knows which words carry the query.

BM25 weighs a query's words by their rarity in the collection alone: in "does vitamin D deficiency
raise the risk of multiple sclerosis" the word "risk" counts about as much as "sclerosis" wherever
both are about as rare. The embedded model has its own view of which words carry the meaning: drop a
word and see how far the query's vector moves. Here each BM25 word gets the weight

    w = (1 - alpha) + alpha * i / mean(i over the query's words),
    i = 1 - cosine(e(words), e(words without this one))         e = the embedded model's query vector

and the lexical signal becomes the weighted sum of the words' own BM25 scores (with alpha 0 it is the
shipped BM25, which the script checks). One embedding per query word, at query time. Everything else
is the shipped defaults' scoring (anchors included) of the same cached pass (dense 100 + BM25 100
seeds, graph off): equal candidates by construction. Grid fixed before the first run: alpha in
(0.25, 0.5, 1.0). Chosen on TRAIN (dendron-vault train, SciFact train) by the mean gain, only if
positive; then the four test splits once with the choice.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-term-importance.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-term-importance.py study <four test specs> --only KEY
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-term-importance.py compare KEY <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-term-importance.py pooled KEY <four test specs>

Per-query results go to $RAGX_CACHE_DIR/research-prf/term-importance-results.json.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness
from lab.studies.harness import run_command, studied, train_or_choice
from ragx.index.fts_tokens import shared
from ragx.search.lexical import query_words

GRID = (0.25, 0.5, 1.0)
RESULTS = harness.OUT / "term-importance-results.json"


def key(alpha: float) -> str:
    return f"alpha{alpha}"


def word_scores(lexicon, words: list[str], nodes: np.ndarray, k1: float, b: float) -> np.ndarray:
    """(len(words), len(nodes)): each word's own BM25 score of each candidate chunk."""
    out = np.zeros((len(words), len(nodes)))
    for i, w in enumerate(words):
        ids, scores, _ = lexicon.scored(shared().of_words([w]), k1, b)
        order = np.argsort(ids)
        ids, scores = ids[order], scores[order]
        at = np.minimum(np.searchsorted(ids, nodes), max(len(ids) - 1, 0))
        hit = (ids[at] == nodes) if len(ids) else np.zeros(len(nodes), bool)
        out[i, hit] = scores[at[hit]]
    return out


def importance(embedder, words: list[str]) -> np.ndarray:
    """Per word: 1 - cosine of the query's vector to the vector of the query without that word."""
    if len(words) < 2:
        return np.ones(len(words))
    texts = [" ".join(words)] + [" ".join(words[:i] + words[i + 1:]) for i in range(len(words))]
    v = np.array([embedder.embed_query(t) for t in texts], dtype=np.float64)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return np.maximum(1.0 - v[1:] @ v[0], 0.0)


def weights(imp: np.ndarray, alpha: float) -> np.ndarray:
    mean = imp.mean() if len(imp) else 0.0
    rel = imp / mean if mean > 0 else np.ones(len(imp))
    return (1 - alpha) + alpha * rel


def study(argv: list[str]) -> None:
    specs, only = train_or_choice(argv)
    grid = [a for a in GRID if only is None or key(a) == only]
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        _coll, corpus, passes, meta, _qv, p = loaded
        corpus.searcher.refresh()
        lexicon = corpus.searcher.snapshot.lexicon
        per_query = []
        for c in passes:
            words = query_words(c.query)
            scores = word_scores(lexicon, words, c.nodes, p.bm25_k1, p.bm25_b)
            drift = np.max(np.abs(scores.sum(axis=0) - c.lexical)) if len(words) else 0.0
            assert drift < 1e-6 * max(1.0, float(np.max(c.lexical, initial=0.0))), f"per-word BM25 must add up to the pass's: {drift}"
            per_query.append((scores, importance(corpus.embedder, words)))
        for alpha in grid:
            variant = [replace(c, lexical=weights(imp, alpha) @ s) for c, (s, imp) in zip(passes, per_query)]
            mean, per_variant[key(alpha)] = harness.ndcg(variant, p, meta)
            print(f"{spec} {key(alpha)} {mean:.4f} ({mean - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
