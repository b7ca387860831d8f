"""Query filters: `--tag T` (a frontmatter tag) and `--path GLOB` (the file's path from the root).

A filter picks files (`Store.files_passing`); the retrieval pass then searches only their chunks (exact dense search
over them, BM25 matches restricted to them), so a narrow filter never loses its matches to an ANN
list full of other files. Tags compare in lower case without `#`; tag `a` also matches `a/b` and
`a.b` (hierarchical tags). The glob is SQLite's GLOB: case-sensitive, `*` also crosses `/`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..index.store import Store
from ..ingest.link_kinds import TAG


@dataclass(frozen=True)
class Filters:
    tags: tuple[str, ...] = ()   # a file must carry every one of these tags
    path: str | None = None      # and its path must match this glob

    @property
    def active(self) -> bool:
        return bool(self.tags) or self.path is not None

    def describe(self) -> dict:
        return {"tags": list(self.tags), "path": self.path}


def normalise_tag(tag: str) -> str:
    return tag.strip().lstrip("#").strip().lower()


def allowed_files(store: Store, filters: Filters) -> np.ndarray:
    """Sorted ids of the files that pass every filter."""
    return store.files_passing(filters.path, [normalise_tag(t) for t in filters.tags], TAG)


def allowed_rows(snapshot_file_ids: np.ndarray, files: np.ndarray) -> np.ndarray:
    """Sorted snapshot rows whose chunk belongs to one of `files`."""
    return np.flatnonzero(np.isin(snapshot_file_ids, files))
