"""Write small real PDFs for tests (pypdf objects; Helvetica text, one content stream per page)."""

from __future__ import annotations

from pathlib import Path


def write_pdf(path: Path, pages: list[str]) -> Path:
    """A PDF whose page i shows pages[i] (lines split on newlines); an empty string gives a page without text."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Font"),
        NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"),
    }))
    for text in pages:
        page = writer.add_blank_page(612, 792)
        stream = DecodedStreamObject()
        if text:
            lines = " T* ".join(f"({_escape(line)}) Tj" for line in text.split("\n"))
            stream.set_data(f"BT /F1 11 Tf 14 TL 72 720 Td {lines} ET".encode("latin-1"))
        else:  # a drawn rectangle only: what a scanned page looks like to a text extractor
            stream.set_data(b"0 0 1 rg 100 100 200 200 re f")
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    with open(path, "wb") as fh:
        writer.write(fh)
    return path


def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
