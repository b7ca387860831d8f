"""What a query written as an issue says about code: the names in its tracebacks, code blocks and paths.

A developer or an agent often pastes a whole issue: prose, a snippet, a traceback through the user's
own code and through other libraries. Read word by word, its BM25 query is hundreds of words, most of
them the user's variable names and the traceback's noise (`File`, `line`, `in`, site-packages paths).
`lexical_text` keeps, for such a query, its prose (outside code blocks and traceback lines) and adds
the code-shaped names found anywhere in it: identifiers with an underscore, an inner capital or a dot
(`parse_args`, `HTTPAdapter`, `flask.Config.from_file`), called names (`resolve_redirects(`),
exception names, each traceback frame's function, and the file and folder names of the paths it
mentions. A short query (a question, a few identifiers) is left exactly as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ISSUES = "issues"  # the [search] query_features value that reads an issue as below (scoring.candidates.QUERY_FEATURES)
LONG = 60  # words: a query at least this long, or holding a code block or a traceback, is read as an issue

_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.S)
_WORDS = re.compile(r"\S+")
# Python traceback frames: CPython's `File "x.py", line 3, in f`, IPython's `x.py:3, in C.f(...)` and
# `x.py in f(...)`.
_FRAME = re.compile(r"""(?:File\s+"?([^",\s]+\.py)"?(?:,\s*line\s+\d+|:\d+),\s+in\s+([\w.<>]+))|(?:([\w./\\~-]+\.py)\s+in\s+([\w.]+)\()""")
_TRACEBACK_LINE = re.compile(r"^\s*(?:File\s|-+>|\d+\s|Traceback\b|\.\.\.|\[?[\w.~/\\:-]+\.py\]?)")
_PATH = re.compile(r"(?<![\w/\\.-])((?:[\w.-]+[/\\])*[\w-]+\.[A-Za-z]{1,5})(?![\w/\\])")
_CODE_EXT = re.compile(r"\.(?:py|pyi|pyx|js|jsx|ts|tsx|go|rs|java|kt|c|h|cc|cpp|hpp|rb|php|cs|swift|scala|lua|sh)$")
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_EXCEPTION = re.compile(r"\b\w*(?:Error|Exception|Warning)\b")
_SITE = re.compile(r".*(?:site-packages|dist-packages|lib/python[\d.]*)[/\\]")


@dataclass(frozen=True)
class QueryFeatures:
    prose: str                  # the text outside code blocks and traceback lines
    names: tuple[str, ...]      # code-shaped names, in the order first seen
    paths: tuple[str, ...]      # paths of code files it mentions (site-packages prefixes cut)


def _code_shaped(name: str) -> bool:
    inner_capital = any(c.isupper() for c in name[1:]) and any(c.islower() for c in name)
    return "_" in name.strip("_") or inner_capital or "." in name


def is_issue(text: str) -> bool:
    """Whether `text` reads as an issue or a paste rather than a question or a few names."""
    return "```" in text or "Traceback" in text or bool(_FRAME.search(text)) or len(_WORDS.findall(text)) >= LONG


def features(text: str) -> QueryFeatures:
    blocks = [m.group(1) for m in _FENCE.finditer(text)]
    outside = _FENCE.sub("\n", text)
    prose_lines: list[str] = []
    code_lines = list(blocks)
    for line in outside.splitlines():
        (code_lines if _TRACEBACK_LINE.match(line) else prose_lines).append(line)
    code = "\n".join(code_lines)
    paths = [_SITE.sub("", m.group(1) or m.group(3)).replace("\\", "/") for m in _FRAME.finditer(text)]
    paths += [p.replace("\\", "/") for p in _PATH.findall(text) if _CODE_EXT.search(p)]
    names = [m.group(2) or m.group(4) for m in _FRAME.finditer(text)]
    names += _EXCEPTION.findall(text) + _DOTTED.findall(text) + _CALLED.findall(code)
    names += [n for n in _NAME.findall(text) if _code_shaped(n)]
    kept = [n for n in dict.fromkeys(names) if n and not _CODE_EXT.search(n)]
    return QueryFeatures("\n".join(prose_lines), tuple(kept), tuple(dict.fromkeys(_SITE.sub("", p) for p in paths)))


def _path_words(path: str) -> str:
    """A path's file stem and its folder: the words a module's chunks carry in their header."""
    parts = path.strip("/").split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    return " ".join([*parts[-2:-1], stem])


def lexical_text(text: str) -> str:
    """The text BM25 searches with: an issue's prose and the code-shaped names and path words found in
    it; any other query unchanged."""
    if not is_issue(text):
        return text
    f = features(text)
    return "\n".join([f.prose, " ".join(f.names), " ".join(_path_words(p) for p in f.paths)])
