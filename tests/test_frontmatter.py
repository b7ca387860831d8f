"""Notes' YAML frontmatter: parsed into fields, never chunked as prose, embedded as a header."""

from __future__ import annotations

import json

import pytest
from cli_runner import call
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


# Values PyYAML's SafeLoader reads as timestamps but cannot construct (ValueError, OverflowError).
IMPOSSIBLE_DATES = ["date: 0000-00-00", "updated: 2024-02-30", "updated: 2024-01-01T25:61:00"]


@pytest.mark.parametrize("line", IMPOSSIBLE_DATES)
def test_an_impossible_date_costs_the_note_none_of_its_fields(line):
    fm = frontmatter.parse(f"---\ntitle: Meteor log\n{line}\ntags: [sky, night]\n---\nbody\n")
    assert fm is not None and (fm.title, fm.tags) == ("Meteor log", ("sky", "night"))


def test_a_date_is_read_as_its_text():
    # dates.py reads dates from the raw text; here a date-like title is a title, not a dropped date object
    fm = frontmatter.parse("---\ntitle: 2024-05-31\naliases: [2024-06-01T10:00:00Z]\n---\nbody\n")
    assert fm is not None and (fm.title, fm.aliases) == ("2024-05-31", ("2024-06-01T10:00:00Z",))


def test_deeply_nested_yaml_yields_no_fields_and_still_ends_the_block():
    text = "---\ntags: " + "[" * 5000 + "\n---\nbody about comets\n"
    fm = frontmatter.parse(text)
    assert fm is not None and fm.header() == "" and text[fm.end :] == "body about comets\n"


@pytest.mark.usefixtures("fake_model")
def test_frontmatter_pyyaml_cannot_convert_never_stops_the_index_run(tmp_path, capsys):
    notes = {
        "meteors.md": "---\ntitle: Meteor log\ndate: 0000-00-00\ntags: [sky]\n---\n# Meteors\n\nZero date about meteors.\n",
        "quasars.md": "---\ndescription: 42\nupdated: 2024-02-30\n---\n# Quasars\n\nImpossible day about quasars.\n",
        "neutrinos.md": "---\nupdated: 2024-01-01T25:61:00\n---\nBad time about neutrinos.\n",
        "comets.md": "---\ntags: " + "[" * 5000 + "\n---\n# Comets\n\nDeep nesting about comets.\n",
        "dated.md": "---\nupdated: 2020-02-02\n---\n# Dated\n\nA valid date about pulsars.\n",
    }
    for name, text in notes.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    code, out, err = call(capsys, "index", "--root", str(tmp_path), "--json")
    assert code == 0, err
    assert json.loads(out)["files"] == len(notes)
    for word, name in [("meteors", "meteors.md"), ("quasars", "quasars.md"), ("neutrinos", "neutrinos.md"), ("comets", "comets.md")]:
        code, out, err = call(capsys, "query", word, "--root", str(tmp_path), "--json", "--files-only")
        assert code == 0 and json.loads(out)["results"][0]["file"] == name, (word, err)
    # the bad date does not cost meteors.md its tags
    code, out, _ = call(capsys, "query", "meteors", "--root", str(tmp_path), "--json", "--files-only", "--tag", "sky")
    assert code == 0 and [r["file"] for r in json.loads(out)["results"]] == ["meteors.md"]
    # dates as before: a valid one from the frontmatter, an impossible one falls back to the file's mtime
    _, out, _ = call(capsys, "query", "pulsars quasars", "--root", str(tmp_path), "--json", "--files-only")
    sources = {r["file"]: (r["date"], r["date_source"]) for r in json.loads(out)["results"]}
    assert sources["dated.md"] == ("2020-02-02T00:00:00Z", "frontmatter") and sources["quasars.md"][1] == "mtime"
