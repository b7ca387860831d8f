"""Markdown as a reader sees it (ragx/ingest/readable.py): links as labels, markup left out."""

from ragx.ingest.readable import links_as_labels, without_markup


def test_links_read_as_their_labels_with_or_without_the_hierarchy():
    text = "ask in [[Office Hours|community.events.office-hours]], read [[dendron.topic.vaults#local]] or [the docs](./a/b.md)"
    assert links_as_labels(text) == "ask in Office Hours, read dendron topic vaults or the docs"
    assert links_as_labels(text, hierarchy=False) == "ask in Office Hours, read vaults or the docs"


def test_markup_is_left_out_and_prose_kept():
    text = ('Local <b>vault</b><iframe src="https://loom.com/x" style="height: 0"></iframe> at https://x.org/a?b=1, '
            "www.example.com/page or ![](https://s3.amazonaws.com/i.png); 2 < 3 > 1 <!-- hidden -->")
    words = without_markup(text).split()
    assert words == ["Local", "vault", "at", "or", "![](", "2", "<", "3", ">", "1"]  # a URL takes its trailing punctuation
