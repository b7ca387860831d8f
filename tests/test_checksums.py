"""Checksums of a generation's arrays: recorded at commit, verified by `status --deep`, before vector
reuse and when a searcher loads a generation; `ragx index --full` repairs each damaged file."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from cli_runner import call
from fakes import HashEmbedder, make_indexed_corpus

from ragx.api import Corpus
from ragx.config import load_settings
from ragx.errors import CorruptIndexError
from ragx.index.build import run_index
from ragx.index.store import Store
from ragx.index.verified import FILES, VECTORS_NPY, file_checksum

QUERY = "flour butter oven bread"


@pytest.fixture
def corpus(tmp_path, fake_model):
    return make_indexed_corpus(tmp_path)


def _gen(root):
    return sorted((root / ".ragx").glob("gen-*"))[-1]


def _damage(path, offset: int = 200, size: int = 64):
    data = bytearray(path.read_bytes())
    offset = min(offset, len(data) - size)
    data[offset : offset + size] = bytes(range(size))[::-1]
    path.write_bytes(bytes(data))


def _damage_keeping_identity(path):
    """Damage below the file system, as it looks from above: same size and inode, the old times back."""
    st = path.stat()
    _damage(path, offset=1000)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_every_file_of_a_generation_has_its_checksum_in_the_manifest(corpus):
    store = Store(corpus / ".ragx" / "index.sqlite", readonly=True)
    checksums = store.manifest()["checksums"]
    store.close()
    assert set(checksums) == set(FILES)
    assert all(checksums[name] == file_checksum(_gen(corpus) / name) for name in FILES)


@pytest.mark.parametrize("name", FILES)
def test_each_damaged_file_is_found_by_deep_status_refused_by_query_and_repaired_by_full(corpus, name):
    before = Corpus(corpus).query(QUERY)
    _damage(_gen(corpus) / name)
    assert not Corpus(corpus).status()["consistent"]  # the quick check too: the file's write moved its identity
    deep = Corpus(corpus).status(deep=True)
    assert not deep["consistent"]
    assert name in deep["problems"][-1] and deep["problems"][-1].endswith("run `ragx index --full`")
    with pytest.raises(CorruptIndexError, match="run `ragx index --full`"):
        Corpus(corpus).query(QUERY)
    emb = HashEmbedder()
    report = run_index(corpus, load_settings(corpus), emb, full=True)
    # A damaged vectors.npy or delta.npy (or the chunk ids that address them) is never a source of vectors.
    if name in ("vectors.npy", "delta.npy", "chunks.npz", "chunks-delta.npz"):
        assert report.embedded_chunks == report.chunks
    else:
        assert report.embedded_chunks == 0 and report.reused_chunks == report.chunks
    assert Corpus(corpus).status(deep=True)["consistent"]
    again = Corpus(corpus).query(QUERY)
    assert [r["chunk_id"] for r in again["results"]] != [] and len(again["results"]) == len(before["results"])
    assert [r["text"] for r in again["results"]] == [r["text"] for r in before["results"]]


@pytest.mark.parametrize("name", FILES)
def test_an_index_run_with_nothing_to_do_does_not_report_success_over_a_damaged_file(corpus, name, capsys):
    """`ragx index` after a truncation, no file of the corpus changed: the run fails as the queries
    would, with the same hint (agents are told to run `ragx index` when something is wrong)."""
    path = _gen(corpus) / name
    with open(path, "r+b") as fh:
        fh.truncate(10)
    code, _, err = call(capsys, "index", "--root", str(corpus))
    errors = [line for line in err.splitlines() if line.startswith("ragx: error: ")]  # after the progress line
    assert code == 2 and len(errors) == 1 and name in errors[0] and errors[0].endswith("run `ragx index --full`")
    assert call(capsys, "index", "--root", str(corpus), "--full")[0] == 0
    assert Corpus(corpus).query(QUERY)["results"]


def test_an_incremental_run_never_builds_on_damaged_vectors(corpus):
    _damage(_gen(corpus) / VECTORS_NPY, offset=1000)
    (corpus / "notes.txt").write_text("A new note about sails.\n", encoding="utf-8")
    with pytest.raises(CorruptIndexError, match="run `ragx index --full`"):
        run_index(corpus, load_settings(corpus), HashEmbedder())


def test_non_finite_vectors_never_reach_json(corpus):
    """Vectors that match their checksums but hold NaN (a broken model) are refused in one line."""
    gen = _gen(corpus)
    vectors = np.load(gen / VECTORS_NPY)
    vectors[:] = np.nan
    np.save(gen / VECTORS_NPY, vectors)
    db = Store(corpus / ".ragx" / "index.sqlite")
    manifest = db.manifest()
    manifest["checksums"][VECTORS_NPY] = file_checksum(gen / VECTORS_NPY)
    with db.transaction() as conn:
        Store.write_manifest(conn, {"checksums": manifest["checksums"]})
    db.close()
    with pytest.raises(CorruptIndexError, match="non-finite"):
        json.dumps(Corpus(corpus).query(QUERY), allow_nan=False)
    assert not Corpus(corpus).status(deep=True)["consistent"]


def test_a_query_hashes_only_the_files_changed_since_the_writer_hashed_them(corpus, monkeypatch):
    """A query trusts a file whose identity (inode, size, modification time) is the one recorded at
    commit; a write moves it, so a damaged file is hashed (and refused); --deep hashes all."""
    import os

    import ragx.index.verified as verified

    hashed: list[str] = []
    real = verified.file_checksum
    monkeypatch.setattr(verified, "file_checksum", lambda path: hashed.append(path.name) or real(path))
    Corpus(corpus).query(QUERY)
    assert hashed == []
    gen = _gen(corpus)
    os.utime(gen / "graph.npz")  # same bytes, new times: hashed again, and fine
    Corpus(corpus).query(QUERY)
    assert hashed == ["graph.npz"]
    hashed.clear()
    _damage(gen / VECTORS_NPY, offset=1000)
    with pytest.raises(CorruptIndexError, match="vectors.npy"):
        Corpus(corpus).query(QUERY)
    assert set(hashed) == {"graph.npz", VECTORS_NPY}  # (the searcher tries a generation twice)
    hashed.clear()
    assert not Corpus(corpus).status(deep=True)["consistent"]
    assert set(hashed) == set(FILES)


def test_incremental_runs_that_link_and_prune_shared_files_leave_them_trusted(corpus, monkeypatch):
    """Generations share vectors.npy / vectors.hnsw / graph.npz by hard links and older ones are
    deleted: neither touches a byte, so a query after such runs hashes nothing again."""
    import ragx.index.verified as verified

    for n in range(3):  # the third run deletes the first's folder, whose links the last one shares
        (corpus / "notes.txt").write_text(f"A new note about sails, edit {n}.\n", encoding="utf-8")
        run_index(corpus, load_settings(corpus), HashEmbedder())
    gen = _gen(corpus)
    assert (gen / VECTORS_NPY).stat().st_nlink > 1  # (the test is only meaningful with shared files)
    hashed: list[str] = []
    real = verified.file_checksum
    monkeypatch.setattr(verified, "file_checksum", lambda path: hashed.append(path.name) or real(path))
    Corpus(corpus).query(QUERY)
    assert hashed == []


def test_an_incremental_run_trusts_files_unchanged_since_recorded_and_deep_status_finds_the_rest(corpus, monkeypatch):
    """An incremental run links the big files into its generation and trusts, as a query does, a file
    whose identity is the one recorded when it was hashed: it hashes only what it writes, so its cost
    stays independent of the index's size. Damage that keeps a file's identity (below the file system)
    is `status --deep`'s to find, and a full run, which copies reused vectors into a new base, hashes
    every byte it reads."""

    import ragx.index.verified as verified

    hashed: list = []
    real = verified.file_checksum
    monkeypatch.setattr(verified, "file_checksum", lambda path: hashed.append(path) or real(path))

    def read_from(gen) -> set[str]:  # files of `gen` hashed (not the ones the run wrote)
        return {p.name for p in hashed if p.parent == gen}

    old = _gen(corpus)
    (corpus / "notes.txt").write_text("A new note about sails.\n", encoding="utf-8")
    run_index(corpus, load_settings(corpus), HashEmbedder())
    assert _gen(corpus) != old and (_gen(corpus) / VECTORS_NPY).samefile(old / VECTORS_NPY)  # linked
    assert read_from(old) == set()
    gen = _gen(corpus)
    _damage_keeping_identity(gen / VECTORS_NPY)
    (corpus / "notes.txt").write_text("A new note about sails, edited.\n", encoding="utf-8")
    run_index(corpus, load_settings(corpus), HashEmbedder())  # trusted: the damage is not seen here
    assert read_from(gen) == set()
    deep = Corpus(corpus).status(deep=True)
    assert not deep["consistent"] and VECTORS_NPY in deep["problems"][-1]
    hashed.clear()
    report = run_index(corpus, load_settings(corpus), HashEmbedder(), full=True)
    assert VECTORS_NPY in {p.name for p in hashed} and report.embedded_chunks == report.chunks  # no damaged vector reused
    assert Corpus(corpus).status(deep=True)["consistent"]


@pytest.mark.parametrize("name", [VECTORS_NPY, "graph.npz"])
def test_a_compaction_hashes_the_files_it_copies_into_a_new_base(corpus, monkeypatch, name):
    """An incremental run whose delta outgrows its budget writes a new base from the old files: it
    hashes them whatever their recorded identity says, so damage is refused, never given a fresh checksum."""

    import ragx.index.arrays as arrays

    monkeypatch.setattr(arrays, "budget", lambda live: -1)        # every run compacts the vectors
    monkeypatch.setattr(arrays, "delta_budget", lambda live: -1)  # ... and the graph
    _damage_keeping_identity(_gen(corpus) / name)
    (corpus / "notes.txt").write_text("A new note about sails.\n", encoding="utf-8")
    with pytest.raises(CorruptIndexError, match=name):
        run_index(corpus, load_settings(corpus), HashEmbedder())


# ---- status's quick check: the store against the arrays, without loading them -----------------------

def _edit_store(root, *statements: str) -> None:
    """A change behind the index's back, as a buggy writer or a hand edit would make it."""
    import sqlite3

    with sqlite3.connect(root / ".ragx" / "index.sqlite") as db:
        for statement in statements:
            db.execute(statement)


