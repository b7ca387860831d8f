"""Markdown as a reader sees it: links shown as their labels, and (for word counts) no markup at all.

Two readers of chunk text want the words a person reads rather than the source: anchor texts
(ragx/ingest/anchors.py: the line around a link, links as labels) and the words that label communities
(ragx/index/terms.py: a topic called "height iframe, style position" or "github dendronhq" names the
markup of its notes, not their subject). Search itself keeps the source text (a query may name a URL).
"""

from __future__ import annotations

import re

from .links import _MD_LINK, _WIKI

# A web address (http(s)://, ftp://, www.), up to white space or an angle bracket. Three patterns, each
# starting with a literal, so that `re` scans for the literal instead of trying every position (one
# alternation of them costs ~8x more on SciFact's texts).
_URLS = tuple(re.compile(p + r"[^\s<>]+") for p in (r"https?://", r"ftp://", r"www\."))
# An HTML or SVG tag with its attributes, a closing tag, or a comment/doctype: "<" right before a letter,
# "/" or "!", so prose like "a < b" stays.
_TAG = re.compile(r"<[A-Za-z/!][^<>]*>")


def _wiki_label(body: str, hierarchy: bool) -> str:
    """`[[label|target]]` -> label; `[[a.b.c-d#x]]` -> "a b c-d" (Dendron names are dotted paths), or
    without `hierarchy` its last level alone, "c-d" (what Dendron shows for it: the note's own name)."""
    if "|" in body:
        return body.split("|", 1)[0].strip()
    name = body.split("#", 1)[0].rsplit("/", 1)[-1].removesuffix(".md")
    return name.replace(".", " ").strip() if hierarchy else name.rsplit(".", 1)[-1].strip()


def links_as_labels(text: str, hierarchy: bool = True) -> str:
    """Every wikilink and markdown link replaced by its label (a label-less wikilink by its target's
    name: every level of a dotted name, or with `hierarchy` False the last one)."""
    if "[[" in text:  # each pattern runs only where it can match (neither starts with a literal to scan for)
        text = _WIKI.sub(lambda m: _wiki_label(m.group("body"), hierarchy), text)
    if "](" in text:
        text = _MD_LINK.sub(lambda m: m.group("label"), text)
    return text


def without_markup(text: str) -> str:
    """Links as labels (a dotted name by its last level: "dendron topic" would label half a Dendron
    vault), and web addresses and HTML/SVG tags (with their attributes) left out. Each rule runs only on
    a text holding the character it needs: most chunks of most corpora hold none, and it is called once
    per chunk."""
    text = links_as_labels(text, hierarchy=False)
    if "://" in text or "www." in text:
        for url in _URLS:
            text = url.sub(" ", text)
    if "<" in text:
        text = _TAG.sub(" ", text)
    return text
