"""BM25's variants (ragx/scoring/bm25.py) against bm25s, the reference BM25 `ragx eval` already uses,
and against what each variant is for."""

from __future__ import annotations

import numpy as np
import pytest

from ragx.index.fts_tokens import shared
from ragx.index.lexicon import Lexicon, LexiconPart
from ragx.scoring.bm25 import VARIANTS

# Words FTS5's porter tokenizer leaves as they are, so bm25s can be given the very same tokens.
TEXTS = ["bread bread bread oven", "bread " + "flour " * 40, "oven yeast", "comet orbit comet",
         "yeast bread flour oven", "orbit", "flour flour yeast", "comet bread", "planet moon", "moon tide"]
QUERIES = [["bread"], ["oven"], ["comet"], ["bread", "oven"], ["flour", "yeast", "comet"], ["orbit", "bread", "yeast"]]
# bm25s's name for each variant, and the factor between its scores and ragx's: ragx keeps FTS5's scale
# (idf * (k1 + 1) at most per term), bm25s's Robertson and Lucene leave out the (k1 + 1).
BM25S = {"fts5": ("robertson", True), "lucene": ("lucene", True), "atire": ("atire", False),
         "bm25l": ("bm25l", False), "bm25+": ("bm25+", False)}


def lexicon() -> Lexicon:
    return Lexicon(LexiconPart.build(np.arange(len(TEXTS)), TEXTS), LexiconPart.empty(), np.arange(len(TEXTS)))


def ours(variant: str, words: list[str], k1: float, b: float) -> dict[int, float]:
    ids, scores = lexicon().matches(shared().of_words(words), k1, b, variant)
    return dict(zip(ids.tolist(), scores.tolist()))


def reference(variant: str, words: list[str], k1: float, b: float) -> np.ndarray:
    import bm25s

    method, unscaled = BM25S[variant]
    retriever = bm25s.BM25(k1=k1, b=b, method=method, delta={"bm25l": 0.5, "bm25+": 1.0}.get(variant, 0.5))
    retriever.index([t.split() for t in TEXTS], show_progress=False)
    return retriever.get_scores(words) * ((k1 + 1.0) if unscaled else 1.0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("k1, b", [(1.2, 0.75), (0.9, 0.4), (2.0, 1.0)])
def test_every_variant_scores_as_bm25s_does(variant, k1, b):
    # No word here is in more than half the chunks, where FTS5 floors Robertson's idf and bm25s clips it.
    # bm25l and bm25+ in bm25s also credit a chunk for the query words it lacks (their delta with tf = 0,
    # the same for every chunk lacking the word); ragx scores the words a chunk holds, so those two are
    # compared on one-word queries, where only chunks holding the word are matched.
    for words in QUERIES if variant not in ("bm25l", "bm25+") else [q for q in QUERIES if len(q) == 1]:
        mine, theirs = ours(variant, words, k1, b), reference(variant, words, k1, b)
        assert set(mine) == {i for i, s in enumerate(theirs) if s > 0 and any(w in TEXTS[i].split() for w in words)}
        for i, score in mine.items():
            assert score == pytest.approx(theirs[i], rel=1e-5)  # bm25s scores in float32


def test_the_variants_differ_where_they_mean_to():
    words = ["bread"]  # in 4 of the 10 chunks
    fts5, plus, el = ours("fts5", words, 1.2, 0.75), ours("bm25+", words, 1.2, 0.75), ours("bm25l", words, 1.2, 0.75)
    short, long = 0, 1  # chunk 1 holds "bread" once among 40 other words
    # bm25+: any chunk holding the word gains delta (1) * idf on top, however long it is
    assert plus[long] > np.log(11 / 4) and fts5[long] < 0.3 * fts5[short]
    # bm25l: a long chunk is penalised less against a short one than under FTS5's formula
    assert el[long] / el[short] > fts5[long] / fts5[short]


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_ceiling_bounds_every_variants_scores(variant):
    lex = lexicon()
    for k1 in (0.5, 1.2, 3.0):
        for words in QUERIES:
            _, scores, top = lex.scored(shared().of_words(words), k1, 0.75, variant)
            assert 0 < scores.max() < top


def test_an_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="'okapi' is not one of fts5, lucene"):
        lexicon().scored(shared().of_words(["bread"]), variant="okapi")
