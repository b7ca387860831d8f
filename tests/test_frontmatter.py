"""Notes' YAML frontmatter: parsed into fields, never chunked as prose, embedded as a header."""

from __future__ import annotations

from fakes import WordCounter

from ragx.ingest import frontmatter
from ragx.ingest.chunk import ChunkSettings, chunk_text

NOTE = """---
id: ChcCM1Q2qrDTy7YnLUHiL
title: Lookup
desc: 'Find or create a note by its hierarchy'
tags: [navigation, "#Core"]
aliases:
  - quick open
updated: 1653409628830
---

# Lookup

Lookup finds notes by name. Type part of a hierarchy and press enter.

## Options

""" + "Each option changes how the lookup bar filters and creates notes. " * 12 + "\n"


def _chunks(text: str, path: str = "dendron.topic.lookup.md", max_tokens: int = 62):
    data = text.encode("utf-8")
    return data, chunk_text(path, data, text, WordCounter(max_tokens), ChunkSettings(max_tokens, 40, 10))


def test_fields_are_parsed_and_make_a_header():
    fm = frontmatter.parse(NOTE)
    assert fm is not None
    assert (fm.title, fm.desc, fm.aliases, fm.tags) == ("Lookup", "Find or create a note by its hierarchy", ("quick open",), ("navigation", "core"))
    assert fm.header() == "Lookup. Find or create a note by its hierarchy. Also called quick open. Tags: navigation, core."
    assert NOTE[fm.end :].lstrip().startswith("# Lookup")


def test_no_frontmatter_and_broken_yaml():
    assert frontmatter.parse("# Title\n\n---\nnot: frontmatter\n---\n") is None
    assert frontmatter.parse("---\nunclosed: block\n\ntext") is None
    fm = frontmatter.parse("---\n: [broken\n---\nbody\n")
    assert fm is not None and fm.header() == "" and "body" not in "---\n: [broken\n---\n"[: fm.end]


def test_chunks_skip_the_block_stay_exact_and_carry_the_header():
    data, chunks = _chunks(NOTE)
    assert chunks and all(data[c.byte_start : c.byte_end].decode() == c.text for c in chunks)
    assert all("updated:" not in c.text and "id:" not in c.text for c in chunks)
    assert chunks[0].text.startswith("# Lookup") and chunks[0].line_start == 11
    assert chunks[0].header.startswith("Lookup. Find or create")
    assert chunks[0].embed_text == chunks[0].header + "\n\n" + chunks[0].text
    assert len(chunks) > 1 and all(c.header == chunks[0].header for c in chunks)


def test_a_note_that_is_all_frontmatter_shows_its_description():
    text = "---\nid: x1\ntitle: Stub\ndesc: \"Where the release notes live\"\nstub: true\n---\n"
    data, chunks = _chunks(text)
    assert [c.text for c in chunks] == ["Where the release notes live"]
    assert data[chunks[0].byte_start : chunks[0].byte_end] == b"Where the release notes live"
    assert chunks[0].header == "Stub. Where the release notes live."


def test_only_markdown_files_lose_their_frontmatter():
    text = "---\ntitle: x\n---\nkey: value\n"
    _, chunks = _chunks(text, path="config.yaml")
    assert chunks[0].text.startswith("---") and chunks[0].header == ""


def test_non_ascii_frontmatter_keeps_byte_offsets_exact():
    text = "---\ntitle: Café notes ☕\n---\n\nÜber alles: crème brûlée.\n"
    data, chunks = _chunks(text)
    assert [data[c.byte_start : c.byte_end].decode() for c in chunks] == ["Über alles: crème brûlée."]
    assert chunks[0].header == "Café notes ☕."
