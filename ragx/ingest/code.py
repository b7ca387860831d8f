"""Code cut by its syntax: one chunk per function, method or class, named in its header.

tree-sitter parses a file (the grammars ship compiled in their PyPI wheels: nothing is fetched at run
time) and a per-language query (code_languages.py) finds its definitions. A definition that fits the
token budget is one chunk, with its decorators and the comments right above it; a class, impl or
namespace too big for one is cut into its members (the text between them goes with the container's
name); a function too big for one is split at blank lines, then lines, like any code. Neighbours
smaller than `min_tokens` merge (imports with the function below them, one-line getters together)
while the merged chunk stays within the target. Chunks stay byte ranges of the file.

What is embedded and BM25-indexed in front of a chunk's text (its header, never part of what a result
shows): the file's path as a dotted module and the qualified names of the definitions the chunk holds
(`src.flask.app.Flask.run`), and the definition's signature when the chunk is a later piece of it
(a first piece starts with the signature already). Why: a method's body seldom names its class or its
module, and a question names them ("where does Flask.run read the port?").
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .code_languages import GRAMMARS, language_of

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

__all__ = ["Definition", "definitions", "header", "language_of", "syntax_units"]

Span = tuple[int, int]  # [start, end) in characters
HEADER_CHARS = 160       # a header longer than this is cut (a few names, one signature)
SIGNATURE_CHARS = 100
_SPACES = re.compile(r"\s+")
_OPENING_SPACE = re.compile(r"([(\[]) ")


@dataclass(frozen=True)
class Definition:
    start: int      # character offsets in the file's text; start takes its wrappers and leading comments
    end: int
    name: str       # qualified within the file: Class.method
    signature: str  # the definition's first line(s) up to its body, white space collapsed
    sig_start: int  # where the definition itself starts (after its comments and decorators)
    parent: int     # index of the innermost definition holding this one, -1 at the top


class _Doc(Protocol):  # what syntax_units needs of chunk.py's working state
    text: str

    def est(self, a: int, b: int) -> int: ...
    def trim(self, a: int, b: int) -> Span | None: ...
    def split(self, a: int, b: int, levels: Any, budget: int) -> list[Span]: ...


@cache
def _parser_and_query(language: str) -> tuple[Any, Any]:
    from tree_sitter import Language, Parser, Query  # on code paths only: a notes folder never loads it

    grammar = GRAMMARS[language]
    lang = Language(getattr(importlib.import_module(grammar.module), grammar.function)())
    return Parser(lang), Query(lang, grammar.definitions)


def _char_offsets(data: bytes, n_chars: int) -> np.ndarray | None:
    """Character offset of each byte offset (None: ASCII, where they are equal)."""
    if len(data) == n_chars:
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    return np.concatenate([[0], np.cumsum((raw & 0xC0) != 0x80)])


def definitions(path: str, data: bytes, text: str) -> list[Definition] | None:
    """The file's definitions in order of their start (a parent before its members); None when no
    grammar reads this kind of file."""
    language = language_of(path)
    if language is None:
        return None
    from tree_sitter import QueryCursor

    parser, query = _parser_and_query(language)
    tree = parser.parse(data)
    grammar = GRAMMARS[language]
    char_of = _char_offsets(data, len(text))
    found: dict[tuple[int, int], tuple[int, int, str, str, int]] = {}
    for _, caps in QueryCursor(query).matches(tree.root_node):
        node, name = caps["def"][0], caps["name"][0]
        outer = node.parent if node.parent is not None and node.parent.type in grammar.wrappers else node
        label = _name(name.text, caps.get("recv"))
        sig = _signature(data, node, caps.get("value"))
        a, b, s = (int(x) if char_of is None else int(char_of[x]) for x in (outer.start_byte, outer.end_byte, node.start_byte))
        found.setdefault((a, b), (a, b, label, sig, s))
    rows = sorted(found.values(), key=lambda r: (r[0], -r[1]))
    return _nested(text, rows, grammar.comments)


def _name(raw: bytes | None, receiver: list | None) -> str:
    name = (raw or b"").decode("utf-8", "replace").split("<", 1)[0].strip().replace("::", ".")
    if receiver:  # a Go method: qualified by its receiver's type
        return f"{receiver[0].text.decode('utf-8', 'replace')}.{name}"
    return _SPACES.sub(" ", name)


def _signature(data: bytes, node: Any, value: list | None) -> str:
    """The definition's text up to its body (its first line when it has none)."""
    body = node.child_by_field_name("body")
    if body is None and value:
        body = value[0].child_by_field_name("body")
    end = body.start_byte if body is not None else data.find(b"\n", node.start_byte, node.end_byte)
    if end < 0:
        end = node.end_byte
    sig = _SPACES.sub(" ", data[node.start_byte : min(end, node.start_byte + 4 * SIGNATURE_CHARS)].decode("utf-8", "replace"))
    sig = _OPENING_SPACE.sub(r"\1", sig.strip().rstrip("{:=").strip())  # "def f( self," -> "def f(self,"
    return sig[:SIGNATURE_CHARS]


