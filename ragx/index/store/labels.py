"""Labels and dates: each community's label and keywords (ragx/index/labels.py computes them) and each
file's date (ragx/index/dates.py), derived inside an index run's transaction or backfilled for an older index."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
else:  # `ragx status` reads the store without numpy (lazy.py)
    from ...lazy import lazy_module

    np = lazy_module("numpy")

from ..dates import DATE_RULES
from .graph import Graph
from .integrity import chunk_fingerprint
from .temp import fill_temp_text

if TYPE_CHECKING:  # pragma: no cover
    from ..labels import CommunityLabel


class LabelsAndDates(Graph):
    """Community labels and file dates: stored, checked for being missing or stale, rewritten."""

    def labels(self) -> dict[int, "CommunityLabel"]:
        """Stored labels by current community number ({} for an index built before labels existed)."""
        from ..labels import from_row

        try:
            rows = self.db.execute("SELECT community, label, keywords, weights, size FROM community_labels").fetchall()
        except sqlite3.OperationalError:  # no such table: an older index opened read-only
            return {}
        return {r[0]: from_row(r) for r in rows}

    def labels_missing(self) -> bool:
        """True when communities exist but no labels do (an index built before labels existed)."""
        has_communities = self.db.execute("SELECT 1 FROM communities WHERE community >= 0 LIMIT 1").fetchone()
        return bool(has_communities) and not self.db.execute("SELECT 1 FROM community_labels LIMIT 1").fetchone()

    def _label_state(self):
        """The membership the stored labels were computed from, and those labels (labels.Membership)."""
        from ..labels import membership

        basis = np.array(self.db.execute("SELECT chunk_id, community FROM community_label_basis ORDER BY chunk_id").fetchall(), dtype=np.int64).reshape(-1, 2)
        stored = self.db.execute("SELECT basis, label, keywords, weights, size FROM community_labels").fetchall()
        return membership(basis[:, 0], basis[:, 1], stored)

    def _community_texts(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT c.text FROM communities m JOIN chunks c ON c.id = m.chunk_id ORDER BY m.chunk_id")]

    def _write_labels(self, cache: Path | None) -> int:
        """Label the communities now stored (inside the caller's transaction); returns how many."""
        from ..labels import label_row, plan_labels

        ids, community = self.memberships()
        rows, rebased = plan_labels(ids, community, self._label_state(), self._community_texts, cache)
        if rebased:
            self.db.execute("DELETE FROM community_label_basis")
            self.db.execute("INSERT INTO community_label_basis(chunk_id, community) SELECT chunk_id, community FROM communities")
        self.db.execute("DELETE FROM community_labels")
        self.db.executemany(
            "INSERT INTO community_labels(community, basis, label, keywords, weights, size) VALUES (?, ?, ?, ?, ?, ?)",
            [label_row(n, basis, c) for n, basis, c in rows],
        )
        return len(rows)

    def dates_missing(self) -> bool:
        has_files = self.db.execute("SELECT 1 FROM files LIMIT 1").fetchone()
        return bool(has_files) and not self.db.execute("SELECT 1 FROM file_dates LIMIT 1").fetchone()

    def dates_stale(self) -> bool:
        """Whether the files were dated under older date rules (ragx/index/dates.py DATE_RULES)."""
        return int(self.manifest().get("date_rules", 1)) < DATE_RULES

    def _write_dates(self, from_git: dict[str, float], paths: list[str] | None = None) -> None:
        """Recompute indexed files' dates inside the caller's transaction (set-based reads): every
        file's, or only those of `paths` when nothing else can have changed (no git dates involved)."""
        from ..dates import date_rows, leading_text

        if paths is not None and not from_git and not self.db.execute("SELECT 1 FROM file_dates WHERE source = 'git' LIMIT 1").fetchone():
            fill_temp_text(self.db, "date_paths", paths)
            # (the dates of files gone went with their rows: drop_gone)
            self.db.execute("DELETE FROM file_dates WHERE path IN (SELECT path FROM temp.date_paths)")
            scope = " WHERE f.path IN (SELECT path FROM temp.date_paths)"
        else:
            self.db.execute("DELETE FROM file_dates")
            scope = ""
        files = self.db.execute(f"SELECT f.id, f.path, f.mtime_ns FROM files f{scope}").fetchall()
        firsts = self.db.execute(
            f"SELECT c.file_id, f.path, c.byte_start, c.text FROM files f JOIN chunks c ON c.file_id = f.id AND c.ordinal = 0{scope}"
        ).fetchall()
        # A note's frontmatter is not chunked: what precedes its first chunk is read from the file itself.
        root = self.path.parent.parent  # <root>/.ragx/index.sqlite
        heads = {fid: text if start == 0 else leading_text(root / path, start) for fid, path, start, text in firsts}
        self.db.executemany("INSERT INTO file_dates(path, date, source) VALUES (?, ?, ?)", date_rows(files, heads, from_git))

    def backfill(self, terms_cache: Path | None, git_dates, chunk_files) -> None:
        """A run without a new generation still adds labels, dates and the arrays' fingerprint an older
        index lacks (`git_dates`, `chunk_files`: callables, run only when their part is missing;
        `chunk_files` gives the committed generation's (ids, file ids))."""
        if "chunk_fingerprint" not in self.manifest():
            fingerprint = chunk_fingerprint(*chunk_files())  # of the arrays, as a commit records it
            with self.transaction() as db:
                self.write_manifest(db, {"chunk_fingerprint": fingerprint})
        if self.labels_missing():
            with self.transaction():
                self._write_labels(terms_cache)
        if self.dates_missing() or self.dates_stale():
            with self.transaction() as db:
                self._write_dates(git_dates())
                self.write_manifest(db, {"date_rules": DATE_RULES})

    def file_info(self, paths: Sequence[str]) -> dict[str, tuple]:
        """path -> (size, mtime_ns, date, date source, content hash) as indexed; date and source None
        without a date."""
        if not paths:
            return {}
        marks = ",".join("?" * len(paths))
        try:
            rows = self.db.execute(
                f"SELECT f.path, f.size, f.mtime_ns, d.date, d.source, f.hash FROM files f LEFT JOIN file_dates d ON d.path = f.path "
                f"WHERE f.path IN ({marks})", list(paths)).fetchall()
        except sqlite3.OperationalError:  # an index from before file dates: no dates, staleness still known
            rows = [(p, size, mtime_ns, None, None, digest) for p, size, mtime_ns, digest in self.db.execute(
                f"SELECT path, size, mtime_ns, hash FROM files WHERE path IN ({marks})", list(paths))]
        return {r[0]: r[1:] for r in rows}
