"""Base64 data-URI payloads: binary inlined in text (an image or font as `data:image/png;base64,…`).

One rule for every reader of a file's text: the chunker leaves payloads out of chunks
(ragx/ingest/chunk.py), the tokenizer never sees them, and a frontmatter header drops them
(ragx/ingest/frontmatter.py). Embedding or indexing a payload costs time and only brings back junk.

A payload is `data:[<type>/<subtype>][;param=value...];base64,` then 64 or more characters of the
standard or URL-safe base64 alphabet with optional `=` padding and no whitespace (the alphabet holds
every letter and digit, so a payload allowed to run on across whitespace would swallow the words after
it). The media type may be empty (RFC 2397), and a JSON string escapes every `/` as `\\/` (in the type
and in the payload alike). Not preceded by a URI scheme character, so `metadata:` is not one. ASCII:
with IGNORECASE alone, [A-Za-z] would also match a few non-ASCII letters (K, ſ, İ, ı).
"""

from __future__ import annotations

import re

import numpy as np

MIN_CHARS = 64
_MIME_TOKEN = r"[A-Za-z0-9!#$&^_.+-]+"
_SLASH = r"\\?/"
_B64 = r"[A-Za-z0-9+_-]"
# The payload is written as runs of the alphabet joined by (escaped) slashes, its length checked by a
# bounded lookahead: `(?:[…]|\\?/){64,}` says the same, but Python's engine keeps state for every
# repetition of a group (700 MB and 0.7 s for one 5 MB payload), and none for a character-class run.
BASE64_URI = re.compile(
    rf"(?<![A-Za-z0-9+.-])data:(?:{_MIME_TOKEN}{_SLASH}{_MIME_TOKEN})?(?:;{_MIME_TOKEN}=[^;,\s]*)*"
    rf";base64,(?=(?:{_B64}|{_SLASH}){{{MIN_CHARS}}}){_B64}*(?:{_SLASH}{_B64}*)*={{0,2}}",
    re.IGNORECASE | re.ASCII,
)
_SPACES = re.compile(r"[ \t]{2,}")


def spans(text: str) -> list[tuple[int, int]]:
    """[start, end) in characters of every payload of `text`, in order."""
    return [m.span() for m in BASE64_URI.finditer(text)]


def shrunk(text: str, found: list[tuple[int, int]]) -> tuple[str, np.ndarray]:
    """`text` with each payload of `found` (from `spans`) shrunk to one space, for a reader (the
    tokenizer) that must not read payloads, and `shift`: to map a position p of the shrunk text back,
    add `shift[k]`, k = how many payloads start (in the shrunk text) before p (`unshrink`)."""
    lengths = np.array([b - a for a, b in found], dtype=np.int64)
    shift = np.concatenate([[0], np.cumsum(lengths - 1)])
    parts, prev = [], 0
    for a, b in found:
        parts += [text[prev:a], " "]
        prev = b
    parts.append(text[prev:])
    return "".join(parts), shift


def unshrink(positions: np.ndarray, found: list[tuple[int, int]], shift: np.ndarray) -> np.ndarray:
    """Positions in `shrunk`'s text mapped back to the original text (vectorised)."""
    starts = np.array([a for a, _ in found], dtype=np.int64) - shift[:-1]  # each payload's space, shrunk
    return positions + shift[np.searchsorted(starts, positions, side="left")]


def removed(text: str) -> str:
    """`text` without its payloads (a run of spaces left where one was becomes one), stripped."""
    out, n = BASE64_URI.subn("", text)
    return _SPACES.sub(" ", out).strip() if n else text.strip()
