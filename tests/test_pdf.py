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


def damaged_by_an_indirect_reference_in_a_content_stream(path) -> bytes:
    """A PDF pypdf fails on with a bare AssertionError (not one of its own errors): page 2's content
    stream holds `[1 0 R]`, an indirect reference where none can be. Same length: offsets stay right."""
    data = write_pdf(path, ["Tide tables of the harbour.", "XXXXXX"]).read_bytes()
    assert data.count(b"(XXXXXX) Tj") == 1
    path.write_bytes(data.replace(b"(XXXXXX) Tj", b"[1 0 R] TJ "))
    return path.read_bytes()


def test_a_pdf_pypdf_fails_on_in_any_way_is_reported_and_the_run_goes_on(corpus, capsys):
    damaged_by_an_indirect_reference_in_a_content_stream(corpus / "broken.pdf")
    code, out, err = call(capsys, "index", "--root", str(corpus), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert [p["path"] for p in report["problems"]] == ["broken.pdf"]
    assert "AssertionError" in report["problems"][0]["reason"] and "broken.pdf: unreadable PDF" in err
    assert "internal error" not in err
    code, out, err = call(capsys, "query", "lamp of the northern lighthouse failed", "--root", str(corpus), "--json")
    assert code == 0 and json.loads(out)["results"][0]["file"] == "report.pdf", err


def test_a_damaged_pdf_is_remembered_until_it_changes_and_pypdf_stays_quiet(corpus, capsys, caplog, monkeypatch):
    import ragx.ingest.pdf as pdf_module

    reads: list[int] = []
    extract = pdf_module.extract
    monkeypatch.setattr(pdf_module, "extract", lambda data: reads.append(len(data)) or extract(data))
    (corpus / "fake.pdf").write_bytes(b"not really a pdf")
    code, out, err = call(capsys, "index", "--root", str(corpus), "--json")
    assert code == 0 and [p["path"] for p in json.loads(out)["problems"]] == ["fake.pdf"] and "fake.pdf" in err
    assert sorted(reads) == sorted([16, (corpus / "report.pdf").stat().st_size])
    # ragx says it once, with its prefix and the file's name; pypdf's own log lines ("invalid pdf header") are not shown
    assert not [r.getMessage() for r in caplog.records if r.name.startswith("pypdf")]
    # status is clean, and the next run neither reports nor reads the file again
    code, out, _ = call(capsys, "status", "--root", str(corpus), "--json")
    assert json.loads(out)["drift"] == {"new": 0, "changed": 0, "deleted": 0, "unreadable": 0}
    reads.clear()
    code, out, err = call(capsys, "index", "--root", str(corpus), "--json")
    assert code == 0 and json.loads(out)["problems"] == [] and "fake.pdf" not in err and reads == []
    # changed, but still damaged: read and reported again, then remembered again
    (corpus / "fake.pdf").write_bytes(b"%PDF-1.4 still not a pdf")
    code, out, err = call(capsys, "index", "--root", str(corpus), "--json")
    assert code == 0 and [p["path"] for p in json.loads(out)["problems"]] == ["fake.pdf"] and reads == [24]
    code, out, _ = call(capsys, "status", "--root", str(corpus), "--json")
    assert json.loads(out)["drift"]["new"] == 0
    # repaired: indexed, and no longer remembered as damaged
    write_pdf(corpus / "fake.pdf", ["The ferry timetable for the winter months."])
    code, out, err = call(capsys, "index", "--root", str(corpus), "--json")
    assert code == 0 and json.loads(out)["problems"] == [], err
    code, out, _ = call(capsys, "status", "--root", str(corpus), "--json")
    status = json.loads(out)
    assert status["drift"]["new"] == 0 and status["skipped"] == 0
    code, out, _ = call(capsys, "query", "ferry timetable winter", "--root", str(corpus), "--json", "--files-only")
    assert code == 0 and json.loads(out)["results"][0]["file"] == "fake.pdf"


def test_chunks_never_span_pages(hash_embedder):
    from ragx.ingest.chunk import ChunkSettings

    pages = ["word " * 150, "other " * 150, "third " * 10]
    chunks = chunk_pdf("x.pdf", PdfText(pages, []), hash_embedder.token_counter(), ChunkSettings(max_tokens=62, target_tokens=50, min_tokens=10))
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        page = int(c.kind.split(":")[1])
        assert pages[page - 1][c.byte_start: c.byte_end] == c.text
    assert {c.kind for c in chunks} == {"pdf:1", "pdf:2", "pdf:3"}


def test_an_install_without_pypdf_skips_a_pdf_once_with_the_reason_not_as_drift(corpus, capsys, monkeypatch):
    """The light loop of issue 44: without pypdf a PDF stayed '1 new' forever and `ragx index` never cleared it."""
    import ragx.ingest.discover as discover

    monkeypatch.setattr(discover, "pdf_readable", lambda: False)
    code, out, err = call(capsys, "index", "--root", str(corpus), "--json")
    assert code == 0 and json.loads(out)["skipped"] == 1 and "1 skipped" in err
    for _ in range(2):  # and after another index run: still skipped, never drift
        code, out, _ = call(capsys, "status", "--root", str(corpus), "--json")
        status = json.loads(out)
        assert code == 0 and status["drift"] == {"new": 0, "changed": 0, "deleted": 0, "unreadable": 0}
        assert status["not_indexed"]["skipped"] == [{"path": "report.pdf", "reason": discover.PDF_UNAVAILABLE}]
        call(capsys, "index", "--root", str(corpus))
    code, out, _ = call(capsys, "status", "--root", str(corpus))
    assert "skipped: report.pdf (PDF text needs pypdf" in out
    # Once the install can read PDFs, the next run indexes it.
    monkeypatch.setattr(discover, "pdf_readable", lambda: True)
    _, out, _ = call(capsys, "status", "--root", str(corpus), "--json")
    assert json.loads(out)["drift"]["new"] == 1
    _, out, _ = call(capsys, "index", "--root", str(corpus), "--json")
    assert json.loads(out)["new"] == 1
