"""PDF text (optional extra: `pip install "ragx[pdf]"`, pypdf): one section per page.

A PDF's chunks are cut from each page's extracted text separately, so no chunk spans two pages. The
byte-exact location of other files becomes (page, character range) here: a PDF chunk's
`byte_start`/`byte_end` are character offsets into its page's extracted text, `line_start`/`line_end`
lines of that text, and its stored kind is `pdf:<page>` (1-based), which results show as `page`.
Pages without a text layer (scans) are listed, so the run says which pages it could not read; the file
is still recorded with its hash, so an unchanged PDF is never read again. A damaged PDF (pypdf fails on
it in any way) is reported once and remembered like a file that is not UTF-8 (ragx/index/plan.py): not
read again, and no drift, until it changes. pypdf's own log lines are silenced while it reads.
"""

from __future__ import annotations

import dataclasses
import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from .chunk import TEXT, Chunk, ChunkSettings, chunk_text
from .filetypes import PDF_UNAVAILABLE

KIND_PREFIX = "pdf:"


class PdfUnavailable(RuntimeError):
    """pypdf is not installed."""


class DamagedPdf(ValueError):
    """pypdf cannot read the file: it stays unreadable until the file changes."""


READ_ERRORS = (OSError, ValueError, PdfUnavailable)  # what reading one PDF can raise: reported, the run goes on


@dataclass(frozen=True)
class PdfText:
    pages: list[str]       # extracted text of each page, in order
    textless: list[int]    # 1-based numbers of pages with no extractable text


def page_of(kind: str | None) -> int | None:
    """The page number stored in a PDF chunk's kind, None for other chunks."""
    if kind and kind.startswith(KIND_PREFIX):
        return int(kind[len(KIND_PREFIX):])
    return None


@contextmanager
def quiet_pypdf() -> Iterator[None]:
    """No pypdf log lines on stderr ("invalid pdf header", "EOF marker not found") while ragx reads a
    PDF: they carry no `ragx:` prefix and no file name, and ragx reports an unreadable PDF itself."""
    logger = logging.getLogger("pypdf")  # the parent of every logger pypdf writes to
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(level)


def extract(data: bytes) -> PdfText:
    """Each page's text; raises DamagedPdf for a file pypdf cannot read, PdfUnavailable without pypdf."""
    try:
        import io

        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError:
        raise PdfUnavailable(PDF_UNAVAILABLE) from None
    try:
        with quiet_pypdf():
            reader = PdfReader(io.BytesIO(data))
            pages = [(page.extract_text() or "").replace("\x00", "") for page in reader.pages]
    # Exception, not pypdf's own errors: on a damaged file a parser can fail in any way (an
    # AssertionError, an IndexError, a RecursionError deep in an object graph), and one bad PDF must be
    # reported like any other, not end the run. KeyboardInterrupt and SystemExit still go through.
    except Exception as exc:  # noqa: BLE001 - any failure of a parser on a damaged file (above)
        raise DamagedPdf(f"unreadable PDF ({_reason(exc, PyPdfError)})") from None
    return PdfText(pages, [n for n, text in enumerate(pages, 1) if not text.strip()])


def _reason(exc: Exception, pdf_error: type[Exception]) -> str:
    """pypdf's own message for the errors it raises on purpose; with the exception's type for the rest,
    whose messages mean little alone (pypdf's `assert x, "mypy"` says "mypy")."""
    message = str(exc).strip()
    if isinstance(exc, (pdf_error, ValueError)) and message:
        return message
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def chunk_pdf(path: str, pdf: PdfText, counter, settings: ChunkSettings) -> list[Chunk]:
    """Chunks of every page with text, numbered through the file; offsets are characters in the page."""
    out: list[Chunk] = []
    for number, text in enumerate(pdf.pages, 1):
        if not text.strip():
            continue
        data = text.encode("utf-8")
        for c in chunk_text(path, data, text, counter, settings, kind=TEXT):
            start = len(data[: c.byte_start].decode("utf-8"))
            out.append(dataclasses.replace(
                c, ordinal=len(out), byte_start=start, byte_end=start + len(c.text), kind=f"{KIND_PREFIX}{number}",
            ))
    return out


def read_pdf(abspath, path: str, counter, settings: ChunkSettings) -> tuple[str, list[Chunk], list[int]]:
    """(content hash, chunks, text-less page numbers) of one PDF file; raises one of READ_ERRORS."""
    from .discover import hash_bytes

    with open(abspath, "rb") as fh:
        data = fh.read()
    text = extract(data)
    return hash_bytes(data), chunk_pdf(path, text, counter, settings), text.textless
