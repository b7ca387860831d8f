"""The one rule for "this index was built with other settings".

An index depends on the embedder (name and dimension), the chunking and the graph settings and the
schema. They are recorded in the manifest at commit (`index_identity`); build (before an incremental
run), the searcher (before a query: the embedder) and doctor all compare through `mismatches`, so the
three always agree and say the same words.
"""

from __future__ import annotations

from typing import Any

from ..errors import ManifestMismatchError
from .store import SCHEMA_VERSION

HINT = "run `ragx index --full`"


def index_identity(settings: Any, embedder: Any) -> dict[str, Any]:
    """What an index depends on; an incremental run under other values would mix incompatible data."""
    return {
        "schema_version": SCHEMA_VERSION,
        "embedder": embedder.name,
        "dim": int(embedder.dim),
        "chunking": {
            "max_tokens": int(embedder.token_counter().max_content_tokens),
            "target_tokens": settings.chunking.target_tokens,
            "min_tokens": settings.chunking.min_tokens,
        },
        "graph": {"k": settings.graph.k, "min_sim": settings.graph.min_sim},
    }


def mismatches(stored: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """One phrase per recorded key whose value differs from the wanted one (keys not recorded pass)."""
    return [
        f"built with {key} = {stored[key]}, config now says {value}"
        for key, value in wanted.items()
        if key in stored and stored[key] != value
    ]


def check_identity(stored: dict[str, Any], wanted: dict[str, Any]) -> None:
    found = mismatches(stored, wanted)
    if found:
        raise ManifestMismatchError(f"index was {found[0]}: {HINT}")


def check_embedder(stored: dict[str, Any], embedder: Any) -> None:
    """The part a query can check without the chunking and graph settings: the embedder's name."""
    check_identity(stored, {"embedder": embedder.name})
