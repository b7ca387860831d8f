from __future__ import annotations

import base64
import os
import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragx.ingest.chunk import (
    Chunk,
    ChunkSettings,
    TokenCounter,
    chunk_text,
    detect_kind,
)

try:
    from tests.wordpiece import WhitespaceCounter, wordpiece_counter
except ImportError:  # tests/ itself on sys.path (pytest's default rootdir handling)
    from wordpiece import WhitespaceCounter, wordpiece_counter


@pytest.fixture(scope="module")
def wp():
    return wordpiece_counter()


WS = WhitespaceCounter()

# base64 data URIs with a payload of 64+ characters, which no chunk may contain (written here on
# bytes, independently of ragx.ingest.chunk's pattern on str)
# (the media type may be empty, and `/` may be JSON-escaped as `\/`)
_B64_URI = re.compile(
    rb"(?<![A-Za-z0-9+.-])data:(?:[A-Za-z0-9!#$&^_.+-]+\\?/[A-Za-z0-9!#$&^_.+-]+)?"
    rb"(?:;[A-Za-z0-9!#$&^_.+-]+=[^;,\s]*)*;base64,(?:[A-Za-z0-9+_-]|\\?/){64,}={0,2}",
    re.IGNORECASE,
)


def without_payloads(data: bytes) -> bytes:
    """`data` with every base64 data-URI payload blanked out (same length, so same offsets)."""
    return _B64_URI.sub(lambda m: b" " * len(m.group()), data)


def check_chunks(data: bytes, chunks: list[Chunk], counter: TokenCounter, cfg: ChunkSettings,
                 kind: str | None = None) -> None:
    """Every invariant chunk_text promises. Base64 data-URI payloads count as whitespace: never in a
    chunk, and left out of what the chunks must cover."""
    masked = without_payloads(data)
    text = masked.decode("utf-8")
    prev_end = 0
    for i, c in enumerate(chunks):
        assert c.ordinal == i
        if kind is not None:
            assert c.kind == kind
        # byte-exact
        assert 0 <= c.byte_start < c.byte_end <= len(data)
        assert data[c.byte_start : c.byte_end].decode("utf-8") == c.text
        # no base64 payload inside (not even part of one)
        assert masked[c.byte_start : c.byte_end] == data[c.byte_start : c.byte_end], c
        # ordered, non-overlapping; gaps are whitespace (or payloads) only
        assert c.byte_start >= prev_end
        gap = masked[prev_end : c.byte_start].decode("utf-8")
        assert gap == "" or gap.isspace(), (gap, c)
        prev_end = c.byte_end
        # trimmed edges
        assert not c.text[0].isspace() and not c.text[-1].isspace()
        # 1-based inclusive lines
        assert c.line_start == 1 + data.count(b"\n", 0, c.byte_start)
        assert c.line_end == 1 + data.count(b"\n", 0, c.byte_end - 1)
        assert c.line_start <= c.line_end
    tail = masked[prev_end:].decode("utf-8")
    assert tail == "" or tail.isspace()
    # coverage of all non-whitespace content, payloads excepted
    assert "".join("".join(c.text.split()) for c in chunks) == "".join(text.split())
    # token budget, counted for real on the chunk text
    if chunks:
        counts = counter.count([c.text for c in chunks])
        assert [c.n_tokens for c in chunks] == [int(x) for x in counts]
        assert max(counts) <= cfg.max_tokens, counts
    else:
        assert text == "" or text.isspace()


def run(path, text, counter, cfg=None, kind=None):
    cfg = cfg or ChunkSettings()
    data = text.encode("utf-8")
    chunks = chunk_text(path, data, text, counter, cfg, kind=kind)
    check_chunks(data, chunks, counter, cfg, kind)
    return chunks


# --------------------------------------------------------------------------------------------
# property tests over arbitrary text

