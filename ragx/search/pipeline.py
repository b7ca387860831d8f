"""Kept for imports of the old module name: the searcher lives in `searcher`, documents in `results`."""

from .results import TEXT_CHARS, QueryOptions, chunks_document, files_document
from .searcher import Searcher

__all__ = ["Searcher", "QueryOptions", "TEXT_CHARS", "chunks_document", "files_document"]
