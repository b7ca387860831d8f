"""Vectors as a base and a delta: a small incremental run links the base files and writes the delta only."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from fakes import HashEmbedder, make_corpus

from ragx.api import Corpus
from ragx.config import load_settings
from ragx.index import stored_vectors
from ragx.index.build import run_index
from ragx.index.snapshot import Snapshot
from ragx.index.vectors import VectorIndex, rescore_pool
from ragx.index.verified import DELTA, HNSW, VECTORS_NPY

QUERY = "telescope orbit comet"
pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake


def _index(root: Path, full: bool = False):
    return run_index(root, load_settings(root), HashEmbedder(), full=full)


def _gen(root: Path) -> Path:
    db = sqlite3.connect(root / ".ragx" / "index.sqlite")
    gen = int(db.execute("SELECT value FROM manifest WHERE key = 'generation'").fetchone()[0])
    db.close()
    return root / ".ragx" / f"gen-{gen:06d}"


def _ranking(root: Path) -> list[tuple[str, int]]:
    doc = Corpus(root).query(QUERY, graph=False, rerank=False, expand=False)
    return [(r["file"], r["line_start"]) for r in doc["results"]]


def _edit(root: Path) -> None:
    (root / "cooking-2.md").write_text("# cooking 2\n\nstars telescope orbit comet bread oven\n", encoding="utf-8")
    (root / "sailing-0.md").unlink()
    (root / "new-topic.md").write_text("# new\n\nanchor harbour galaxies nebula flour yeast\n", encoding="utf-8")


def test_a_small_change_links_the_base_files_and_searches_as_a_full_rebuild_does(tmp_path):
    make_corpus(tmp_path)
    _index(tmp_path)
    first = _gen(tmp_path)
    _edit(tmp_path)
    _index(tmp_path)
    second = _gen(tmp_path)
    for name in (VECTORS_NPY, HNSW):  # the very same files, not copies
        assert (second / name).stat().st_ino == (first / name).stat().st_ino
    snap = Snapshot.load(second, with_ann=True)
    assert len(snap.stored.delta_ids) > 0 and set(snap.stored.delta_ids) <= set(snap.ids)
    assert len(snap.stored.dead(snap.ids)) > 0  # the deleted file's chunks: still in the base, hidden
    assert not set(snap.stored.dead(snap.ids)) & set(snap.vindex.search(snap.vindex.get(snap.ids[:1])[0], len(snap.ids), len(snap.ids))[0])
    rows = np.asarray(snap.vectors, dtype=np.float32)
    assert rows.shape == (len(snap.ids), snap.vectors.shape[1])
    held = snap.vindex.get(snap.ids)  # each live chunk's own vector, base or delta (the base's int8-rounded)
    assert np.allclose(held, rows, atol=1 / 127) and np.array_equal(np.argmax(held @ rows.T, axis=1), np.arange(len(rows)))
    assert Corpus(tmp_path).status(deep=True)["consistent"]
    incremental = _ranking(tmp_path)
    assert incremental
    _index(tmp_path, full=True)
    assert len(Snapshot.load(_gen(tmp_path)).stored.delta_ids) == 0
    assert _ranking(tmp_path) == incremental


def test_a_change_beyond_the_budget_compacts(tmp_path, monkeypatch):
    make_corpus(tmp_path)
    _index(tmp_path)
    first = _gen(tmp_path)
    monkeypatch.setattr(stored_vectors, "DELTA_MIN_ROWS", 1)
    monkeypatch.setattr(stored_vectors, "DELTA_SHARE", 0.0)
    _edit(tmp_path)
    _index(tmp_path)
    second = _gen(tmp_path)
    assert (second / VECTORS_NPY).stat().st_ino != (first / VECTORS_NPY).stat().st_ino
    snap = Snapshot.load(second)
    assert len(snap.stored.delta_ids) == 0 and np.array_equal(snap.stored.base_ids, snap.ids)
    assert np.load(second / DELTA).shape[0] == 0
    assert Corpus(tmp_path).status(deep=True)["consistent"]


@pytest.mark.parametrize("seed,mapped", [(0, False), (1, False), (0, True), (1, True)])
def test_hnsw_with_a_delta_finds_what_exact_search_finds(seed, mapped, tmp_path):
    """In memory the dead are removed; in a mapped (read-only) file they are filtered out of results."""
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(300, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = np.arange(1, 301, dtype=np.int64)
    base, delta = ids[:250], ids[250:]
    dead = base[::7]
    index = VectorIndex.build(base, vecs[:250])
    if mapped:
        index.save(tmp_path / HNSW)
        index = VectorIndex.load(tmp_path / HNSW, 16)
    index.attach(dead, delta, vecs[250:], len(base) - len(dead))
    live = np.setdiff1d(ids, dead)
    queries = rng.normal(size=(20, 16)).astype(np.float32)
    exact_sims = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ vecs[live - 1].T
    exact = live[np.argsort(-exact_sims, axis=1)[:, :10]]
    # The index proposes candidates (int8 distances); callers keep the best k by exact cosine.
    pool = rescore_pool(10)
    got = index.knn_batch(queries, pool, ef=200)
    assert not set(got.ravel().tolist()) & set(dead.tolist())
    rescored = [live_row[np.argsort(-(vecs[live_row - 1] @ q))[:10]] for live_row, q in zip(got, queries)]
    assert np.mean([len(set(a.tolist()) & set(b)) / 10 for a, b in zip(rescored, exact.tolist())]) > 0.98
    found, sims = index.search(queries[0], pool, len(live))
    assert set(exact[0].tolist()) <= set(found.tolist()) and np.all(np.diff(sims) <= 1e-6)
    assert not set(found.tolist()) & set(dead.tolist())


def test_a_mapped_index_changes_only_in_memory_and_saves_what_it_serves(tmp_path):
    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(200, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = np.arange(1, 201, dtype=np.int64)
    VectorIndex.build(ids[:150], vecs[:150]).save(tmp_path / "a.hnsw")
    before = (tmp_path / "a.hnsw").read_bytes()
    index = VectorIndex.load(tmp_path / "a.hnsw", 16).attach(ids[:10], np.empty(0, np.int64), np.empty((0, 16)), 140)
    with pytest.raises(KeyError):
        index.get(ids[:1])  # hidden
    assert np.allclose(index.get(ids[10:150]), vecs[10:150], atol=1 / 127)  # int8 copies
    index.add(ids[150:], vecs[150:])  # the first change loads the file into memory, hidden ids removed
    index.save(tmp_path / "b.hnsw")
    assert (tmp_path / "a.hnsw").read_bytes() == before  # the mapped file is never written through
    again = VectorIndex.load(tmp_path / "b.hnsw", 16)
    found = again.knn_batch(vecs[:20], 5, ef=100)
    assert not np.isin(found, ids[:10]).any() and np.isin(found, ids[10:]).all()
    assert np.allclose(again.get(ids[10:]), vecs[10:], atol=1 / 127)


def test_a_damaged_ann_file_is_refused_in_one_line(tmp_path):
    from ragx.errors import CorruptIndexError

    (tmp_path / HNSW).write_bytes(b"not an index at all" * 10)
    with pytest.raises(CorruptIndexError, match="run `ragx index --full`"):
        VectorIndex.load(tmp_path / HNSW, 16)


def test_npz_members_are_mapped_in_place_or_read_when_compressed(tmp_path):
    from ragx.index.snapshot import mapped_npz

    arrays = {"a": np.arange(10, dtype=np.int64), "b": np.linspace(0, 1, 7), "c": np.empty(0, np.int64),
              "d": np.asfortranarray(np.arange(12.0).reshape(3, 4))}
    for save in (np.savez, np.savez_compressed):
        save(tmp_path / "x.npz", **arrays)
        got = mapped_npz(tmp_path / "x.npz", tuple(arrays))
        assert all(np.array_equal(g, a) for g, a in zip(got, arrays.values()))
        assert isinstance(got[0].base, np.memmap) == (save is np.savez)  # a view of the file's pages, or read
        assert type(got[0]) is np.ndarray  # a plain array: reading an item of a memmap costs ~10x more


def test_graph_files_are_written_with_their_arrays_aligned_for_mapping(tmp_path):
    """Every array of a graph file starts on a 64-byte boundary, so the mapped arrays are aligned (numpy
    copies a whole unaligned array before each binary search in it); np.load reads the file as ever."""
    from ragx.index.snapshot import mapped_npz, save_mappable_npz
    from ragx.index.verified import GRAPH

    arrays = {"ids": np.arange(1, 1002, dtype=np.int64), "w": np.linspace(0, 1, 13), "none": np.empty(0, np.int64),
              "m": np.arange(12, dtype=np.int32).reshape(3, 4), "odd": np.arange(5, dtype=np.uint8)}
    with open(tmp_path / "a.npz", "wb") as fh:
        save_mappable_npz(fh, **arrays)
    with np.load(tmp_path / "a.npz") as z:
        assert all(np.array_equal(z[k], v) and z[k].dtype == v.dtype for k, v in arrays.items())
    mapped = mapped_npz(tmp_path / "a.npz", tuple(arrays))
    assert all(np.array_equal(m, v) for m, v in zip(mapped, arrays.values()))
    assert all(m.ctypes.data % 64 == 0 for m in mapped if isinstance(m.base, np.memmap))
    assert sum(isinstance(m.base, np.memmap) for m in mapped) == 4  # every array but the empty one is mapped

    root = tmp_path / "corpus"
    root.mkdir()
    make_corpus(root)
    _index(root)
    names = ("ids", "indptr", "nbr", "weight")
    assert all(a.flags["ALIGNED"] and a.ctypes.data % 64 == 0 for a in mapped_npz(_gen(root) / GRAPH, names) if a.size)


def test_onnxruntime_still_loads_after_the_ann_library_in_one_process():
    """A long-lived process (MCP, the lab) may search, then embed: loading onnxruntime after usearch
    must not crash (usearch 2.26 made it segfault; pyproject pins below it)."""
    import subprocess
    import sys

    pytest.importorskip("onnxruntime")
    done = subprocess.run([sys.executable, "-c", "import usearch.index, onnxruntime"], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-400:]



_READER = """
import sys
import numpy as np
from ragx.index.vectors import VectorIndex, rescore_pool
got, _ = VectorIndex.load(sys.argv[1], 24).search(np.load(sys.argv[2]), 5, 3000)
package_imported = "usearch" in sys.modules
import usearch.index, onnxruntime  # a writer's import and the embedder's, after the reader's
again, _ = VectorIndex.load(sys.argv[1], 24).search(np.load(sys.argv[2]), 5, 3000)
print(got[0], package_imported, list(got) == list(again))
"""


def test_a_reader_searches_without_the_ann_package_and_a_writer_imports_it_after(tmp_path):
    """A query maps the file through usearch's compiled module alone (its package's imports cost a
    cold query ~60 ms); a process that later writes or embeds imports the rest without conflict."""
    import subprocess
    import sys

    pytest.importorskip("onnxruntime")
    vecs = np.random.default_rng(1).standard_normal((3000, 24)).astype(np.float32)
    VectorIndex.build(np.arange(1, 3001, dtype=np.int64), vecs).save(tmp_path / "v.usearch")
    np.save(tmp_path / "q.npy", vecs[7])
    done = subprocess.run([sys.executable, "-c", _READER, str(tmp_path / "v.usearch"), str(tmp_path / "q.npy")],
                          capture_output=True, timeout=120, text=True)
    assert done.returncode == 0, done.stderr[-600:]
    first, package_imported, same = done.stdout.split()
    assert first == "8" and package_imported == "False" and same == "True"
