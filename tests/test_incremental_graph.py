"""Incremental runs touch only what the change reaches: the graph is a linked base plus a delta of
changed rows, counts are recorded at commit, and at scale (HNSW lists, communities by vote) the
result still matches a full rebuild on a corpus small enough for HNSW to be exact."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from fakes import HashEmbedder, make_corpus
from test_build import graph_by_location

from ragx.api import Corpus
from ragx.config import load_settings
from ragx.index import arrays, repair
from ragx.index.build import run_index
from ragx.index.layout import Layout
from ragx.index.snapshot import Snapshot
from ragx.index.store import Store
from ragx.index.verified import GRAPH


@pytest.fixture
def corpus(tmp_path):
    make_corpus(tmp_path)
    return tmp_path


def index(root: Path, full: bool = False):
    return run_index(root, load_settings(root), HashEmbedder(), full=full)


def current(root: Path) -> tuple[Path, Snapshot]:
    layout = Layout(root)
    store = Store(layout.db)
    try:
        folder = layout.gen(int(store.manifest()["generation"]))
    finally:
        store.close()
    return folder, Snapshot.load(folder)


def stored_edges(root: Path) -> dict[tuple[int, int], float]:
    db = sqlite3.connect(root / ".ragx" / "index.sqlite")
    try:
        return {(a, b): w for a, b, w in db.execute("SELECT a, b, weight FROM edges")}
    finally:
        db.close()


def graph_edges(snap: Snapshot) -> dict[tuple[int, int], float]:
    a, b, w = snap.graph.all_edges()
    return {(int(x), int(y)): float(z) for x, y, z in zip(a, b, w)}


def edit(root: Path, step: int) -> None:
    """One of a few kinds of change: an edited file, a deleted one, a new one."""
    kinds = [
        lambda: (root / "cooking-2.md").write_text(f"# cooking 2\n\nstars telescope orbit comet bread oven {step}\n", encoding="utf-8"),
        lambda: (root / f"sailing-{step % 6}.md").unlink(missing_ok=True),
        lambda: (root / f"new-{step}.md").write_text(f"# new {step}\n\nanchor harbour galaxies nebula flour yeast\n", encoding="utf-8"),
    ]
    kinds[step % 3]()


def test_the_graph_base_is_linked_and_only_changed_rows_are_written(corpus):
    index(corpus)
    base_inode = os.stat(current(corpus)[0] / GRAPH).st_ino
    for step in range(4):
        edit(corpus, step)
        index(corpus)
        folder, snap = current(corpus)
        assert graph_edges(snap) == stored_edges(corpus)  # base + delta = every stored edge, weights exact
        assert os.stat(folder / GRAPH).st_ino == base_inode  # the base is not rewritten
        assert 0 < len(snap.graph.delta.ids) < len(snap.graph.ids)
    counted = Corpus(corpus).status(deep=True)
    assert counted["consistent"], counted["problems"]
    store = Store(Layout(corpus).db)
    try:
        assert store.counts() == store.counted_in_sql()  # the counts recorded at commit are the true ones
    finally:
        store.close()


def test_a_delta_over_its_budget_is_compacted_into_a_new_base(corpus, monkeypatch):
    index(corpus)
    base_inode = os.stat(current(corpus)[0] / GRAPH).st_ino
    monkeypatch.setattr(arrays, "delta_budget", lambda live: 0)
    edit(corpus, 2)
    index(corpus)
    folder, snap = current(corpus)
    assert os.stat(folder / GRAPH).st_ino != base_inode
    assert len(snap.graph.delta.ids) == 0
    assert graph_edges(snap) == stored_edges(corpus)


def test_at_scale_repair_through_hnsw_equals_a_full_rebuild_and_new_chunks_join_communities(corpus, monkeypatch):
    index(corpus)
    monkeypatch.setattr(repair, "EXACT_MAX_CHUNKS", 0)        # the HNSW route of a large index
    monkeypatch.setattr(arrays, "LEIDEN_EVERY_RUN_MAX", 0)    # communities by vote, no Leiden
    for step in range(3):
        edit(corpus, step)
        index(corpus)
    incremental = graph_by_location(corpus)
    folder, snap = current(corpus)
    db = sqlite3.connect(corpus / ".ragx" / "index.sqlite")
    try:
        new_ids = [r[0] for r in db.execute("SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path LIKE 'new-%'")]
        joined = dict(db.execute("SELECT chunk_id, community FROM communities"))
        sizes = dict(db.execute("SELECT community, count(*) FROM communities WHERE community >= 0 GROUP BY community"))
        labelled = dict(db.execute("SELECT community, size FROM community_labels"))
    finally:
        db.close()
    linked = [i for i in new_ids if len(snap.graph.neighbors(i)[0])]
    assert linked and all(joined[i] >= 0 for i in linked)  # a new chunk with neighbours joins their community
    assert set(joined) == set(snap.ids.tolist())
    assert labelled == sizes  # label sizes follow their communities
    status = Corpus(corpus).status(deep=True)
    assert status["consistent"], status["problems"]
    assert status["communities"] == len(sizes)

    index(corpus, full=True)
    assert graph_by_location(corpus) == incremental  # HNSW over a few dozen chunks is exact


def test_hnsw_route_finds_the_lists_the_exact_route_finds(tmp_path, monkeypatch):
    """Two copies of one corpus, edited alike: the scale route's kNN rows equal the exact route's."""
    rows = []
    for name, scan in (("exact", repair.EXACT_MAX_CHUNKS), ("hnsw", 0)):
        root = tmp_path / name
        root.mkdir()
        make_corpus(root)
        index(root)
        monkeypatch.setattr(repair, "EXACT_MAX_CHUNKS", scan)
        for step in range(3):
            edit(root, step)
            index(root)
        rows.append(graph_by_location(root))
    assert rows[0] == rows[1] and len(rows[0]) > 0


def test_graph_rows_of_a_delta_read_like_one_csr():
    from ragx.index.graph import Adjacency, Graph

    ids = np.array([1, 2, 3, 4])
    base = Graph.from_edges(ids, np.array([1, 1, 2]), np.array([2, 3, 3]), np.array([0.9, 0.8, 0.7]))
    # chunk 3 goes, chunk 5 arrives linked to 1 and 4: rows 1, 2, 4, 5 change
    live = np.array([1, 2, 4, 5])
    rows = Adjacency.of_rows(np.array([1, 2, 4, 5]), np.array([1, 1, 4]), np.array([2, 5, 5]), np.array([0.9, 0.6, 0.5]))
    after = base.with_rows(live, rows)
    assert after.check()
    lens, nbr, w = after.edges_of(np.arange(4))
    assert lens.tolist() == [2, 1, 1, 2] and nbr.tolist() == [2, 5, 1, 5, 1, 4]
    assert after.n_edges == 3
    assert [x.tolist() for x in after.all_edges()] == [[1, 1, 4], [2, 5, 5], [0.9, 0.6, 0.5]]
    compact = after.compacted()
    assert [x.tolist() for x in compact.all_edges()] == [x.tolist() for x in after.all_edges()] and len(compact.delta.ids) == 0


def test_an_index_from_before_graph_deltas_reads_and_converts_on_its_next_run(corpus):
    """A generation whose graph.npz has no row ids and a manifest without counts (older code)."""
    import json

    from ragx.index.verified import file_checksum

    index(corpus)
    folder, snap = current(corpus)
    edges_before = graph_edges(snap)
    rows = {name: np.array(getattr(snap.graph.base, name)) for name in ("indptr", "nbr", "weight")}  # copies: the file is mapped
    del snap
    with open(folder / "old.npz", "wb") as fh:  # the old layout: rows are the generation's live ids
        np.savez(fh, **rows)
    os.replace(folder / "old.npz", folder / GRAPH)
    (folder / "graph-delta.npz").unlink()
    db = sqlite3.connect(corpus / ".ragx" / "index.sqlite")
    checksums = json.loads(db.execute("SELECT value FROM manifest WHERE key = 'checksums'").fetchone()[0])
    checksums[GRAPH] = file_checksum(folder / GRAPH)
    checksums.pop("graph-delta.npz")
    db.execute("UPDATE manifest SET value = ? WHERE key = 'checksums'", (json.dumps(checksums),))
    db.execute("DELETE FROM manifest WHERE key = 'counts'")
    db.commit()
    db.close()
    assert graph_edges(current(corpus)[1]) == edges_before  # still reads
    assert Corpus(corpus).status(deep=True)["consistent"]

    edit(corpus, 0)
    index(corpus)
    folder, snap = current(corpus)
    assert os.stat(folder / GRAPH).st_nlink == 1 and len(snap.graph.delta.ids) == 0  # converted: a new base
    assert graph_edges(snap) == stored_edges(corpus)
    edit(corpus, 2)
    index(corpus)
    assert os.stat(current(corpus)[0] / GRAPH).st_nlink == 2  # and linked from then on
    assert Corpus(corpus).status(deep=True)["consistent"]