def _without_fingerprint(root) -> None:
    """The manifest of an index committed before fingerprints were recorded."""
    _edit_store(root, "DELETE FROM manifest WHERE key = 'chunk_fingerprint'")


@pytest.mark.parametrize("recorded", [True, False], ids=["fingerprint", "older-index"])
def test_quick_status_finds_a_chunk_row_the_arrays_do_not_hold(corpus, recorded):
    if not recorded:
        _without_fingerprint(corpus)
    assert Corpus(corpus).status()["consistent"]
    _edit_store(corpus, "DELETE FROM chunks WHERE id = (SELECT max(id) FROM chunks)")
    status = Corpus(corpus).status()
    assert not status["consistent"] and "index arrays list other chunks than the store" in status["problems"][0]


@pytest.mark.parametrize("recorded", [True, False], ids=["fingerprint", "older-index"])
def test_quick_status_finds_two_chunks_whose_files_were_swapped(corpus, recorded):
    """Same ids, same file ids overall, same counts: only which chunk belongs to which file differs."""
    if not recorded:
        _without_fingerprint(corpus)
    store = Store(corpus / ".ragx" / "index.sqlite", readonly=True)
    ids, file_ids = store.chunk_files()
    store.close()
    a = 0
    b = int(np.flatnonzero(file_ids != file_ids[a])[0])
    _edit_store(corpus, f"UPDATE chunks SET file_id = {file_ids[b]} WHERE id = {ids[a]}",
                f"UPDATE chunks SET file_id = {file_ids[a]} WHERE id = {ids[b]}")
    status = Corpus(corpus).status()
    assert not status["consistent"] and "other chunks" in status["problems"][0]