def _nested(text: str, rows: list[tuple[int, int, str, str, int]], comments: tuple[str, ...]) -> list[Definition]:
    """Definitions with their parents (the innermost definition holding each), qualified names and
    leading comments."""
    out: list[Definition] = []
    stack: list[int] = []
    for a, b, label, sig, s in rows:
        while stack and not (out[stack[-1]].start <= a and b <= out[stack[-1]].end):
            stack.pop()
        parent = stack[-1] if stack else -1
        floor = out[parent].sig_start if parent >= 0 else 0
        qualified = f"{out[parent].name}.{label}" if parent >= 0 else label
        out.append(Definition(_with_comments(text, a, comments, floor), b, qualified, sig, s, parent))
        stack.append(len(out) - 1)
    return out


def _with_comments(text: str, start: int, prefixes: tuple[str, ...], floor: int) -> int:
    """`start` moved up over the comment lines right above it (no blank line between), not above `floor`."""
    line = text.rfind("\n", 0, start) + 1
    if text[line:start].strip():  # the definition shares its line with other code
        return start
    cut = start
    while line > floor:
        prev = text.rfind("\n", 0, line - 1) + 1
        above = text[prev : line - 1].strip()
        if not above or not above.startswith(prefixes):
            break
        cut = line = prev
    return max(cut, floor)  # a line start: the chunk's edges are trimmed of the indentation later


# --------------------------------------------------------------------------------------------
# units: definitions that fit, containers cut into their members, long bodies split


@dataclass(frozen=True)
class Unit:
    span: Span
    owners: tuple[int, ...]  # the definitions the unit holds or belongs to (-1: the module)


def syntax_units(doc: _Doc, defs: list[Definition], budget: int, levels: Sequence[Any]) -> list[Unit]:
    """The file cut into units, each at most `budget` estimated tokens, in order."""
    children: dict[int, list[int]] = {}
    for i, d in enumerate(defs):
        children.setdefault(d.parent, []).append(i)
    return _region(doc, defs, children, 0, len(doc.text), -1, budget, levels)


def _region(doc: _Doc, defs: list[Definition], children: dict[int, list[int]], a: int, b: int, owner: int,
            budget: int, levels: Sequence[Any]) -> list[Unit]:
    """Units of [a, b), which `owner` holds: its member definitions, and the text between them."""
    out: list[Unit] = []
    pos = a
    for i in children.get(owner, []):
        d = defs[i]
        if d.start < pos:  # overlaps the previous member (a comment claimed twice): starts where it ended
            d = Definition(pos, d.end, d.name, d.signature, d.sig_start, d.parent)
        out += _gap(doc, pos, d.start, owner, budget, levels)
        span = doc.trim(d.start, d.end)
        if span is None:
            continue
        if doc.est(*span) <= budget:
            out.append(Unit(span, (i,)))
        elif i in children:
            out += _region(doc, defs, children, span[0], span[1], i, budget, levels)
        else:
            out += [Unit(s, (i,)) for s in doc.split(span[0], span[1], levels, budget)]
        pos = max(pos, d.end)
    return out + _gap(doc, pos, b, owner, budget, levels)


def _gap(doc: _Doc, a: int, b: int, owner: int, budget: int, levels: Sequence[Any]) -> list[Unit]:
    span = doc.trim(a, b) if a < b else None
    if span is None:
        return []
    return [Unit(s, (owner,)) for s in doc.split(span[0], span[1], levels, budget)]


def merge_small(doc: _Doc, units: list[Unit], small: int, target: int) -> list[Unit]:
    """Neighbours merged where one of them is under `small` tokens and together they fit `target`."""
    if not units:
        return units
    out = [units[0]]
    for u in units[1:]:
        last = out[-1]
        tiny = doc.est(*last.span) < small or doc.est(*u.span) < small
        if tiny and doc.est(last.span[0], u.span[1]) <= target:
            owners = last.owners + tuple(o for o in u.owners if o not in last.owners)
            out[-1] = Unit((last.span[0], u.span[1]), owners)
        else:
            out.append(u)
    return out


def module_name(path: str) -> str:
    """The file's path as a dotted module name: src/flask/app.py -> src.flask.app."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return stem.strip("/").replace("/", ".")


def header(path: str, defs: list[Definition], owners: tuple[int, ...], span: Span) -> str:
    """What goes in front of a chunk's text when it is embedded and indexed (see the module doc)."""
    module = module_name(path)
    names = [defs[o].name for o in owners if o >= 0]
    if not names:
        head = module
    elif len(names) == 1:
        head = f"{module}.{names[0]}"
    else:
        head = f"{module}: {', '.join(names)}"
    first = next((defs[o] for o in owners if o >= 0), None)
    if first is not None and not span[0] <= first.sig_start < span[1] and first.signature:
        head = f"{head}\n{first.signature}"  # a later piece of the definition: its signature, once
    return head[:HEADER_CHARS]
