"""The one transaction of an index run: every table an index run writes, in one commit."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..dates import DATE_RULES
from .anchors import write_anchor_docs
from .files import FilesAndChunks, drop_gone, insert_new
from .integrity import Integrity, chunk_fingerprint
from .labels import LabelsAndDates

if TYPE_CHECKING:  # pragma: no cover
    from ..arrays import Arrays
    from ..plan import ChangeSet


@dataclass(frozen=True)
class RunExtras:
    """Inputs of the tables an index run derives in its transaction besides the ChangeSet's rows."""

    terms_cache: Path | None = None  # .ragx/label-terms.npz: chunk x term counts kept across runs (labels.py)
    git_dates: dict[str, float] = field(default_factory=dict)  # path -> last commit time, read before the transaction


class IndexRun(FilesAndChunks, LabelsAndDates, Integrity):
    """`apply`: a ChangeSet and the run's arrays written as one commit."""

    def apply(self, change: "ChangeSet", arrays: "Arrays", manifest: dict[str, Any], extras: RunExtras | None = None) -> None:
        """The one transaction of an index run: files, chunks, frontmatter headers, links, lexical rows,
        knn, text-less PDF pages, communities and their labels, file dates, the undecodable list, manifest."""
        extras = extras or RunExtras()
        with self.transaction() as db:
            # The generation this run commits has BM25 postings: an older index's FTS5 table, a second
            # lexical index of every chunk (~300 MB at a million chunks), goes with the same commit.
            db.execute("DROP TABLE IF EXISTS chunks_fts")
            if change.full:
                for table in ("chunks", "files", "knn", "communities", "chunk_headers", "links", "anchors"):
                    db.execute(f"DELETE FROM {table}")
                anchor_targets: list[str] = []
            else:
                anchor_targets = drop_gone(db, change, arrays)
            insert_new(db, change)
            write_anchor_docs(db, None if change.full else anchor_targets + [t for _, _, t, _ in change.anchors])
            db.executemany(
                "INSERT INTO knn(src, dst, weight) VALUES (?, ?, ?)",
                zip(arrays.knn_src.tolist(), arrays.knn_dst.tolist(), arrays.knn_weight.tolist()),
            )
            self._record_textless(change.pdfs_read, change.textless)
            rows = zip(arrays.community_ids.tolist(), arrays.community.tolist())
            if arrays.communities_whole:
                db.execute("DELETE FROM communities")
                db.executemany("INSERT INTO communities(chunk_id, community) VALUES (?, ?)", rows)
                self._write_labels(extras.terms_cache)
            else:
                self._update_communities(change.removed, arrays.community_ids, arrays.community)
            every = change.full or self.dates_stale()
            self._write_dates(extras.git_dates, None if every else [f.path for f, _ in change.files] + [f.path for f, _ in change.touched])
            self.write_undecodable(db, change.undecodable)
            fingerprint = chunk_fingerprint(arrays.graph.ids, arrays.file_ids)  # what chunks.npz holds
            rules = {"date_rules": DATE_RULES} if every else {}
            self.write_manifest(db, manifest | {"counts": self._counted(arrays), "chunk_fingerprint": fingerprint} | rules)
