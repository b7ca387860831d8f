"""Query variants: the query's own vector plus, when an expander is configured, one dense leg per
reformulation (and the HyDE passage). Model time only; nothing here reads the index."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..log import warn_once


def query_vectors(
    query: str, embedder: Any, expander_factory: Callable[[], Any] | None, expand: bool
) -> tuple[list[str], np.ndarray, dict[str, Any] | None]:
    """(variant texts, one vector per variant, a note for the document or None)."""
    variants = [query]
    qvecs = embedder.embed_query(query)[None, :]
    if expander_factory is None:
        return variants, qvecs, None
    if not expand:
        return variants, qvecs, {"used": False, "skipped": "turned off for this query (--no-expand)"}
    from ..models.expand import expansion_legs

    texts, vecs, note = expansion_legs(expander_factory, embedder, query, warn_once)
    if texts:
        if vecs is None:
            raise RuntimeError("expansion returned variant texts without their vectors")
        variants += texts
        qvecs = np.vstack([qvecs, vecs])
    return variants, qvecs, note
