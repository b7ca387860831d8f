"""PDF text: one section per page, `page` in results, text-less pages recorded, not re-read."""

from __future__ import annotations

import json
import sqlite3

import pytest
from cli_runner import call
from fakes import make_corpus
from pdfs import write_pdf

from ragx.ingest.pdf import PdfText, chunk_pdf

PAGES = [
    "Annual report of the harbour board.\nThe board met four times this year.",
    "Finances: dues were raised by two percent.\nThe dredging contract was renewed.",
    "Lighthouse keeper notes: the lamp of the northern lighthouse failed in the November gale.\n"
    "A spare lens was fitted and the light shone again after two nights.",
    "",  # a scanned page: no text layer
    "Appendix: list of moorings and their holders.",
]


pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake


@pytest.fixture
def corpus(tmp_path):
    make_corpus(tmp_path, n_per_topic=2)
    write_pdf(tmp_path / "report.pdf", PAGES)
    return tmp_path


def test_a_phrase_on_page_three_is_found_with_page_3(corpus, capsys):
    code, out, err = call(capsys, "index", "--root", str(corpus), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["textless_pages"] == {"report.pdf": [4]} and "page(s) 4" in err
    code, out, err = call(capsys, "query", "lamp of the northern lighthouse failed", "--root", str(corpus), "--json")
    assert code == 0, err
    top = json.loads(out)["results"][0]
    assert top["file"] == "report.pdf" and top["page"] == 3
    assert "northern lighthouse" in top["text"]
    # (page, character range) locate the chunk in the page's text; no other page's words are in it
    assert PAGES[2][top["byte_start"]: top["byte_end"]] == top["text"]
    assert "moorings" not in top["text"] and "dredging" not in top["text"]
    code, out, _ = call(capsys, "query", "lamp of the northern lighthouse", "--root", str(corpus), "--json", "--files-only")
    assert json.loads(out)["results"][0]["file"] == "report.pdf"
    # other files' results carry no page
    _, out, _ = call(capsys, "query", "telescope orbit", "--root", str(corpus), "--json")
    assert all("page" not in r for r in json.loads(out)["results"] if r["file"] != "report.pdf")


def test_text_less_pages_are_recorded_and_an_unchanged_pdf_is_not_read_again(corpus, capsys, fake_model):
    call(capsys, "index", "--root", str(corpus))
    db = sqlite3.connect(corpus / ".ragx" / "index.sqlite")
    assert db.execute("SELECT path, pages FROM pdf_textless").fetchall() == [("report.pdf", "[4]")]
    db.close()
    fake_model.embedded.clear()
    code, out, err = call(capsys, "index", "--root", str(corpus), "--json")
    assert code == 0 and json.loads(out)["textless_pages"] == {} and "page(s)" not in err
    assert fake_model.embedded == []
    # The PDF replaced by one with text on every page: the record goes.
    write_pdf(corpus / "report.pdf", [p or "Now with text." for p in PAGES])
    call(capsys, "index", "--root", str(corpus))
    db = sqlite3.connect(corpus / ".ragx" / "index.sqlite")
    assert db.execute("SELECT count(*) FROM pdf_textless").fetchone()[0] == 0
    db.close()


def test_a_damaged_pdf_is_reported_and_the_run_goes_on(corpus, capsys):
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4\n\x00\x00 this is not a pdf")
    code, out, err = call(capsys, "index", "--root", str(corpus), "--json")
    assert code == 0
    report = json.loads(out)
    assert [p["path"] for p in report["problems"]] == ["broken.pdf"] and "broken.pdf" in err


def test_chunks_never_span_pages(hash_embedder):
    from ragx.ingest.chunk import ChunkSettings

    pages = ["word " * 150, "other " * 150, "third " * 10]
    chunks = chunk_pdf("x.pdf", PdfText(pages, []), hash_embedder.token_counter(), ChunkSettings(max_tokens=62, target_tokens=50, min_tokens=10))
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        page = int(c.kind.split(":")[1])
        assert pages[page - 1][c.byte_start: c.byte_end] == c.text
    assert {c.kind for c in chunks} == {"pdf:1", "pdf:2", "pdf:3"}
