"""The words and word pairs of community labels (ragx/index/terms.py), against a plain Python count."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from ragx.index import terms
from ragx.index.stop_words import STOP_WORDS
from ragx.index.terms import TOKEN_PATTERN, Vocabulary
from ragx.ingest.readable import without_markup

WORDS = "orbit comet planet the of flour oven bread dough and is yeast star-dust o'brien x 42 a1 __init__".split()


def reference(texts: list[str]) -> list[Counter]:
    """Per text: words of the text as read (markup left out), stop words dropped, and pairs of neighbours
    among what remains."""
    out = []
    for t in texts:
        w = [x for x in re.findall(TOKEN_PATTERN, without_markup(t).lower()) if x not in STOP_WORDS]
        out.append(Counter(w + [f"{a} {b}" for a, b in zip(w, w[1:])]))
    return out


def random_texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, rng.integers(0, 30)).tolist()) for _ in range(n)]


def test_counts_equal_a_plain_count_of_words_and_pairs():
    texts = random_texts(300, 1) + ["Orbit, comet. The planet's (oven)!", "bread\x00dough yeast", ""]
    # markup, some of it cut between neighbouring texts (a block is cleaned in one pass)
    texts += ['comet <div class="orbit', 'planet"> oven https://star.org/bread', "[[half", "link]] dough", "see [[Oven|bake.oven]]"]
    vocab = Vocabulary.fit(texts, min_df=1)
    assert vocab is not None
    counts = vocab.transform(texts).toarray()
    ref = reference(texts)
    assert set(vocab.terms.tolist()) == set().union(*ref)
    col = {t: i for i, t in enumerate(vocab.terms.tolist())}
    for row, expected in zip(counts, ref):
        assert {vocab.terms[i]: int(row[i]) for i in np.flatnonzero(row)} == dict(expected)
    assert "the" not in col and "x" not in col and "42" not in col and "star-dust" in col and "orbit comet" in col


def test_min_df_and_the_term_cap_keep_the_most_widespread_terms():
    texts = ["comet orbit", "comet orbit", "comet planet", "bread"]
    vocab = Vocabulary.fit(texts, min_df=2)
    assert vocab is not None and vocab.terms.tolist() == ["comet", "comet orbit", "orbit"]
    capped = Vocabulary.fit(texts, min_df=1, max_terms=2)
    assert capped is not None and capped.terms.tolist() == ["comet", "comet orbit"]  # 3 chunks, then 2 (ties: alphabetical)
    # A pair whose words are not terms of their own is still counted.
    assert capped.transform(["comet orbit planet"]).toarray().tolist() == [[1, 1]]
    assert Vocabulary.fit(["the of and", "is a"], min_df=1) is None


def test_a_vocabulary_rebuilt_from_its_terms_counts_the_same():
    texts = random_texts(200, 2)
    vocab = Vocabulary.fit(texts, min_df=2)
    assert vocab is not None
    again = Vocabulary.from_terms(vocab.terms)
    assert (again.transform(texts) != vocab.transform(texts)).nnz == 0


def test_large_corpora_fit_on_an_evenly_spread_sample(monkeypatch):
    monkeypatch.setattr(terms, "FIT_CHUNKS", 50)
    sample = terms.fit_sample(1000)
    assert len(sample) == 50 and sample[0] == 0 and sample[-1] == 999
    assert terms.fit_sample(40).tolist() == list(range(40))
