"""What the store says about its own consistency: the chunk table's fingerprint (checked against the one
the arrays were committed with), counts, orphans, and SQLite's page check."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
else:  # `ragx status` reads the store without numpy (lazy.py)
    from ...lazy import lazy_module

    np = lazy_module("numpy")

from ...errors import REBUILD
from ...lookup import unique_ids
from .schema import StoreBase
from .text_sums import altered_chunks, altered_message

if TYPE_CHECKING:  # pragma: no cover
    from ..arrays import Arrays

# An order-free fingerprint of the (chunk id, file id) pairs: count, both sums, and a sum of squared
# pair hashes (a swap of two chunks' files moves it, the plain sums do not). SQLite computes it over the
# (file_id, id) index; `chunk_fingerprint` computes the same numbers over a generation's arrays at
# commit, so `ragx status` checks that the store still lists the chunks its arrays hold without loading
# them or numpy. Every term stays below 2**32: the sums are exact int64 up to 2**31 chunks.
_PAIR_HASH = (1_000_003, 7_919, 2_147_483_647)  # h = (id * a + file_id * b) % p

_SQUARE_MOD = 4_294_967_291                    # the summed term: h * h % this

FINGERPRINT_SQL = (
    "SELECT count(*), coalesce(sum(id), 0), coalesce(sum(file_id), 0), coalesce(sum(h * h %% %d), 0)"
    " FROM (SELECT id, file_id, (id * %d + file_id * %d) %% %d AS h FROM chunks)" % (_SQUARE_MOD, *_PAIR_HASH)
)


def chunk_fingerprint(ids: np.ndarray, file_ids: np.ndarray) -> list[int]:
    """FINGERPRINT_SQL's four numbers for these chunks (ids and file ids are never negative)."""
    ids, file_ids = np.asarray(ids, dtype=np.int64), np.asarray(file_ids, dtype=np.int64)
    a, b, p = _PAIR_HASH
    h = (ids * a + file_ids * b) % p
    return [len(ids), int(ids.sum()), int(file_ids.sum()), int((h * h % _SQUARE_MOD).sum())]


class Integrity(StoreBase):
    """Counts and checks of the store against itself and against what the last commit recorded."""

    def fts_size(self) -> int:
        """Chunks the FTS5 table of an index from before the postings holds."""
        return self.db.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()[0]

    def live_fingerprint(self) -> list[int]:
        """The chunk table's fingerprint now (FINGERPRINT_SQL); the manifest's `chunk_fingerprint` is
        the one of the arrays the last commit wrote."""
        return list(self.db.execute(FINGERPRINT_SQL).fetchone())

    def orphan_chunks(self) -> int:
        """Chunks whose file row is missing."""
        return self.db.execute("SELECT count(*) FROM chunks WHERE file_id NOT IN (SELECT id FROM files)").fetchone()[0]

    def _counted(self, arrays: "Arrays") -> dict[str, int]:
        """What `counts` reports, computed at commit from what the run already holds (counting edges in
        SQL reads every kNN row: seconds at a million chunks)."""
        if arrays.communities_whole:
            communities = len(unique_ids(arrays.community[arrays.community >= 0]))
        else:
            communities = self.db.execute("SELECT count(*) FROM community_labels").fetchone()[0]
        return {
            "files": self.db.execute("SELECT count(*) FROM files").fetchone()[0],
            "chunks": len(arrays.live),
            "edges": arrays.graph.n_edges,
            "communities": int(communities),
        }

    def counts(self) -> dict[str, int]:
        """Files, chunks, undirected edges and communities: as the last commit recorded them, or
        counted in SQL for an index written before counts were recorded."""
        recorded = self.manifest().get("counts")
        if isinstance(recorded, dict) and {"files", "chunks", "edges", "communities"} <= recorded.keys():
            return {k: int(recorded[k]) for k in ("files", "chunks", "edges", "communities")}
        return self.counted_in_sql()

    def counted_in_sql(self) -> dict[str, int]:
        one = lambda sql: self.db.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "files": one("SELECT count(*) FROM files"),
            "chunks": one("SELECT count(*) FROM chunks"),
            # = count(*) FROM edges, without the view's GROUP BY over every kNN row (3x slower: `ragx status`).
            # A pair counts once: from its smaller end, or from its only stored direction.
            "edges": one("SELECT count(*) FROM knn AS k WHERE src <= dst"
                         " OR NOT EXISTS (SELECT 1 FROM knn AS r WHERE r.src = k.dst AND r.dst = k.src)"),
            "communities": one("SELECT count(DISTINCT community) FROM communities WHERE community >= 0"),
        }

    def integrity_problems(self, limit: int = 3) -> list[str]:
        """SQLite's own check of every page of the database file (`status --deep`): [] when sound."""
        rows = [r[0] for r in self.db.execute(f"PRAGMA quick_check({int(limit)})").fetchall()]
        if rows == ["ok"]:
            return []
        lines = [line.strip() for row in rows for line in str(row).splitlines() if line.strip()]
        found = "; ".join(line for line in lines if not line.startswith("***")) or "; ".join(lines)  # drop SQLite's header
        return [f"the index database is damaged ({found}): {REBUILD}"]

    def text_problems(self) -> list[str]:
        """Chunk texts that differ from their checksums (`status --deep`; reads every text: O(corpus)).
        An index from before the checksums has none to compare until its next index run."""
        altered = altered_chunks(self.db) if self.has_text_sums else []
        return [altered_message(altered)] if altered else []
