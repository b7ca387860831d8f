"""The SQLite side of an index, by table family: schema (tables, connection, manifest), files (files and
chunks, links, anchors), graph (kNN rows, communities), labels (labels and dates), integrity, transfer;
run holds the one transaction of an index run. Every SQL statement of the index lives in this folder."""

from __future__ import annotations

from .anchors import ANCHOR_VECTOR_DTYPE, AnchorDocs
from .files import FileRow, StoredFiles, chunk_location
from .integrity import FINGERPRINT_SQL, chunk_fingerprint
from .run import IndexRun, RunExtras
from .schema import (
    ANCHORS_OUTDATED,
    CHUNK_COLUMNS,
    INDEXED_TEXT_SQL,
    SCAN_MARGIN_NS,
    SCAN_STARTED,
    SCHEMA,
    SCHEMA_VERSION,
    scan_started,
    written_since,
)
from .transfer import Transfer

__all__ = [
    "ANCHORS_OUTDATED", "ANCHOR_VECTOR_DTYPE", "AnchorDocs", "CHUNK_COLUMNS", "FINGERPRINT_SQL", "FileRow", "INDEXED_TEXT_SQL",
    "RunExtras", "SCAN_MARGIN_NS", "SCAN_STARTED", "SCHEMA", "SCHEMA_VERSION", "Store", "StoredFiles", "chunk_fingerprint",
    "chunk_location", "scan_started", "written_since",
]


class Store(IndexRun, Transfer):
    """An index database: every part above on one connection (`Store(path)`, `Store(path, readonly=True)`)."""
