"""Split a file's text into byte-exact chunks that fit the embedder's token window.

Every chunk is a contiguous slice of the file: ``chunk.text == data[byte_start:byte_end].decode()``,
with 1-based inclusive line numbers. Chunks are in order, never overlap, are trimmed of whitespace
at their edges, and together cover every non-whitespace character of the file -- except base64
data-URI payloads (below) and a markdown file's YAML frontmatter, which is metadata
(ragx/ingest/frontmatter.py): its title, description, aliases and tags become every chunk's
`header`, embedded and indexed in front of the chunk's text (`Chunk.embed_text`) but never part
of what a result shows. (Every chunk, not the first only: on
dendron-vault train that lifted dense nDCG@10 by +0.025 more; research/2026-11-30-vault-and-links.md.) A note that is all frontmatter
gets one chunk: its description (or title) value, a byte-exact slice like any other.

Base64 data URIs (``data:image/png;base64,iVBORw0K...`` with a payload of 64 or more base64
characters, standard or URL-safe, in a markdown image, a CSS ``url()``, an HTML ``src``...) are
left out whole, ``data:`` to padding, because the payload is binary, not text: embedding and
BM25-indexing it costs time and only brings back junk. Each one is cut out like whitespace at a
chunk's edge: no chunk spans it, packing never merges across it, and what is left on either side
(``![logo](``, ``) more text``) is chunked as usual; a file that is only a payload has no chunks.
Whitespace ends a payload (the alphabet holds every letter and digit, so a payload allowed to run
on across whitespace would swallow the words after it): of a line-wrapped payload, only the part
up to the first line break is left out. Short and non-base64 data URIs (``data:text/plain,hi``)
are ordinary text. The pattern lives in ragx/ingest/payloads.py; the tokenizer reads the text with
each payload shrunk to one space, and a frontmatter header drops them, so no payload is ever tokenized
or embedded.

How a file is cut depends on its kind:

* ``markdown`` -- ATX headings (outside fenced code blocks) start sections; a heading stays with
  the start of its section's body; small neighbouring sections merge up to the target size.
* ``code`` -- in a language with a tree-sitter grammar (Python, JavaScript/TypeScript, Go, Rust, Java,
  C/C++: ragx/ingest/code.py), one chunk per function, method or class, named in the chunk's header;
  otherwise top-level definitions start units (Python: ``def``/``class``/``async def`` with their
  decorators and leading comments; other languages: a column-0 line after a blank line).
* ``text`` -- no structure beyond the generic fallback.

Anything too big is split recursively: blank-line paragraphs, then lines, then sentences (prose),
then words, then a hard cut at token boundaries. Sizes are estimated from a single tokenisation
of the whole file (token start offsets + binary search); the final chunks are then counted for
real in one batched call, and any chunk over ``max_tokens`` is split again until all fit.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ragx.ingest import code, frontmatter, payloads
from ragx.ingest.filetypes import CODE, MARKDOWN, TEXT, kind_for_path
from ragx.models.base import TokenCounter  # the embedder's own tokenizer sizes the chunks

__all__ = ["Chunk", "ChunkSettings", "TokenCounter", "chunk_text", "detect_kind"]


@dataclass(frozen=True)
class ChunkSettings:
    max_tokens: int = 254  # hard cap in content tokens (the model's 256 minus [CLS]/[SEP])
    target_tokens: int = 200  # aim for chunks about this size
    min_tokens: int = 48  # pieces smaller than this merge with a neighbour when they fit


@dataclass(frozen=True)
class Chunk:
    ordinal: int  # 0.. within the file
    byte_start: int
    byte_end: int  # exclusive
    line_start: int  # 1-based inclusive
    line_end: int  # 1-based inclusive
    text: str
    n_tokens: int
    kind: str  # "markdown" | "code" | "text"
    header: str = ""  # what the file's frontmatter says about it (every chunk of the note); not part of `text`
    header_tokens: int = 0  # the header's tokens: embed_text has n_tokens + header_tokens (whitespace joins them)

    @property
    def embed_text(self) -> str:
        """What is embedded and indexed for BM25: the header (if any), a blank line, the text."""
        return f"{self.header}\n\n{self.text}" if self.header else self.text

    @property
    def embed_tokens(self) -> int:
        """Tokens of `embed_text` (before the model's truncation): what orders the embedding batches."""
        return self.n_tokens + self.header_tokens


# --------------------------------------------------------------------------------------------
# character classes

# \s in a str pattern matches exactly the characters for which str.isspace() is true
_NONWS = re.compile(r"\S")

# split points: each regex match ends where the next piece begins
_PARAGRAPHS = re.compile(r"\n(?:[^\S\n]*\n)+")
_LINES = re.compile(r"\n")
_SENTENCES = re.compile(r"[.!?][\"'\u201d\u2019)\]]*\s+|[\u3002\uff01\uff1f]\s*")
_WORDS = re.compile(r"\s+")

# markdown: ATX headings and code fences (up to three spaces of indentation)
_MD_MARKERS = re.compile(
    r"^ {0,3}(?:(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)|(?P<heading>#{1,6})(?=[ \t\r\n]|$))",
    re.MULTILINE,
)
_MD_HEADING_LINE = re.compile(r"^#{1,6}[ \t]+\S", re.MULTILINE)

# code: Python definitions, and for other languages a column-0 line after a blank line that does
# not close a block
_PY_DEF = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]", re.MULTILINE)
_CODE_BLOCK_START = re.compile(r"\n(?:[^\S\n]*\n)+(?=[^\s)\]}])")

