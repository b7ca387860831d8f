"""Query terms marked in a passage: the words a page highlights, escaped for HTML first."""

from __future__ import annotations

import re

from markupsafe import Markup, escape

_WORD = re.compile(r"\w+", re.UNICODE)
# Words too common to be worth a mark (they would light up every passage).
_STOP = frozenset("a an and are as at be by for from has have in is it of on or that the this to was were what which with".split())


def query_terms(query: str) -> frozenset[str]:
    """The query's words (case-folded, two characters or more, common words left out)."""
    return frozenset(w for w in (m.casefold() for m in _WORD.findall(query)) if len(w) > 1 and w not in _STOP)


def marked(text: str, terms: frozenset[str]) -> Markup:
    """`text` as safe HTML with each whole-word occurrence of a term in <mark>."""
    if not terms:
        return escape(text)
    pattern = re.compile(r"\b(" + "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True)) + r")\b", re.IGNORECASE)
    pieces = pattern.split(text)  # even indexes: text between matches; odd: the matches
    out = [escape(p) if i % 2 == 0 else Markup("<mark>") + escape(p) + Markup("</mark>") for i, p in enumerate(pieces)]
    return Markup("").join(out)
