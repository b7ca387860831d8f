"""Each candidate's file role (ragx/ingest/file_roles.py), read for the candidates' files only."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..ingest.file_roles import roles

if TYPE_CHECKING:  # pragma: no cover
    from ..index.store import Store


def file_roles(store: "Store", file_ids: np.ndarray) -> np.ndarray:
    """int8 per candidate: the role of its file (one indexed read of the distinct files' paths)."""
    if not len(file_ids):
        return np.empty(0, np.int8)
    distinct, inverse = np.unique(file_ids, return_inverse=True)
    paths = store.file_paths_of(distinct.tolist())
    return roles([paths.get(int(f), "") for f in distinct.tolist()])[inverse]
