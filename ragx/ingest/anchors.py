"""Anchor texts: what a note says where it links to another note.

A link is usually written inside a sentence that says what its target is about ("run community events
like [[Office Hours|community.events.office-hours]]"). Each link occurrence in a markdown note's body
(a wikilink or a relative markdown link; not a transclusion, not inside a code fence, as in
ragx/ingest/links.py) yields one anchor: its target, normalised as the link table stores it, and the
line holding it as plain text, every link in the line replaced by its label (a label-less wikilink by
its target's name, dots as spaces: Dendron names are dotted paths). The index embeds each anchor and
keeps one BM25 document per target; a query scores a candidate's file by both
(ragx/search/anchor_signals.py). research/2026-12-01-anchor-text.md measured it.
"""

from __future__ import annotations

import re

from . import frontmatter
from .link_kinds import LINK, WIKILINK
from .links import _FENCE, _MD_LINK, _WIKI, markdown_target, wikilink_target
from .readable import links_as_labels

MAX_CHARS = 300  # an anchor is a line, not a paragraph: long lines are cut here
_LIST_MARK = re.compile(r"^\s*(?:[-*+>]|\d+[.)])\s+")


def _plain(line: str) -> str:
    """The line as a reader sees it: links as their labels, no list marker, at most MAX_CHARS."""
    return _LIST_MARK.sub("", links_as_labels(line)).strip()[:MAX_CHARS]


def extract(source: str, text: str) -> list[tuple[str, str, str]]:
    """(kind, target, anchor text) of every link occurrence in a markdown note written towards another
    file, in order; a line linking twice to the same target counts once, a link to the note itself
    not at all."""
    fm = frontmatter.parse(text)
    body = _FENCE.sub("", text[fm.end:] if fm is not None else text)
    out: list[tuple[str, str, str]] = []
    own = source.lower()
    for line in body.splitlines():
        if "[" not in line:
            continue
        found: list[tuple[str, str]] = []
        for m in _WIKI.finditer(line):
            target = wikilink_target(m.group("body"))
            if target and not m.group("bang"):
                found.append((WIKILINK, target))
        for m in _MD_LINK.finditer(line):
            target = markdown_target(source, m.group("target"))
            if target:
                found.append((LINK, target))
        found = [f for f in dict.fromkeys(found) if f[1].lower() != own and f[1].lower() != own.rsplit("/", 1)[-1]]
        if found:
            context = _plain(line)
            out.extend((kind, target, context) for kind, target in found if context)
    return out
