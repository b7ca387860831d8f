"""Links authors write in notes: parsed at index time, stored, resolved per query as edges."""

from __future__ import annotations

import numpy as np

from ragx.ingest.links import extract, markdown_target, wikilink_target
from ragx.scoring.score import link_boost


def test_wikilinks_follow_dendron_rules():
    assert wikilink_target("dendron.topic.lookup") == "dendron.topic.lookup.md"
    assert wikilink_target("Dendronites|dendron://dendron.dendron-site/community.concepts#dendronites") == "community.concepts.md"
    assert wikilink_target("label | notes/a.md#part") == "notes/a.md"
    assert wikilink_target("#only-anchor") is None


def test_markdown_links_resolve_against_the_note_folder():
    assert markdown_target("notes/a.md", "../b/c.md#x") == "b/c.md"
    assert markdown_target("notes/a.md", "c%20d.md") == "notes/c d.md"
    assert markdown_target("notes/a.md", "/top.md") == "top.md"
    for raw in ("https://example.org/x.md", "mailto:a@b", "#anchor", "../../outside.md"):
        assert markdown_target("notes/a.md", raw) is None


def test_extract_kinds_tags_aliases_and_ignores_code_and_images():
    text = (
        "---\ntitle: T\ntags: [Alpha, beta]\naliases: [Other Name]\n---\n"
        "See [[a.b]] and ![[c.d]] and [[x|a.b]] and [doc](sub/e.md) and ![img](pic.png).\n"
        "```\n[[not.a.link]]\n```\n"
    )
    got = extract("n.md", text)
    assert got == [
        ("wikilink", "a.b.md"), ("embed", "c.d.md"), ("link", "sub/e.md"),
        ("tag", "alpha"), ("tag", "beta"), ("alias", "other name"),
    ]


def test_link_boost_is_off_at_zero_and_lifts_linked_files():
    files = np.array([1, 1, 2, 3])
    values = np.array([0.9, 0.1, 0.2, 0.3])
    pairs = np.array([[1, 3]])
    assert np.array_equal(link_boost(files, values, pairs, 0.0), values)
    boosted = link_boost(files, values, pairs, 0.5)
    assert np.allclose(boosted, [0.9 + 0.15, 0.1 + 0.15, 0.2, 0.3 + 0.45])
