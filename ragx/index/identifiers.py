"""Identifiers as BM25 sees them: the words inside them, and the whole of them, in documents and queries.

FTS5's tokenizer (fts_tokens.py) already splits `parse_args` and `click.core.Context` at their
punctuation (into pars, arg / click, core, context) and keeps `parseArgs` or `HTTPAdapter` whole
(parsearg, httpadapt). What each misses is added to the piece before FTS5 reads it:

* camelCase and PascalCase words split into their parts (`parseArgs` -> "parse Args",
  `HTTPAdapter` -> "HTTP Adapter"), when every part has two letters or more (so `pH`, `mRNA`, `IgG`
  in prose stay as they are);
* names joined by `_` or `.` also as one word without them (`parse_args` -> "parseargs",
  `click.core.Context.invoke` -> "clickcorecontextinvoke"); a dotted name only when every part has two
  characters or more (so "e.g" and "U.S" in prose stay as they are).

So `parse_args`, `parseArgs` and `ParseArgs` share the terms pars, arg and parsearg, and a query naming
an identifier in either style meets it. A plain word gets nothing added: prose keeps its terms.
"""

from __future__ import annotations

import re

# ASCII identifiers, possibly dotted (a trailing sentence period is not part of one)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_SEPARATORS = re.compile(r"[._]+")
# between a lower-case letter or digit and an upper-case one; before the last capital of a run followed by lower case
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_HINT = re.compile(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z]|[A-Za-z0-9][._][A-Za-z_]")  # a piece that may hold one


def identifier_parts(piece: str) -> list[str]:
    """What is read in addition to `piece` (white-space free) for its identifiers: camel parts joined by
    spaces, and separated names joined together (see the module doc)."""
    if not _HINT.search(piece):  # most prose pieces: no identifier structure at all
        return []
    extra: list[str] = []
    for name in _IDENTIFIER.findall(piece):
        parts = [p for p in _SEPARATORS.split(name) if p]
        words = [w for p in parts for w in _CAMEL.split(p)]
        if len(words) > len(parts) and min(map(len, words)) >= 2:
            extra.append(" ".join(words))
        if len(parts) > 1 and ("." not in name or min(map(len, parts)) >= 2):
            extra.append("".join(parts))
    return extra


def may_hold_identifiers(text: str) -> bool:
    """False when no piece of `text` can have identifier parts (`identifier_parts` gives [] for each): the
    hint has no anchors, so a text without it has no piece with it."""
    return _HINT.search(text) is not None


def with_identifier_parts(piece: str) -> str:
    """The piece as FTS5 reads it: itself, then its identifiers' parts and joined forms (if any)."""
    extra = identifier_parts(piece)
    return f"{piece} {' '.join(extra)}" if extra else piece