def test_quick_status_hashes_a_rewritten_arrays_file_and_finds_it_damaged(corpus):
    """A program that rewrites chunks.npz moves its identity, so the quick check hashes it."""
    with np.load(_gen(corpus) / "chunks.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["ids"] = arrays["ids"] + 1
    np.savez(_gen(corpus) / "chunks.npz", **arrays)
    status = Corpus(corpus).status()
    assert not status["consistent"] and "chunks.npz" in status["problems"][0] and "fail their checksums" in status["problems"][0]


def test_an_index_run_without_changes_records_the_fingerprint_of_the_arrays_not_of_the_store(corpus):
    """An index committed before fingerprints gets one on its next run, taken from its chunks.npz: a
    store that already disagreed with the arrays still fails the quick check afterwards."""
    _without_fingerprint(corpus)
    _edit_store(corpus, "DELETE FROM chunks WHERE id = (SELECT max(id) FROM chunks)")
    report = run_index(corpus, load_settings(corpus), HashEmbedder())
    assert report.new == report.changed == 0
    store = Store(corpus / ".ragx" / "index.sqlite", readonly=True)
    recorded, live = store.manifest().get("chunk_fingerprint"), store.live_fingerprint()
    store.close()
    assert recorded is not None and recorded[0] == live[0] + 1
    assert "other chunks" in Corpus(corpus).status()["problems"][0]