_ALPHABET = st.characters(
    codec="utf-8",
    exclude_categories=("Cs",),
)
_WORDISH = st.sampled_from(
    ["alpha", "beta", "gamma", "déjà", "naïve", "🎉", "👩‍👩‍👧", "e\u0301", "漢字", "ok.", "end!",
     "x_y", "foo(bar)", "1.5", "#tag", "```", "~~~", "\t", "   ", "\u00a0", "\u2028", "\x0b"]
)
_FREE = st.text(alphabet=_ALPHABET, max_size=30)
# base64 data URIs on both sides of the 64-character threshold, glued to what is around them
_B64_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_"
_DATA_URI = st.builds(
    lambda head, mime, payload, pad, tail, escape: (
        f"{head}data:{mime};base64,{payload}{pad}{tail}".replace("/", "\\/" if escape else "/")
    ),
    st.sampled_from(["", "![x](", "url(", 'src="', "meta", " "]),
    st.sampled_from(["image/png", "font/woff2", "image/svg+xml;charset=utf-8", "IMAGE/PNG", ""]),
    st.text(alphabet=_B64_CHARS, min_size=60, max_size=200),
    st.sampled_from(["", "=", "=="]),
    st.sampled_from(["", ")", '">', ") more", "x", "\n"]),
    st.booleans(),  # as inside a JSON string, every `/` written `\/`
)
_WORDS = st.lists(st.one_of(_WORDISH, _FREE, _DATA_URI), max_size=12).map(" ".join)
_LINE = st.one_of(
    _WORDS,
    _WORDS.map(lambda s: "# " + s),
    _WORDS.map(lambda s: "### " + s),
    st.just("```python"),
    st.just("```"),
    st.just(""),
    st.just("   "),
    _WORDS.map(lambda s: "def f_" + str(len(s)) + "():"),
    _WORDS.map(lambda s: "    return " + s),
    st.just("@decorator"),
    st.just("class K:"),
    _WORDS.map(lambda s: "    " + s),
    _WORDS.map(lambda s: "fn main() { " + s),
    st.just("}"),
)
_DOC = st.tuples(
    st.lists(_LINE, max_size=40),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
    st.booleans(),
).map(lambda t: ("\ufeff" if t[2] else "") + t[1].join(t[0]) + (t[1] if t[3] else ""))
_ANY_TEXT = st.one_of(_DOC, st.text(alphabet=_ALPHABET, max_size=400))


@st.composite
def _settings(draw):
    max_tokens = draw(st.integers(4, 60))
    target = draw(st.integers(1, max_tokens))
    min_tokens = draw(st.integers(0, target))
    return ChunkSettings(max_tokens=max_tokens, target_tokens=target, min_tokens=min_tokens)


