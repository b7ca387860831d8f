"""Query filters: `--tag T` (a frontmatter tag) and `--path GLOB` (the file's path from the root).

A filter picks files (`Store.files_passing`); the retrieval pass then searches only their chunks (exact dense search
over them, BM25 matches restricted to them), so a narrow filter never loses its matches to an ANN
list full of other files. Tags compare in lower case without `#`; tag `a` also matches `a/b` and
`a.b` (hierarchical tags). The glob is SQLite's GLOB: case-sensitive, `*` also crosses `/`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError
from ..index.store import Store
from ..ingest.link_kinds import TAG


@dataclass(frozen=True)
class Filters:
    tags: tuple[str, ...] = ()   # a file must carry every one of these tags
    path: str | None = None      # and its path must match this glob

    def __post_init__(self) -> None:
        """A filter that can match nothing by its form alone is bad input, not an empty result."""
        for tag in self.tags:
            if not normalise_tag(tag):
                raise UsageError(f"--tag {tag!r} names no tag")
        if self.path is not None:
            problem = glob_problem(self.path)
            if problem:
                raise UsageError(f"--path {self.path!r}: {problem}")

    @property
    def active(self) -> bool:
        return bool(self.tags) or self.path is not None

    def describe(self) -> dict:
        return {"tags": list(self.tags), "path": self.path}


def glob_problem(glob: str) -> str | None:
    """Why SQLite's GLOB could never match with `glob` (an empty pattern, a `[` class never closed),
    else None. In a class, a `]` right after `[` or `[^` is a member, as SQLite reads it."""
    if not glob:
        return "an empty pattern matches no file"
    i = 0
    while i < len(glob):
        if glob[i] == "[":
            j = i + 1
            j += glob.startswith("^", j)
            j += glob.startswith("]", j)
            close = glob.find("]", j)
            if close < 0:
                return f"the '[' at position {i + 1} is never closed (a literal '[' is written '[[]')"
            i = close
        i += 1
    return None


def relative_glob(glob: str, root: str) -> str:
    """`glob` as the filter matches it: against paths relative to the corpus root. A leading `./` is
    dropped; an absolute glob inside the root (as given, or with its links resolved) loses the root;
    one outside it is bad input."""
    if glob.startswith("/"):
        prefixes = {root.rstrip("/") + "/", os.path.realpath(root).rstrip("/") + "/"}
        inside = [p for p in prefixes if glob.startswith(p)]
        if not inside:
            raise UsageError(f"--path {glob!r} is outside the corpus root {root}: paths are matched from the root (e.g. 'notes/*')")
        glob = glob[len(inside[0]):]
    while glob.startswith("./"):
        glob = glob[2:]
    return glob


def normalise_tag(tag: str) -> str:
    return tag.strip().lstrip("#").strip().lower()


def allowed_files(store: Store, filters: Filters) -> np.ndarray:
    """Sorted ids of the files that pass every filter."""
    return store.files_passing(filters.path, [normalise_tag(t) for t in filters.tags], TAG)


def allowed_rows(snapshot_file_ids: np.ndarray, files: np.ndarray) -> np.ndarray:
    """Sorted snapshot rows whose chunk belongs to one of `files`."""
    return np.flatnonzero(np.isin(snapshot_file_ids, files))
