"""Community labels (class-based TF-IDF), their stability across runs, inspect and `query --global`."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from cli_runner import call
from fakes import TOPICS

from ragx.index.labels import KEEP_JACCARD, CommunityLabel, Membership, carry_over, label_communities, reuse

STARS = "stars galaxies telescope orbit planet comet nebula".split()
BREAD = "flour butter oven bake bread recipe dough yeast".split()


def texts_about(words: list[str], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    # Every chunk also says "notes" and "chapter": words common to all communities must not win.
    return [" ".join(rng.choice(words, 25).tolist() + ["notes", "chapter"]) for _ in range(n)]


def test_keywords_are_the_distinctive_words_of_each_community():
    texts = texts_about(STARS, 6, 1) + texts_about(BREAD, 5, 2)
    community = np.array([0] * 6 + [1] * 5)
    labels = label_communities(texts, community)
    assert set(labels) == {0, 1}
    assert labels[0].size == 6 and labels[1].size == 5
    assert set(labels[0].label.split(", ")) <= set(STARS) and len(labels[0].label.split(", ")) == 3
    assert set(labels[1].label.split(", ")) <= set(BREAD)
    for lab in labels.values():
        assert "notes" not in lab.keywords and "chapter" not in lab.keywords
        assert lab.weights == sorted(lab.weights, reverse=True)


def test_chunks_without_community_are_ignored_and_word_pairs_do_not_repeat_words():
    texts = ["red giant star", "red giant star", "white dwarf", "bread"]
    labels = label_communities(texts, np.array([0, 0, 0, -1]))
    assert list(labels) == [0] and labels[0].size == 3
    # As frequent as their words, the pairs come first, and the label does not repeat their words alone.
    assert labels[0].keywords[:2] == ["giant star", "red giant"]
    assert labels[0].label == "giant star, red"
    assert "white" not in labels[0].keywords  # in one chunk only


def test_markup_links_and_contractions_do_not_label_a_community():
    """Notes with embedded videos, image URLs and wikilinks are labelled by what they say, not by their markup."""
    embed = '<div style="position: relative; height: 0"><iframe src="https://www.loom.com/embed/x" allowfullscreen></iframe></div>'
    link = "see [[the stars page|dendron.topic.stars]] and ![](https://assets.s3.amazonaws.com/images/sky.png)"
    texts = [f"{t} {embed} {link} it's what we're doing" for t in texts_about(STARS, 6, 1)]
    texts += [f"{t} https://github.com/dendronhq/dendron/issues/{i} [[dendron.topic.baking]]" for i, t in enumerate(texts_about(BREAD, 5, 2))]
    labels = label_communities(texts, np.array([0] * 6 + [1] * 5))
    words = {w for lab in labels.values() for k in lab.keywords for w in k.split()}
    assert set(labels[0].label.split(", ")) <= set(STARS) | {"page"} and set(labels[1].label.split(", ")) <= set(BREAD) | {"baking"}
    assert not words & {"div", "style", "position", "height", "iframe", "src", "loom", "embed", "allowfullscreen",
                        "https", "github", "dendronhq", "issues", "amazonaws", "assets", "images", "png", "sky",
                        "dendron", "topic", "it's", "we're"}


def _label(number: int, label: str, keywords: list[str], size: int) -> CommunityLabel:
    return CommunityLabel(number, label, keywords, [1.0 / (i + 1) for i in range(len(keywords))], size)


def test_a_barely_changed_community_keeps_its_label_and_a_new_one_does_not():
    old = Membership(
        chunk_ids=np.arange(1, 21),
        community=np.array([0] * 10 + [1] * 10),
        labels={0: _label(0, "orbit, comet, planet", ["orbit", "comet", "planet", "stars"], 10),
                1: _label(1, "bread, oven, yeast", ["bread", "oven", "yeast"], 10)},
    )
    # Run 2: chunk 20 left, chunk 21 joined community "1"; the numbers swapped; "comet" slipped in rank.
    ids = np.arange(1, 22)
    ids = ids[ids != 20]
    community = np.array([1] * 10 + [0] * 9 + [0])
    new = {1: _label(1, "planet, orbit, stars", ["planet", "orbit", "stars", "nebula", "comet"], 10),
           0: _label(0, "dough, bread, flour", ["dough", "bread", "flour"], 10)}
    kept = carry_over(new, ids, community, old)
    assert kept[1].label == "orbit, comet, planet"          # same members: the old label stays
    assert kept[1].keywords == new[1].keywords              # keywords are today's
    assert kept[0].label == "dough, bread, flour"           # old label's "oven"/"yeast" are no longer keywords
    # Membership that changed a lot gets today's label.
    community2 = np.array([1] * 5 + [0] * 15)
    assert carry_over(new, ids, community2, old)[1].label == "planet, orbit, stars"
    assert 9 / 11 >= KEEP_JACCARD > 5 / 10


def test_labels_are_reused_without_reading_text_only_while_every_community_stays_close_to_its_basis():
    basis = Membership(np.arange(1, 21), np.array([0] * 10 + [1] * 10),
                       {0: _label(0, "orbit, comet", ["orbit", "comet"], 10), 1: _label(1, "bread, oven", ["bread", "oven"], 10)})
    ids = np.arange(1, 22)
    kept = reuse(ids, np.array([1] * 10 + [0] * 11), basis)  # renumbered, one chunk more: J = 10/11
    assert {n: (b, lab.label, lab.size) for n, (b, lab) in kept.items()} == {1: (0, "orbit, comet", 10), 0: (1, "bread, oven", 11)}
    # One community drifted too far from its basis: everything is computed anew.
    assert reuse(ids, np.array([1] * 7 + [0] * 14), basis) is None
    # A community split in two: two new communities cannot share one basis label.
    assert reuse(np.arange(1, 21), np.array([0] * 10 + [1] * 9 + [2]), basis) is None


def test_a_word_pair_wins_the_label_when_it_carries_half_its_words_weight():
    from ragx.index.labels import _label_from

    assert _label_from(["boundary", "layer", "boundary layer", "shock"], [1.0, 0.9, 0.6, 0.5]) == "boundary layer, shock"
    assert _label_from(["boundary", "layer", "boundary layer", "shock"], [1.0, 0.9, 0.4, 0.5]) == "boundary, layer, shock"
    assert _label_from(["wings", "wing", "lift", "flutter"], [1.0, 0.9, 0.8, 0.7]) == "wings, lift, flutter"


def test_term_counts_are_cached_by_chunk_id_and_text(tmp_path, monkeypatch):
    from ragx.index.terms import Vocabulary

    texts = texts_about(STARS, 6, 1) + texts_about(BREAD, 5, 2)
    community = np.array([0] * 6 + [1] * 5)
    ids = np.arange(100, 111)
    cache = tmp_path / "label-terms.npz"
    fresh = label_communities(texts, community)
    assert label_communities(texts, community, ids, cache) == fresh and cache.exists()

    # Next run: the last chunk replaced by a new one (new id); the others come from the cache.
    transformed: list[int] = []
    original = Vocabulary.transform
    monkeypatch.setattr(Vocabulary, "transform", lambda self, docs: (transformed.append(len(docs)), original(self, docs))[1])
    texts2, ids2 = texts[:-1] + ["flour butter oven bread dough"], np.r_[ids[:-1], 111]
    again = label_communities(texts2, community, ids2, cache)
    assert transformed == [1]  # only the new chunk was counted
    assert set(again[1].label.split(", ")) <= set(BREAD)
    # The same id with another text (a rolled-back run handed it out again) is counted anew, too.
    transformed.clear()
    label_communities(texts2[:-1] + ["comet orbit telescope"], community, ids2, cache)
    assert transformed == [1]
    # A damaged cache only costs a recount.
    cache.write_bytes(b"not an npz")
    assert label_communities(texts, community, ids, cache) == fresh



def test_a_truncated_or_bit_flipped_term_cache_is_a_miss(tmp_path):
    """Issue 42: a truncated label-terms.npz made every index run exit 2 (BadZipFile). Any damage is a
    recount with the same labels, and the file is written anew."""
    from ragx.index.label_terms import _load

    texts = texts_about(STARS, 6, 1) + texts_about(BREAD, 5, 2)
    community, ids = np.array([0] * 6 + [1] * 5), np.arange(100, 111)
    cache = tmp_path / "label-terms.npz"
    fresh = label_communities(texts, community)
    label_communities(texts, community, ids, cache)
    good = cache.read_bytes()
    rng = np.random.default_rng(3)
    damaged = [good[:size] for size in (0, 10, len(good) // 2, len(good) - 1)]
    for at in rng.choice(len(good), 60, replace=False):
        flipped = bytearray(good)
        flipped[at] ^= 1 << int(rng.integers(8))
        damaged.append(bytes(flipped))
    for data in damaged:
        cache.write_bytes(data)
        assert label_communities(texts, community, ids, cache) == fresh
        assert _load(cache) is not None  # written anew: the next run reuses it


# ---- through the CLI --------------------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake


@pytest.fixture
def corpus(indexed_topics):
    return indexed_topics


def topic_of(label: str) -> set[str]:
    return {topic for topic, words in TOPICS.items() if set(label.replace(",", " ").split()) & set(words.split())}


def test_inspect_communities_shows_a_label_of_one_topic(corpus, capsys):
    code, out, _ = call(capsys, "inspect", "communities", "--root", str(corpus), "--json")
    assert code == 0
    comms = json.loads(out)["communities"]
    assert comms
    for c in comms:
        assert c["label"] and len(c["keywords"]) >= 3
        assert len(topic_of(c["label"])) == 1, c["label"]  # a readable label is about one topic
    code, text, _ = call(capsys, "inspect", "communities", "--root", str(corpus))
    assert comms[0]["label"] in text


def test_labels_survive_an_unrelated_edit(corpus, capsys):
    before = json.loads(call(capsys, "inspect", "communities", "--root", str(corpus), "--json")[1])["communities"]
    (corpus / "notes.txt").write_text("A plain text note about bread and the oven, edited.\n", encoding="utf-8")
    assert call(capsys, "index", "--root", str(corpus))[0] == 0
    after = json.loads(call(capsys, "inspect", "communities", "--root", str(corpus), "--json")[1])["communities"]
    assert sorted(c["label"] for c in after) == sorted(c["label"] for c in before)


def test_an_index_from_before_labels_gets_them_on_the_next_run(corpus, capsys):
    db = sqlite3.connect(corpus / ".ragx" / "index.sqlite")
    db.execute("DROP TABLE community_labels")
    db.commit()
    db.close()
    code, out, _ = call(capsys, "inspect", "communities", "--root", str(corpus), "--json")
    assert code == 0 and all(c["label"] is None for c in json.loads(out)["communities"])
    assert call(capsys, "index", "--root", str(corpus))[0] == 0  # nothing changed, labels still written
    code, out, _ = call(capsys, "inspect", "communities", "--root", str(corpus), "--json")
    assert all(c["label"] for c in json.loads(out)["communities"])


def test_global_query_ranks_the_topic_asked_about_first(corpus, capsys):
    for topic, words in TOPICS.items():
        question = f"what do my notes say about {' '.join(words.split()[:3])}"
        code, out, err = call(capsys, "query", "--global", question, "--root", str(corpus), "--json", "--top", "2")
        assert code == 0, err
        doc = json.loads(out)
        assert doc["schema"] == "ragx.global.v1" and doc["query"] == question
        first = doc["communities"][0]
        assert topic_of(first["label"]) == {topic}, (topic, first["label"])
        assert all(ch["file"].startswith(topic) for ch in first["chunks"])
        assert first["breakdown"]["keywords"] > 0 and len(doc["communities"]) == 2
        assert doc["communities"][0]["score"] >= doc["communities"][1]["score"]
        assert {"rank", "community", "label", "keywords", "size", "files", "top_files", "score", "chunks"} <= first.keys()
    code, text, _ = call(capsys, "query", "--global", "telescope", "--root", str(corpus))
    assert code == 0 and "keywords:" in text


@pytest.mark.parametrize("extra, named", [
    (("--since", "2099-01-01"), "--since"),
    (("--tag", "nosuch", "--path", "zzz*"), "--tag, --path"),
    (("--files-only", "--explain", "--graph"), "--files-only, --explain, --graph/--no-graph"),
])
def test_global_refuses_the_file_search_s_filters_rather_than_ignoring_them(corpus, capsys, extra, named):
    code, out, err = call(capsys, "query", "--global", "telescope", "--root", str(corpus), *extra)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert f"--global ranks communities, not files: {named} cannot be used with it" in err


def test_global_question_about_nothing_in_the_corpus_lists_no_topic(corpus, capsys):
    # The plain query's "nothing relevant" rule judges --global's question too: no made-up topics.
    # (Thresholds for the hashing embedder: any shared word is evidence, no cosine is.)
    (corpus / "ragx.toml").write_text("[search]\nmin_dense_evidence = 0.999\nmin_lexical_evidence = 0.01\n", encoding="utf-8")
    question = "zqxv wplk"
    code, out, err = call(capsys, "query", "--global", question, "--root", str(corpus), "--json")
    assert code == 1, err
    doc = json.loads(out)
    assert doc["communities"] == []
    assert doc["evidence"]["match"] is False and doc["evidence"]["enforced"] is True
    assert doc["evidence"]["reason"].startswith("no relevant evidence")
    code, text, _ = call(capsys, "query", "--global", question, "--root", str(corpus))
    assert code == 1 and "no communities (no relevant evidence" in text and "--no-evidence-check" in text
    code, text, _ = call(capsys, "query", "--global", question, "--root", str(corpus), "--no-evidence-check")
    assert code == 0 and text.startswith("weak match") and "keywords:" in text
    code, out, _ = call(capsys, "query", "--global", "telescope orbit", "--root", str(corpus), "--json")
    assert code == 0 and json.loads(out)["evidence"]["match"] is True


@pytest.mark.parametrize("top", ["0", "-1"])
def test_global_refuses_a_top_below_one(corpus, capsys, top):
    code, out, err = call(capsys, "query", "--global", "telescope", "--root", str(corpus), "--top", top)
    assert code == 2 and out == "" and "--top must be at least 1" in err
