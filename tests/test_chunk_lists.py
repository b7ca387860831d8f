"""The chunk lists as a base and a delta: a small run links chunks.npz and writes chunks-delta.npz only;
an index whose chunks.npz holds the lists whole upgrades in one run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from fakes import make_corpus
from test_stored_vectors import _gen, _index  # the same index run and generation folder

from ragx.api import Corpus
from ragx.index import stored_vectors, verified
from ragx.index.chunk_lists import read_chunk_lists
from ragx.index.snapshot import Snapshot
from ragx.index.store import Store
from ragx.index.verified import CHUNKS, CHUNKS_DELTA, file_checksum

pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake
QUERY = "telescope orbit comet"


def _edit(root: Path, n: int) -> None:
    (root / f"cooking-{n}.md").write_text(f"# cooking {n}\n\nstars telescope orbit comet bread oven {n}\n", encoding="utf-8")
    (root / f"sailing-{n}.md").unlink()
    (root / f"new-topic-{n}.md").write_text(f"# new {n}\n\nanchor harbour galaxies nebula flour yeast\n", encoding="utf-8")


def _store_lists(root: Path) -> tuple[np.ndarray, np.ndarray]:
    """The live chunks and their files as the SQLite rows hold them (the truth the arrays must follow)."""
    store = Store(root / ".ragx" / "index.sqlite", readonly=True)
    try:
        return store.chunk_files()
    finally:
        store.close()


def _assert_lists_match_the_store(root: Path) -> None:
    ids, file_ids = Snapshot.chunk_files(_gen(root), None)
    want_ids, want_files = _store_lists(root)
    order = np.argsort(want_ids)
    assert np.array_equal(ids, want_ids[order]) and np.array_equal(file_ids, want_files[order])
    assert Corpus(root).status(deep=True)["consistent"]


def _ranking(root: Path) -> list[tuple[str, int]]:
    doc = Corpus(root).query(QUERY, graph=False, rerank=False, expand=False)
    return [(r["file"], r["line_start"]) for r in doc["results"]]


def test_small_runs_link_the_chunk_base_and_write_only_a_delta(tmp_path):
    make_corpus(tmp_path)
    _index(tmp_path)
    base = (_gen(tmp_path) / CHUNKS).stat().st_ino  # (old generation folders are deleted: keep the inode)
    for n in (0, 1):  # two runs: the second's delta carries the first's
        _edit(tmp_path, n)
        _index(tmp_path)
        gen = _gen(tmp_path)
        assert (gen / CHUNKS).stat().st_ino == base
        lists = read_chunk_lists(gen)
        assert len(lists.delta_ids) > 0 and len(lists.ids) < len(lists.base_ids) + len(lists.delta_ids)  # added and gone
        _assert_lists_match_the_store(tmp_path)
    incremental = _ranking(tmp_path)
    _index(tmp_path, full=True)
    assert len(read_chunk_lists(_gen(tmp_path)).delta_ids) == 0
    assert _ranking(tmp_path) == incremental


def test_a_change_beyond_the_budget_writes_a_new_chunk_base(tmp_path, monkeypatch):
    make_corpus(tmp_path)
    _index(tmp_path)
    base = (_gen(tmp_path) / CHUNKS).stat().st_ino
    monkeypatch.setattr(stored_vectors, "DELTA_MIN_ROWS", 1)
    monkeypatch.setattr(stored_vectors, "DELTA_SHARE", 0.0)
    _edit(tmp_path, 0)
    _index(tmp_path)
    gen = _gen(tmp_path)
    assert (gen / CHUNKS).stat().st_ino != base
    lists = read_chunk_lists(gen)
    assert np.array_equal(lists.ids, lists.base_ids) and len(lists.delta_ids) == 0
    _assert_lists_match_the_store(tmp_path)


def _make_whole_lists(root: Path) -> None:
    """Rewrite the committed generation as the format before the chunk delta wrote it: chunks.npz with the
    live lists whole plus base_ids and delta_ids, no chunks-delta.npz."""
    gen = _gen(root)
    lists = read_chunk_lists(gen)
    (gen / CHUNKS).unlink()  # a hard link: replaced, never written through
    np.savez(gen / CHUNKS, ids=lists.ids, file_ids=lists.file_ids, base_ids=lists.base_ids, delta_ids=lists.delta_ids)
    (gen / CHUNKS_DELTA).unlink()
    db = sqlite3.connect(root / ".ragx" / "index.sqlite")
    checksums = json.loads(db.execute("SELECT value FROM manifest WHERE key = 'checksums'").fetchone()[0])
    checksums.pop(CHUNKS_DELTA)
    checksums[CHUNKS] = file_checksum(gen / CHUNKS)
    with db:
        db.execute("UPDATE manifest SET value = ? WHERE key = 'checksums'", (json.dumps(checksums, sort_keys=True),))
    db.close()
    verified.record(gen, checksums)


def test_an_index_with_whole_chunk_lists_is_read_and_upgrades_in_one_run(tmp_path):
    make_corpus(tmp_path)
    _index(tmp_path)
    _edit(tmp_path, 0)
    _index(tmp_path)  # a vector delta and deleted base rows, so the old format's lists differ from its base
    _make_whole_lists(tmp_path)
    _assert_lists_match_the_store(tmp_path)  # read as it is
    old_ranking = _ranking(tmp_path)
    _edit(tmp_path, 1)
    _index(tmp_path)
    upgraded = _gen(tmp_path)
    assert (upgraded / CHUNKS).stat().st_nlink == 1  # written once in the new format, not linked
    base = (upgraded / CHUNKS).stat().st_ino
    lists = read_chunk_lists(upgraded)
    assert len(lists.base_ids) > len(lists.ids) - len(lists.delta_ids)  # the vector base stayed linked: rows gone
    _assert_lists_match_the_store(tmp_path)
    assert old_ranking
    _edit(tmp_path, 2)
    _index(tmp_path)
    assert (_gen(tmp_path) / CHUNKS).stat().st_ino == base  # linked from then on
    _assert_lists_match_the_store(tmp_path)
