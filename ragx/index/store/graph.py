"""The graph's rows: each chunk's kNN list (directed, weighted) and the community Leiden put it in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
else:  # `ragx status` reads the store without numpy (lazy.py)
    from ...lazy import lazy_module

    np = lazy_module("numpy")

from ...lookup import find_sorted
from .schema import StoreBase
from .temp import fill_temp


def knn_columns(rows: list[tuple]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not rows:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64)
    ids = np.array([r[:2] for r in rows], dtype=np.int64)
    return ids[:, 0], ids[:, 1], np.array([r[2] for r in rows], dtype=np.float64)


class Graph(StoreBase):
    """kNN rows and community memberships: read by id sets, rewritten by an index run."""

    def knn_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every directed kNN row as arrays (src, dst, weight)."""
        return knn_columns(self.db.execute("SELECT src, dst, weight FROM knn ORDER BY src, dst").fetchall())

    def knn_sources_of(self, dst_ids: np.ndarray) -> np.ndarray:
        """Sorted distinct chunks whose kNN list names one of `dst_ids` (an indexed read by dst)."""
        if not len(dst_ids):
            return np.empty(0, np.int64)
        fill_temp(self.db, "knn_ids", dst_ids.tolist())
        rows = self.db.execute("SELECT DISTINCT k.src FROM temp.knn_ids t CROSS JOIN knn k ON k.dst = t.id ORDER BY k.src").fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    def knn_rows_of(self, src_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The kNN rows (src, dst, weight) of `src_ids`, sorted by (src, dst)."""
        fill_temp(self.db, "knn_ids", np.asarray(src_ids).tolist())
        return knn_columns(self.db.execute(
            "SELECT k.src, k.dst, k.weight FROM temp.knn_ids t CROSS JOIN knn k ON k.src = t.id ORDER BY k.src, k.dst").fetchall())

    def knn_rows_touching(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every kNN row whose src or dst is one of `ids`: all a chunk's undirected edges come from them."""
        fill_temp(self.db, "knn_ids", np.asarray(ids).tolist())
        return knn_columns(self.db.execute(
            "SELECT k.src, k.dst, k.weight FROM temp.knn_ids t CROSS JOIN knn k ON k.src = t.id "
            "UNION SELECT k.src, k.dst, k.weight FROM temp.knn_ids t CROSS JOIN knn k ON k.dst = t.id").fetchall())

    def community_array(self, ids: np.ndarray) -> np.ndarray:
        """The community of each of `ids` (NO_COMMUNITY where it has none), in the order given."""
        from ..communities import NO_COMMUNITY

        ids = np.asarray(ids, dtype=np.int64)
        out = np.full(len(ids), NO_COMMUNITY, dtype=np.int64)
        fill_temp(self.db, "lookup_chunks", ids.tolist())
        rows = self.db.execute(
            "SELECT m.chunk_id, m.community FROM temp.lookup_chunks t CROSS JOIN communities m ON m.chunk_id = t.id ORDER BY m.chunk_id").fetchall()
        if rows:
            known = np.array(rows, dtype=np.int64)
            pos, found = find_sorted(known[:, 0], ids)
            out[found] = known[pos[found], 1]
        return out

    def communities_of(self, ids: Sequence[int]) -> dict[int, int]:
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        fill_temp(self.db, "lookup_chunks", ids)
        return dict(self.db.execute("SELECT chunk_id, community FROM communities WHERE chunk_id IN (SELECT id FROM temp.lookup_chunks)").fetchall())

    def community_sizes(self) -> list[tuple[int, int, int]]:
        """(community, chunks, files) of every community, by number."""
        return self.db.execute(
            "SELECT m.community, count(*), count(DISTINCT c.file_id) FROM communities m JOIN chunks c ON c.id = m.chunk_id "
            "WHERE m.community >= 0 GROUP BY m.community ORDER BY m.community"
        ).fetchall()

    def community_files(self) -> list[tuple[int, str, int]]:
        """(community, file path, chunks) ordered by community, then most chunks first."""
        return self.db.execute(
            "SELECT m.community, f.path, count(*) n FROM communities m JOIN chunks c ON c.id = m.chunk_id "
            "JOIN files f ON f.id = c.file_id WHERE m.community >= 0 GROUP BY m.community, f.path ORDER BY m.community, n DESC, f.path"
        ).fetchall()

    def isolated_chunks(self) -> int:
        return self.db.execute("SELECT count(*) FROM communities WHERE community < 0").fetchone()[0]

    def community_members(self, number: int) -> list[int]:
        return [r[0] for r in self.db.execute("SELECT chunk_id FROM communities WHERE community = ? ORDER BY chunk_id", (number,))]

    def memberships(self, members_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids sorted, community of each); `members_only` leaves out isolated chunks (community < 0)."""
        where = " WHERE community >= 0" if members_only else ""
        rows = self.db.execute(f"SELECT chunk_id, community FROM communities{where} ORDER BY chunk_id").fetchall()
        arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
        return arr[:, 0], arr[:, 1]

    def _update_communities(self, removed: np.ndarray, ids: np.ndarray, numbers: np.ndarray) -> None:
        """An incremental run that did not run Leiden: drop deleted chunks' rows, write `ids`' communities,
        and keep each label's size in step (a label is dropped with its community's last chunk)."""
        before = self.community_array(np.concatenate([removed, ids]))
        fill_temp(self.db, "gone_chunks", removed.tolist())
        self.db.execute("DELETE FROM communities WHERE chunk_id IN (SELECT id FROM temp.gone_chunks)")
        self.db.executemany("INSERT OR REPLACE INTO communities(chunk_id, community) VALUES (?, ?)", zip(ids.tolist(), numbers.tolist()))
        change = np.concatenate([before, numbers])
        sign = np.concatenate([-np.ones(len(before), np.int64), np.ones(len(numbers), np.int64)])
        member = change >= 0
        touched, inverse = np.unique(change[member], return_inverse=True)
        delta = np.bincount(inverse.ravel(), weights=sign[member], minlength=len(touched)).astype(np.int64)
        self.db.executemany("UPDATE community_labels SET size = size + ? WHERE community = ?", zip(delta.tolist(), touched.tolist()))
        self.db.execute("DELETE FROM community_labels WHERE size <= 0")
