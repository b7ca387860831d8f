"""What queries read of one generation's files, each read from the store once: paths, roles, and the
targets anchor documents are kept for.

Every query needs the paths of its candidates' files (anchor evidence resolves links by path; the role
prior weighs a file by the role its path gives it: ragx/ingest/file_roles.py). A generation's file ids
keep their paths (a file that moves is a deleted id and a new one, and a deletion makes a new
generation), so a searcher keeps one `GenerationFiles` per generation and reads only the files no
earlier query of that generation had among its candidates: a warm server reads none at all. The
anchor targets (as many as the linked-to files at most) are read on the first query that needs them,
so a query whose files no link names asks the store for no anchor document.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..ingest.file_roles import roles
from ..lookup import unique_ids

if TYPE_CHECKING:  # pragma: no cover
    from ..index.store import Store

UNREAD = -1  # a role not read yet (roles are 0..4: scoring/candidates.py ROLE_*)


class GenerationFiles:
    """Paths and roles of one generation's files, read on first use inside that generation's read
    transactions (the caller's `Searcher.reading`)."""

    def __init__(self, store: "Store") -> None:
        self._store = store
        self._paths: dict[int, str] = {}
        self._roles = np.empty(0, np.int8)  # by file id; UNREAD until read
        self._anchor_targets: frozenset[str] | None = None

    def anchor_targets(self) -> frozenset[str]:
        """The paths and names anchor documents are kept for (none when the index has no anchor evidence)."""
        if self._anchor_targets is None:
            if not self._store.has_anchors():
                return frozenset()  # asked again by the next query: a writer may convert an older index's anchors meanwhile
            self._anchor_targets = frozenset(self._store.anchor_targets())
        return self._anchor_targets

    def paths(self, file_ids: Sequence[int]) -> dict[int, str]:
        """File id -> path for `file_ids`, ids without a file row left out (as Store.file_paths_of)."""
        known = self._paths
        missing = [f for f in file_ids if f not in known]
        if missing:
            known.update(self._store.file_paths_of(missing))
        return {f: known[f] for f in file_ids if f in known}

    def roles(self, file_ids: np.ndarray) -> np.ndarray:
        """int8 per entry of `file_ids`: the role of that file (a file without a row: the role of "")."""
        if not len(file_ids):
            return np.empty(0, np.int8)
        distinct = unique_ids(np.asarray(file_ids, dtype=np.int64))
        if distinct[-1] >= len(self._roles):
            grown = np.full(int(distinct[-1]) + 1, UNREAD, np.int8)
            grown[: len(self._roles)] = self._roles
            self._roles = grown
        unread = distinct[self._roles[distinct] == UNREAD]
        if len(unread):
            paths = self.paths(unread.tolist())
            self._roles[unread] = roles([paths.get(f, "") for f in unread.tolist()])
        return self._roles[file_ids]
