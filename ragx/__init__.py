"""ragx: local semantic search that follows the similarity graph."""

__version__ = "0.1.0"
