"""The links an author wrote in a markdown note, for the index's link table.

Kinds (one row each: file, kind, target):

* ``link``      -- ``[text](relative/path.md)``: the path resolved against the note's folder;
* ``wikilink``  -- ``[[target]]``, ``[[label|target]]`` (Dendron order: the part after ``|``), with
  any ``dendron://<vault>/`` prefix and ``#anchor`` dropped and ``.md`` added;
* ``embed``     -- ``![[target]]``, a transclusion, normalised like a wikilink;
* ``tag``       -- each frontmatter tag, lower case without ``#``;
* ``alias``     -- each frontmatter alias, lower case.

Targets are stored as written (normalised), never resolved to file ids here: resolution happens when
a query reads them (ragx/search/link_edges.py), so a target that appears or disappears later is seen
without re-reading the note that links to it, and incremental runs stay exact.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

from . import frontmatter
from .link_kinds import ALIAS, EMBED, LINK, PATH_KINDS, TAG, WIKILINK

__all__ = ["ALIAS", "EMBED", "LINK", "PATH_KINDS", "TAG", "WIKILINK", "extract", "markdown_target", "wikilink_target"]

_WIKI = re.compile(r"(?P<bang>!?)\[\[(?P<body>[^\[\]\n]+?)\]\]")
_MD_LINK = re.compile(r"(?<!!)\[(?P<label>[^\[\]\n]*)\]\(\s*<?(?P<target>[^()\s<>]+)>?(?:\s+[\"'][^\"'\n]*[\"'])?\s*\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_DENDRON_PREFIX = re.compile(r"^dendron://[^/]*/")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?^ {0,3}\1[^\n]*$", re.MULTILINE | re.DOTALL)


def wikilink_target(body: str) -> str | None:
    """`[[label|dendron://vault/name#anchor]]` -> `name.md` (None when nothing is left)."""
    target = body.rsplit("|", 1)[-1].strip()
    target = _DENDRON_PREFIX.sub("", target).split("#", 1)[0].strip()
    if not target:
        return None
    return target if target.lower().endswith(".md") else target + ".md"


def markdown_target(source: str, raw: str) -> str | None:
    """A relative markdown link's target as a path from the root, or None (URLs, anchors, escapes)."""
    if _SCHEME.match(raw) or raw.startswith("#"):
        return None
    target = unquote(raw.split("#", 1)[0].split("?", 1)[0])
    if not target:
        return None
    joined = target.lstrip("/") if target.startswith("/") else posixpath.join(posixpath.dirname(source), target)
    path = posixpath.normpath(joined)
    return None if path.startswith("..") or path == "." else path


def extract(source: str, text: str) -> list[tuple[str, str]]:
    """(kind, target) of every link in a markdown note's text, each distinct pair once, in order.

    Links inside fenced code blocks are examples, not links, and are left out."""
    fm = frontmatter.parse(text)
    body = _FENCE.sub("", text[fm.end :] if fm is not None else text)
    out: list[tuple[str, str]] = []
    for m in _WIKI.finditer(body):
        target = wikilink_target(m.group("body"))
        if target:
            out.append((EMBED if m.group("bang") else WIKILINK, target))
    for m in _MD_LINK.finditer(body):
        target = markdown_target(source, m.group("target"))
        if target:
            out.append((LINK, target))
    if fm is not None:
        out += [(TAG, t) for t in fm.tags]
        out += [(ALIAS, a.lower()) for a in fm.aliases]
    return list(dict.fromkeys(out))