_PYTHON_EXTS = (".py", ".pyi", ".pyx", ".pyw")


def detect_kind(path: str, text: str) -> str:
    """The chunking kind of a file: by extension, except that extension-less and .txt files that
    look like markdown (two or more ATX headings) are chunked as markdown."""
    kind = kind_for_path(path)
    if kind == TEXT:
        name = path.rsplit("/", 1)[-1].lower()
        if ("." not in name.lstrip(".") or name.endswith(".txt")) and _has_markdown_headings(text):
            return MARKDOWN
    return kind


def _has_markdown_headings(text: str) -> bool:
    found = 0
    for _ in _MD_HEADING_LINE.finditer(text):
        found += 1
        if found >= 2:
            return True
    return False


# --------------------------------------------------------------------------------------------
# the working state for one file

Span = tuple[int, int]  # [start, end) in characters
Level = Callable[["_Doc", int, int, int], list[int]]


class _Doc:
    def __init__(self, text: str, data: bytes, offsets: np.ndarray, settings: ChunkSettings, blobs: list[tuple[int, int]]):
        self.text = text
        self.data = data
        self.n = len(text)
        self.settings = settings
        self._rtext: str | None = None
        offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        starts = offsets[:, 0]
        if len(starts) > 1:
            starts = np.maximum.accumulate(starts)
        # base64 data-URI payloads, [start, end) in characters, in order; never part of a chunk. The
        # offsets come from a tokenization that never read them (_token_offsets): no token starts inside
        # one, so sizes (and so structure, packing and splitting) are those of the text actually chunked.
        self.blob_starts = [s for s, _ in blobs]
        self.blob_ends = [e for _, e in blobs]
        self.ts: list[int] = starts.tolist()

    # ---- measuring

    def est(self, a: int, b: int) -> int:
        """Estimated tokens in text[a:b]: tokens of the whole-file tokenisation starting there."""
        ts = self.ts
        return bisect_left(ts, b) - bisect_left(ts, a)

    def trim(self, a: int, b: int) -> Span | None:
        """[a, b) without leading and trailing whitespace (str.isspace), or None if blank."""
        m = _NONWS.search(self.text, a, b)
        if m is None:
            return None
        if self._rtext is None:
            self._rtext = self.text[::-1]
        n = self.n
        m2 = _NONWS.search(self._rtext, n - b, n - m.start())
        assert m2 is not None
        return m.start(), n - m2.start()

    def cut_blobs(self, spans: list[Span]) -> list[Span]:
        """The spans with every base64 payload cut out, like whitespace at the edges: a span with
        payloads inside becomes the trimmed non-blank pieces around them (a payload-only span
        none)."""
        if not self.blob_starts:
            return spans
        bs, be = self.blob_starts, self.blob_ends
        out: list[Span] = []
        for a, b in spans:
            k = bisect_right(be, a)  # the first payload that ends after a
            prev = a
            while k < len(bs) and bs[k] < b:
                t = self.trim(prev, bs[k])
                if t is not None:
                    out.append(t)
                prev = max(prev, be[k])
                k += 1
            t = self.trim(prev, b) if prev > a else (a, b)
            if t is not None:
                out.append(t)
        return out

    def blob_between(self, a: int, b: int) -> bool:
        """Whether a base64 payload starts in [a, b)."""
        k = bisect_left(self.blob_starts, a)
        return k < len(self.blob_starts) and self.blob_starts[k] < b

    def pieces(self, a: int, b: int, cuts: Sequence[int]) -> list[Span]:
        out = []
        prev = a
        for c in cuts:
            t = self.trim(prev, c)
            if t is not None:
                out.append(t)
            prev = c
        t = self.trim(prev, b)
        if t is not None:
            out.append(t)
        return out

    # ---- splitting

    def split(self, a: int, b: int, levels: Sequence[Level], budget: int) -> list[Span]:
        """Split the trimmed span [a, b) into trimmed spans of at most `budget` estimated tokens,
        trying each level of separators in turn, and pack the pieces back towards the target."""
        if self.est(a, b) <= budget:
            return [(a, b)]
        for i, level in enumerate(levels):
            parts = self.pieces(a, b, level(self, a, b, budget))
            if len(parts) > 1:
                deeper = levels[i + 1 :]
                out: list[Span] = []
                for s, e in parts:
                    if self.est(s, e) <= budget:
                        out.append((s, e))
                    else:
                        out.extend(self.split(s, e, deeper, budget))
                return self.pack(out, budget, balance=True)
        return self.pack(self.pieces(a, b, _token_cuts(self, a, b, budget)), budget, balance=True)

    def pack(self, units: list[Span], budget: int, balance: bool = False) -> list[Span]:
        """Merge neighbouring units while the result stays within the target (or, for a unit
        smaller than min_tokens, within the budget). With `balance`, aim at equal shares of the
        span instead of filling up to the target, so that a split leaves no small remainder.
        Base64 payloads are cut out of the units first, and never merged across."""
        units = self.cut_blobs(units)
        if len(units) <= 1:
            return units
        st = self.settings
        target = max(1, min(st.target_tokens, budget))
        small = min(st.min_tokens, budget)
        est = self.est
        goal = float(target)
        if balance:
            total = est(units[0][0], units[-1][1])
            goal = total / max(1, -(-total // target))
        out: list[Span] = []
        cs, ce = units[0]
        for k in range(1, len(units)):
            s, e = units[k]
            merged = est(cs, e)
            if merged > budget or self.blob_between(ce, s):
                fits = False
            else:
                cur = est(cs, ce)
                fits = cur < small or (
                    merged <= target and (merged <= goal or merged - goal < goal - cur)
                )
            if fits:
                ce = e
            else:
                out.append((cs, ce))
                cs, ce = s, e
        out.append((cs, ce))
        if len(out) > 1:
            (ps, _), (ls, le) = out[-2], out[-1]
            if est(ls, le) < small and est(ps, le) <= budget and not self.blob_between(ps, ls):
                out[-2:] = [(ps, le)]
        return out

    # ---- positions -> bytes and lines

    def locate(self, spans: list[Span]) -> tuple[list[int], list[int], list[int], list[int]]:
        """Byte offsets and 1-based line numbers of character spans, vectorised."""
        pos = np.fromiter((p for s in spans for p in s), dtype=np.int64, count=2 * len(spans))
        raw = np.frombuffer(self.data, dtype=np.uint8)
        if len(self.data) == self.n:  # ASCII: characters are bytes
            bpos = pos
        else:
            # the byte offset of character i is the position of the i-th byte that is not a
            # UTF-8 continuation byte (0b10xxxxxx); character n maps to the end of the data
            lead = np.flatnonzero((raw & 0xC0) != 0x80)
            byte_of = np.append(lead, len(self.data))
            bpos = byte_of[pos]
        bstart, bend = bpos[0::2], bpos[1::2]
        newlines = np.flatnonzero(raw == 10)
        lstart = 1 + np.searchsorted(newlines, bstart, side="left")
        lend = 1 + np.searchsorted(newlines, bend - 1, side="left")
        return bstart.tolist(), bend.tolist(), lstart.tolist(), lend.tolist()


# --------------------------------------------------------------------------------------------
# levels of separators


def _regex_level(pattern: re.Pattern[str]) -> Level:
    def level(doc: _Doc, a: int, b: int, budget: int) -> list[int]:
        return [m.end() for m in pattern.finditer(doc.text, a, b) if a < m.end() < b]

    return level


def _token_cuts(doc: _Doc, a: int, b: int, budget: int) -> list[int]:
    """Hard cut: every `step` tokens of the whole-file tokenisation, at token starts."""
    ts = doc.ts
    i0, i1 = bisect_left(ts, a), bisect_left(ts, b)
    step = max(1, min(doc.settings.target_tokens, budget))
    cuts = []
    last = a
    for i in range(i0 + step, i1, step):
        c = ts[i]
        if last < c < b:
            cuts.append(c)
            last = c
    return cuts


_PARAGRAPH_LEVEL = _regex_level(_PARAGRAPHS)
_LINE_LEVEL = _regex_level(_LINES)
_SENTENCE_LEVEL = _regex_level(_SENTENCES)
_WORD_LEVEL = _regex_level(_WORDS)

_PROSE_LEVELS: tuple[Level, ...] = (_PARAGRAPH_LEVEL, _LINE_LEVEL, _SENTENCE_LEVEL, _WORD_LEVEL)
_CODE_LEVELS: tuple[Level, ...] = (_PARAGRAPH_LEVEL, _LINE_LEVEL, _WORD_LEVEL)


# --------------------------------------------------------------------------------------------
# structure per kind


def _markdown_units(doc: _Doc, budget: int, begin: int = 0) -> list[Span]:
    """Sections start at ATX headings outside fenced code blocks. A section over the budget is
    split; its heading line is then fused with the first piece of its body. `begin`: where the
    body starts (past any frontmatter)."""
    text = doc.text
    starts = [begin]
    heading_at = set()
    fence: tuple[str, int] | None = None
    for m in _MD_MARKERS.finditer(text, begin):
        marker = m.group("fence")
        if marker is not None:
            info = m.group("info")
            if fence is None:
                if marker[0] == "`" and "`" in info:
                    continue  # not a fence: backtick fences cannot have backticks in the info
                fence = (marker[0], len(marker))
            elif marker[0] == fence[0] and len(marker) >= fence[1] and not info.strip():
                fence = None
        elif fence is None:
            heading_at.add(m.start())
            if m.start() > begin:
                starts.append(m.start())
    starts.append(doc.n)

    units: list[Span] = []
    for k in range(len(starts) - 1):
        sec = doc.trim(starts[k], starts[k + 1])
        if sec is None:
            continue
        a, b = sec
        if doc.est(a, b) <= budget:
            units.append(sec)
            continue
        head = body = None
        if starts[k] in heading_at:
            nl = text.find("\n", a, b)
            if nl >= 0:
                head, body = doc.trim(a, nl + 1), doc.trim(nl + 1, b)
        h = doc.est(*head) if head is not None and body is not None else budget
        if h > budget // 2:  # no heading, no body, or a heading too long to fuse
            units.extend(doc.split(a, b, _PROSE_LEVELS, budget))
            continue
        assert head is not None and body is not None
        parts = doc.split(body[0], body[1], _PROSE_LEVELS, budget - h)
        units.append((head[0], parts[0][1]))  # the heading stays with the start of its body
        units.extend(parts[1:])
    return units


def _python_block_starts(text: str) -> list[int]:
    """Start of each top-level def/class, moved up over its decorators and leading comments."""
    starts: list[int] = []
    for m in _PY_DEF.finditer(text):
        cut = pos = m.start()
        pending = False  # inside indented/closing lines of a multi-line decorator call
        for _ in range(200):
            if pos == 0:
                break
            prev = text.rfind("\n", 0, pos - 1) + 1
            line = text[prev:pos]
            if not line.strip():
                break
            first = line[0]
            if first == "@":
                cut, pending = prev, False
            elif first == "#" and not pending:
                cut = prev
            elif first in " \t)]}":
                pending = True
            else:
                break
            pos = prev
        if cut > 0 and (not starts or cut > starts[-1]):
            starts.append(cut)
    return starts


def _code_units(doc: _Doc, path: str, budget: int) -> list[Span]:
    text = doc.text
    if path.lower().endswith(_PYTHON_EXTS):
        cuts = _python_block_starts(text)
    else:
        cuts = [m.end() for m in _CODE_BLOCK_START.finditer(text)]
    units: list[Span] = []
    for a, b in doc.pieces(0, doc.n, cuts):
        if doc.est(a, b) <= budget:
            units.append((a, b))
        else:
            units.extend(doc.split(a, b, _CODE_LEVELS, budget))
    return units


def _bisect(doc: _Doc, a: int, b: int) -> list[Span]:
    """Last resort for a span whose real token count disagrees with the estimate: halve it,
    preferring whitespace near the middle."""
    mid = (a + b) // 2
    m = _WORDS.search(doc.text, mid, b)
    cut = m.end() if m is not None and m.end() < b else mid
    if not a < cut < b:
        cut = mid
    if not a < cut < b:
        return [(a, b)]
    return doc.pieces(a, b, [cut])


def _token_offsets(counter: TokenCounter, text: str, blobs: list[tuple[int, int]]) -> np.ndarray:
    """The tokenizer's (start, end) character offsets over `text`, its payloads unread: it reads the text
    with each payload shrunk to one space (a 5 MB inline image would be millions of word pieces that no
    chunk holds: 19 s and 1.2 GB), and the offsets are mapped back."""
    if not blobs:
        return counter.token_offsets(text)
    short, shift = payloads.shrunk(text, blobs)
    offsets = np.asarray(counter.token_offsets(short), dtype=np.int64).reshape(-1, 2)
    return payloads.unshrink(offsets, blobs, shift)


def _frontmatter_spans(doc: _Doc, fm: frontmatter.Frontmatter, budget: int) -> list[Span]:
    """A note with frontmatter: its body cut as markdown; with no body, its description's (else
    its title's) value, so that the note can still be found and shows prose, not YAML."""
    if doc.trim(fm.end, doc.n) is not None:
        return doc.pack(_markdown_units(doc, budget, fm.end), budget)
    values = {key: (a, b) for key, a, b in reversed(fm.value_spans)}
    for key in ("desc", "description", "title"):
        if key in values:
            span = doc.trim(*values[key])
            # a value that is only a payload says nothing: the next key speaks for the note
            pieces = doc.cut_blobs([span]) if span is not None else []
            if pieces:
                return [s for a, b in pieces for s in doc.split(a, b, _PROSE_LEVELS, budget)]
    return []


def _fit_real_counts(
    doc: _Doc, spans: list[Span], levels: Sequence[Level], counter: TokenCounter, max_tokens: int
) -> tuple[list[Span], list[int]]:
    """Count the spans with the real tokenizer, in batches; split again whatever the estimate got
    wrong, until every span fits (or is a single character over the cap)."""
    text = doc.text
    counts = [int(c) for c in counter.count([text[a:b] for a, b in spans])]
    stuck: set[Span] = set()  # single characters over the cap (impossible with a sane tokenizer)
    while any(c > max_tokens and span not in stuck for span, c in zip(spans, counts, strict=True)):
        new_spans: list[Span] = []
        new_counts: list[int] = []
        for (a, b), c in zip(spans, counts, strict=True):
            if c <= max_tokens or (a, b) in stuck:
                new_spans.append((a, b))
                new_counts.append(c)
                continue
            estimate = doc.est(a, b)
            budget = max(1, min(estimate - 1, estimate * max_tokens // c - 1))
            parts = doc.split(a, b, levels, budget) if estimate > budget else [(a, b)]
            if len(parts) <= 1:
                parts = _bisect(doc, a, b)
            if len(parts) <= 1:
                stuck.add((a, b))
                new_spans.append((a, b))
                new_counts.append(c)
                continue
            new_spans.extend(parts)
            new_counts.extend([-1] * len(parts))
        todo = [k for k, c in enumerate(new_counts) if c < 0]
        fresh = counter.count([text[new_spans[k][0] : new_spans[k][1]] for k in todo])
        for k, c in zip(todo, fresh, strict=True):
            new_counts[k] = int(c)
        spans, counts = new_spans, new_counts
    return spans, counts


def _first_spans(doc: _Doc, kind: str, path: str, fm, max_tokens: int) -> tuple[list[Span], Sequence[Level]]:
    """The structural cut of a file by kind (before the real token counts are checked), and the
    levels of separators that split a span further."""
    if fm is not None:
        return _frontmatter_spans(doc, fm, max_tokens), _PROSE_LEVELS
    if kind == MARKDOWN:
        return doc.pack(_markdown_units(doc, max_tokens), max_tokens), _PROSE_LEVELS
    if kind == CODE:
        return doc.pack(_code_units(doc, path, max_tokens), max_tokens), _CODE_LEVELS
    span = doc.trim(0, doc.n)
    assert span is not None
    return doc.split(span[0], span[1], _PROSE_LEVELS, max_tokens), _PROSE_LEVELS


# --------------------------------------------------------------------------------------------
# entry point


def chunk_text(
    path: str,
    data: bytes,
    text: str,
    counter: TokenCounter,
    settings: ChunkSettings = ChunkSettings(),
    *,
    kind: str | None = None,
) -> list[Chunk]:
    """Chunk one file. `data` is the file's bytes and `text` their UTF-8 decoding; `path` (POSIX,
    relative) picks the kind unless `kind` is given."""
    if not text or text.isspace():
        return []
    if kind is None:
        kind = detect_kind(path, text)
    elif kind not in (MARKDOWN, CODE, TEXT):
        raise ValueError(f"unknown chunking kind {kind!r}; expected markdown, code or text")
    max_tokens = max(1, settings.max_tokens)
    blobs = payloads.spans(text)
    doc = _Doc(text, data, _token_offsets(counter, text, blobs), settings, blobs)

    defs = code.definitions(path, data, text) if kind == CODE else None
    if defs is not None:
        spans, counts, headers = _syntax_chunks(doc, path, defs, counter, max_tokens)
    else:
        fm = frontmatter.parse(text) if kind == MARKDOWN else None
        spans, levels = _first_spans(doc, kind, path, fm, max_tokens)
        # spans that went through no packing (a small file or section) may still hold a payload
        spans = doc.cut_blobs(spans)
        spans, counts = _fit_real_counts(doc, spans, levels, counter, max_tokens) if spans else ([], [])
        headers = [fm.header() if fm is not None else ""] * len(spans)
    if not spans:
        return []
    bstart, bend, lstart, lend = doc.locate(spans)
    header_tokens = _header_tokens(counter, headers)
    return [
        Chunk(
            ordinal=i,
            byte_start=bstart[i],
            byte_end=bend[i],
            line_start=lstart[i],
            line_end=lend[i],
            text=text[a:b],
            n_tokens=counts[i],
            kind=kind,
            header=headers[i],
            header_tokens=header_tokens[headers[i]],
        )
        for i, (a, b) in enumerate(spans)
    ]


def _header_tokens(counter: TokenCounter, headers: list[str]) -> dict[str, int]:
    """Tokens of each distinct header (a note's frontmatter header is every chunk's: counted once)."""
    distinct = sorted(set(headers) - {""})
    return {"": 0} | dict(zip(distinct, (int(c) for c in counter.count(distinct)) if distinct else (), strict=True))


def _syntax_chunks(doc: _Doc, path: str, defs: list[code.Definition], counter: TokenCounter,
                   max_tokens: int) -> tuple[list[Span], list[int], list[str]]:
    """Code cut by its syntax (ragx/ingest/code.py): spans, their real token counts and headers. An
    eighth of the window is kept for the header, embedded in front of the text."""
    st = doc.settings
    budget = max(1, max_tokens - max_tokens // 8)
    units = code.syntax_units(doc, defs, budget, _CODE_LEVELS)
    units = code.merge_small(doc, units, min(st.min_tokens, budget), max(1, min(st.target_tokens, budget)))
    owned = [(piece, u.owners) for u in units for piece in doc.cut_blobs([u.span])]
    if not owned:
        return [], [], []
    spans, counts = _fit_real_counts(doc, [p for p, _ in owned], _CODE_LEVELS, counter, budget)
    starts = [p[0] for p, _ in owned]  # a span the real counts split lies within one unit
    owners = [owned[bisect_right(starts, a) - 1][1] for a, _ in spans]
    return spans, counts, [code.header(path, defs, o, span) for o, span in zip(owners, spans, strict=True)]