# RAGX_HYPOTHESIS_EXAMPLES=5000 for a thorough local run
_EXAMPLES = int(os.environ.get("RAGX_HYPOTHESIS_EXAMPLES", "250"))
_PROPS = settings(
    max_examples=_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.mark.parametrize(
    "path,kind",
    [("doc.md", "markdown"), ("mod.py", "code"), ("main.rs", "code"), ("notes.txt", "text")],
)
@_PROPS
@given(text=_ANY_TEXT, cfg=_settings())
def test_properties_wordpiece(wp, path, kind, text, cfg):
    run(path, text, wp, cfg, kind=kind)


@_PROPS
@given(text=_ANY_TEXT, cfg=_settings(), kind=st.sampled_from(["markdown", "code", "text"]))
def test_properties_whitespace_counter(text, cfg, kind):
    path = {"markdown": "f.md", "code": "f.py", "text": "f.txt"}[kind]
    run(path, text, WS, cfg, kind)


class LyingCounter:
    """Token offsets that under-count (every third token only), so that the estimate is wrong and
    only the verification pass keeps chunks under the cap."""

    def __init__(self, inner):
        self.inner = inner

    def token_offsets(self, text):
        return self.inner.token_offsets(text)[::3]

    def count(self, texts):
        return self.inner.count(texts)


@settings(max_examples=max(1, _EXAMPLES // 2), deadline=None)
@given(text=_ANY_TEXT, cfg=_settings(), kind=st.sampled_from(["markdown", "code", "text"]))
def test_properties_when_estimates_are_wrong(wp, text, cfg, kind):
    run("f", text, LyingCounter(wp), cfg, kind)


# --------------------------------------------------------------------------------------------
# specific behaviour


def test_empty_and_whitespace_only(wp):
    for text in ["", " ", "\n\n\r\n\t ", "\u3000\u2028"]:
        assert chunk_text("a.md", text.encode(), text, wp, ChunkSettings()) == []


def test_small_file_is_one_chunk_with_crlf_and_bom(wp):
    text = "\ufeff# Title\r\n\r\nSome text here.\r\n\r\n\r\n"
    chunks = run("a.md", text, wp)
    assert len(chunks) == 1
    c = chunks[0]
    assert c.text == "\ufeff# Title\r\n\r\nSome text here."
    assert (c.byte_start, c.line_start, c.line_end) == (0, 1, 3)
    assert c.kind == "markdown"


def _section(title: str, words: int) -> str:
    body = " ".join(f"word{i % 7}" for i in range(words))
    return f"## {title}\n\n{body}.\n"


def test_heading_stays_with_its_section(wp):
    # each section ~ 100 tokens; two do not fit the target, so each becomes its own chunk
    text = "\n".join(_section(f"Part {k}", 45) for k in range(6))
    cfg = ChunkSettings(max_tokens=150, target_tokens=120, min_tokens=20)
    chunks = run("doc.md", text, wp, cfg)
    assert len(chunks) == 6
    for k, c in enumerate(chunks):
        assert c.text.startswith(f"## Part {k}\n")


def test_heading_glued_to_body_when_section_is_split(wp):
    text = "intro\n\n# Big\n\n" + " ".join(f"w{i}" for i in range(600)) + "\n\n# Next\n\nshort\n"
    chunks = run("doc.md", text, wp, ChunkSettings(max_tokens=120, target_tokens=100, min_tokens=0))
    assert len(chunks) > 3
    for c in chunks:  # no chunk ends with a heading line
        assert not re.search(r"(^|\n)#[^\n]*$", c.text), c.text[-50:]
    big = [c for c in chunks if "# Big" in c.text]
    assert len(big) == 1 and "w0" in big[0].text
    assert chunks[-1].text.endswith("# Next\n\nshort")
    sizes = [c.n_tokens for c in chunks if "w" in c.text and "# Next" not in c.text]
    assert min(sizes) > 0.6 * max(sizes)  # balanced split, no small remainder


def test_small_sections_merge(wp):
    text = "\n\n".join(f"# H{k}\n\nline {k}" for k in range(8))
    chunks = run("doc.md", text, wp)
    assert len(chunks) == 1
    cfg = ChunkSettings(max_tokens=40, target_tokens=20, min_tokens=5)
    chunks = run("doc.md", text, wp, cfg)
    assert 1 < len(chunks) < 8
    assert all(c.text.startswith("# H") for c in chunks)


def test_hash_lines_inside_fences_are_not_headings(wp):
    fence = "```bash\n# install it\npip install thing\n# then run\n```"
    text = "# Real\n\n" + "prose " * 60 + "\n\n" + fence + "\n\n" + "more " * 60
    cfg = ChunkSettings(max_tokens=64, target_tokens=50, min_tokens=0)
    chunks = run("doc.md", text, wp, cfg)
    assert not any(c.text.startswith("# install") or c.text.startswith("# then") for c in chunks)


def test_long_paragraph_without_newlines_splits_under_cap(wp):
    sentence = "The quick brown fox jumps over the lazy dog near the riverbank today"
    text = " ".join(f"{sentence} {i}." for i in range(150))
    total = int(wp.count([text])[0])
    assert total >= 2000
    chunks = run("notes.txt", text, wp)
    assert len(chunks) >= total // 254 + 1
    assert all(c.line_start == c.line_end == 1 for c in chunks)
    # mostly cut at sentence ends
    assert sum(c.text.endswith(".") for c in chunks) >= len(chunks) - 1


def test_no_whitespace_at_all_hard_cuts_at_tokens(wp):
    text = "漢字仮名交じり文" * 200  # each CJK character is a token; no spaces anywhere
    chunks = run("notes.txt", text, wp)
    assert len(chunks) >= 1600 // 254
    assert all(c.n_tokens <= 254 for c in chunks)


def test_python_splits_at_defs_with_decorators_and_comments(wp):
    funcs = []
    for k in range(5):
        body = "\n".join(f"    value_{j} = compute_{j}(argument_{j}, other_{j})" for j in range(6))
        funcs.append(
            f"# helper number {k}\n@register(\n    name='f{k}',\n)\n@cached\n"
            f"def function_{k}(a, b):\n{body}\n    return value_0\n"
        )
    text = '"""Module docstring."""\nimport os\n\n\n' + "\n\n".join(funcs)
    text += "\nclass After:\n    pass\n"
    cfg = ChunkSettings(max_tokens=160, target_tokens=100, min_tokens=10)
    chunks = run("mod.py", text, wp, cfg)
    assert chunks[0].text.startswith('"""Module docstring."""')
    starts = [c for c in chunks if "def function_" in c.text]
    assert len(starts) == 5
    for k, c in enumerate(starts):
        assert c.text.startswith(f"# helper number {k}\n@register(") or c.text.startswith('"""')
        assert f"@cached\ndef function_{k}(" in c.text
    assert all(c.kind == "code" for c in chunks)


def test_python_def_directly_after_body_is_a_boundary(wp):
    text = "def a():\n    return 1\ndef b():\n    return 2\n"
    chunks = run("m.py", text, WS, ChunkSettings(max_tokens=5, target_tokens=4, min_tokens=0))
    assert [c.text for c in chunks] == ["def a():\n    return 1", "def b():\n    return 2"]
    assert [(c.line_start, c.line_end) for c in chunks] == [(1, 2), (3, 4)]


# lib.zig: no grammar, the column-0 rule; lib.rs: its syntax (an eighth of the window is kept for the header)
@pytest.mark.parametrize("path, max_tokens", [("lib.zig", 40), ("lib.rs", 48)])
def test_generic_code_splits_at_top_level_blocks(wp, path, max_tokens):
    fns = [
        f"// adds things\nfn add_{k}(a: i32, b: i32) -> i32 {{\n"
        f"    let x = a + b;\n\n    x * {k}\n}}"
        for k in range(6)
    ]
    text = "use std::io;\n\n" + "\n\n".join(fns) + "\n"
    cfg = ChunkSettings(max_tokens=max_tokens, target_tokens=30, min_tokens=0)
    chunks = run(path, text, wp, cfg)
    body = [c for c in chunks if "fn add_" in c.text]
    assert all(c.text.startswith(("// adds things", "use std")) for c in body)
    # the blank line inside a body is not a top-level boundary
    assert not any(c.text.startswith("x *") for c in chunks)


def test_non_ascii_offsets_are_byte_offsets(wp):
    text = "é" * 10 + "\n" + "🎉 party " * 200 + "\n\nfin ✓\n"
    cfg = ChunkSettings(max_tokens=50, target_tokens=40, min_tokens=5)
    chunks = run("notes.txt", text, wp, cfg)
    data = text.encode()
    assert chunks[0].byte_start == 0
    assert chunks[-1].byte_end == len(data) - 1
    assert len(chunks) > 5


def test_kind_detection():
    assert detect_kind("README", "# A\n\ntext\n\n## B\n") == "markdown"
    assert detect_kind("notes.txt", "# A\n\n## B\n") == "markdown"
    assert detect_kind("notes.txt", "plain\n") == "text"
    assert detect_kind("conf.yaml", "# A\n# B\n") == "code"
    assert detect_kind("x.md", "") == "markdown"
    assert detect_kind("x.py", "") == "code"
    with pytest.raises(ValueError):
        chunk_text("x.md", b"x", "x", WS, ChunkSettings(), kind="poetry")


def test_one_token_offsets_call_and_batched_counts(wp):
    calls = {"offsets": 0, "count": 0}

    class Spy:
        def token_offsets(self, text):
            calls["offsets"] += 1
            return wp.token_offsets(text)

        def count(self, texts):
            calls["count"] += 1
            return wp.count(texts)

    text = "\n\n".join(_section(f"S{k}", 80) for k in range(10))
    chunks = run("doc.md", text, Spy())
    assert len(chunks) >= 5
    assert calls["offsets"] == 1
    assert calls["count"] <= 3  # one verification call (+ the test's own check)


def test_counter_protocol_runtime_check(wp):
    assert isinstance(wp, TokenCounter)
    assert isinstance(WS, TokenCounter)
    assert wp.token_offsets("").shape == (0, 2)
    assert np.array_equal(wp.count(["hello world", ""]), [2, 0])


# --------------------------------------------------------------------------------------------
# base64 data URIs: payloads are left out of every chunk


def _payload(n_bytes: int, urlsafe: bool = False, seed: int = 0) -> str:
    raw = random.Random(seed).randbytes(n_bytes)
    return (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(raw).decode()


def _no_payload_in(chunks: list[Chunk], payload: str) -> None:
    for c in chunks:
        assert "base64," not in c.text, c.text[:80]
        assert payload[:40] not in c.text and payload[-40:] not in c.text


def test_markdown_inline_png_payload_is_left_out(wp):
    payload = _payload(75_000)  # a 100 KB payload: ~hundreds of junk chunks if chunked as prose
    before = "# Logo\n\nThe project logo, drawn by hand in the spring of the first release.\n\n"
    after = ")\n\nMore text after the image: how the logo is used in the docs and the app.\n"
    text = before + "![logo](data:image/png;base64," + payload + after
    counted: list[str] = []

    class Spy:
        def token_offsets(self, t):
            return wp.token_offsets(t)

        def count(self, texts):
            counted.extend(texts)
            return wp.count(texts)

    chunks = run("note.md", text, Spy())  # byte-exact, ordered, everything else covered
    _no_payload_in(chunks, payload)
    assert not any(payload[:40] in t for t in counted)  # never even tokenised for a count
    joined = "\n".join(c.text for c in chunks)
    assert "The project logo, drawn by hand" in joined and "![logo](" in joined
    assert "More text after the image" in joined
    # the text on either side is chunked as if the payload were not there: one chunk per side
    assert [c.text for c in chunks] == [before.strip() + "\n\n![logo](", after.strip()]
    assert chunks[1].line_start == chunks[1].line_end - 2 == 5


def test_css_font_payload_is_left_out(wp):
    payload = _payload(30_000, seed=1)
    text = (
        ".title { color: #333; font-weight: bold; }\n\n"
        "@font-face {\n  font-family: 'Inter';\n"
        f"  src: url(data:font/woff2;base64,{payload}) format('woff2');\n}}\n\n"
        "body { font-family: 'Inter', sans-serif; margin: 0; }\n"
    )
    chunks = run("style.css", text, wp, kind="code")
    _no_payload_in(chunks, payload)
    joined = "\n".join(c.text for c in chunks)
    assert "src: url(" in joined and ") format('woff2');" in joined
    assert ".title { color: #333;" in joined and "body { font-family: 'Inter'" in joined


@pytest.mark.parametrize("path", ["page.html", "notes.txt", "a.md"])
def test_html_src_and_url_safe_payloads_are_left_out_in_every_kind(wp, path):
    payload = _payload(3_000, urlsafe=True, seed=2)
    assert "-" in payload and "_" in payload
    text = f'<p>Badge:</p>\n<img alt="badge" src="DATA:image/svg+xml;charset=utf-8;base64,{payload}">\n'
    chunks = run(path, text, wp)
    _no_payload_in(chunks, payload)
    assert chunks[0].text.startswith("<p>Badge:</p>")
    assert chunks[-1].text == '">'


def test_packing_never_merges_across_a_payload(wp):
    # both sides together are tiny and would be one chunk, but a chunk cannot span the payload
    payload = _payload(600, seed=3)
    text = f"first words data:image/gif;base64,{payload} last words"
    chunks = run("a.md", text, wp)
    assert [c.text for c in chunks] == ["first words", "last words"]


@pytest.mark.parametrize("path", ["only.md", "only.css", "only.txt"])
def test_a_file_that_is_only_a_payload_has_no_chunks(wp, path):
    text = "\n  data:image/jpeg;base64," + _payload(5_000, seed=4) + "\n\n"
    assert chunk_text(path, text.encode(), text, wp, ChunkSettings()) == []
    text = "data:image/png;base64," + "A" * 64 + "\ndata:image/png;base64," + "B" * 100 + "=="
    assert chunk_text(path, text.encode(), text, wp, ChunkSettings()) == []


def test_json_escaped_and_typeless_payloads_are_left_out(wp):
    # a JSON string escapes each `/` as `\/` (in the media type and in the payload), and RFC 2397
    # allows an empty media type: both are still payloads, and the JSON around them is kept
    payload = _payload(2_000, seed=6)
    assert "/" in payload
    escaped = payload.replace("/", "\\/")
    text = (
        '{"name": "logo", "icon": "data:image\\/png;base64,' + escaped + '",\n'
        ' "raw": "data:;base64,' + payload + '", "size": 12}\n'
    )
    chunks = run("app.json", text, wp)
    _no_payload_in(chunks, payload[:200])
    _no_payload_in(chunks, escaped[:200])
    joined = "\n".join(c.text for c in chunks)
    assert '{"name": "logo"' in joined and '"size": 12}' in joined


def test_short_and_non_base64_data_uris_are_kept(wp):
    short = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA"  # 72 chars
    short = short[:63]  # one under the threshold
    text = (
        f"A pixel: ![dot](data:image/png;base64,{short}) inline.\n\n"
        "A note: [hi](data:text/plain,hello) and data:text/plain;charset=utf-8,"
        + "A" * 80 + " and metadata:image/png;base64," + "Q" * 80 + "\n"
    )
    chunks = run("a.md", text, wp)
    assert len(chunks) == 1 and chunks[0].text == text.strip()


def test_whitespace_ends_a_payload(wp):
    # a line-wrapped payload: only its first line (with the data: prefix) is a data URI
    first, rest = "A" * 76, "B" * 76
    text = f"before data:image/png;base64,{first}\n{rest}\nafter"
    chunks = run("a.txt", text, WS)
    assert [c.text for c in chunks] == ["before", f"{rest}\nafter"]


def test_frontmatter_note_with_a_payload_in_its_body(wp):
    payload = _payload(2_000, seed=5)
    text = (
        "---\ntitle: Logo note\ntags: [art]\n---\n"
        f"Intro.\n\n![logo](data:image/webp;base64,{payload})\n\nOutro.\n"
    )
    data = text.encode()
    chunks = chunk_text("n.md", data, text, wp, ChunkSettings())
    assert [c.text for c in chunks] == ["Intro.\n\n![logo](", ")\n\nOutro."]
    assert all(c.header == chunks[0].header and "Logo note" in c.header for c in chunks)
    assert all(data[c.byte_start : c.byte_end].decode() == c.text for c in chunks)


def test_a_payload_in_frontmatter_never_reaches_a_header(wp):
    # a header goes in front of every chunk's embedded text: a payload there would drown them all
    payload = _payload(3_000, seed=7)
    text = (
        f"---\ntitle: Brand kit data:image/png;base64,{payload}\n"
        f"desc: 'Logos and colours data:image/png;base64,{payload}'\naliases: ['data:image/png;base64,{payload}', kit]\n---\n"
        "# Brand\n\nThe palette and how to use the logo in slides.\n"
    )
    chunks = chunk_text("brand.md", text.encode(), text, wp, ChunkSettings())
    assert chunks and all(c.header == "Brand kit. Logos and colours. Also called kit." for c in chunks)
    assert all(payload[:40] not in c.embed_text and "base64" not in c.embed_text for c in chunks)


def test_a_bodyless_note_whose_description_is_only_a_payload_falls_back_to_its_title(wp):
    payload = _payload(2_000, seed=8)
    text = f"---\ndesc: data:image/gif;base64,{payload}\ntitle: Team photo\n---\n"
    chunks = chunk_text("photo.md", text.encode(), text, wp, ChunkSettings())
    assert [c.text for c in chunks] == ["Team photo"] and chunks[0].header == "Team photo."
    assert text.encode()[chunks[0].byte_start : chunks[0].byte_end] == b"Team photo"
    text = f"---\ndesc: 'Our team data:image/gif;base64,{payload} in 2024'\n---\n"
    chunks = chunk_text("photo.md", text.encode(), text, wp, ChunkSettings())
    assert [c.text for c in chunks] == ["Our team", "in 2024"]


class _RecordingCounter(WhitespaceCounter):
    """Whitespace tokens, remembering the longest word it was asked to tokenize."""

    longest = 0

    def token_offsets(self, text):
        type(self).longest = max(type(self).longest, max((len(w) for w in text.split()), default=0))
        return super().token_offsets(text)


def test_the_tokenizer_never_reads_a_payload():
    payload = _payload(300_000, seed=9)  # ~400 KB of base64: one "word" to a whitespace tokenizer
    text = f"# Logo\n\nThe logo: ![logo](data:image/png;base64,{payload}) as drawn in spring.\n"
    chunks = run("logo.md", text, _RecordingCounter())
    assert [c.text for c in chunks] == ["# Logo\n\nThe logo: ![logo](", ") as drawn in spring."]
    assert _RecordingCounter.longest < 100


def test_sections_pack_on_each_side_of_a_payload_not_across_it():
    # A | payload | B C: packing A with B (they fit) would leave C alone once the payload is cut;
    # packing starts afresh after the payload, so B and C share a chunk
    words = " ".join(["w"] * 40)
    text = (
        f"# A\n\n{words} data:image/png;base64,{_payload(300, seed=6)}\n\n"
        f"# B\n\n{words}\n\n# C\n\n{words}\n"
    )
    cfg = ChunkSettings(max_tokens=120, target_tokens=100, min_tokens=10)
    chunks = run("a.md", text, WS, cfg)
    assert [c.text[:3] for c in chunks] == ["# A", "# B"]
    assert "# C" in chunks[1].text
