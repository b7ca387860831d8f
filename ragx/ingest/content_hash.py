"""The content hash of an indexed file (its row's `hash`), apart from the corpus walk: a query that
checks whether a result's file changed (ragx/file_context.py) hashes without loading discovery."""

from __future__ import annotations


def hash_bytes(data: bytes) -> str:
    """Content hash used to detect changed files: xxh3-128, as 32 hex digits."""
    import xxhash  # a drift check with no changed file never hashes

    return xxhash.xxh3_128_hexdigest(data)
