"""Index runs end to end with the fast hash embedder: incremental equals full, crash-safe, byte-exact."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from fakes import HashEmbedder, make_corpus

from ragx.api import Corpus
from ragx.config import load_settings
from ragx.errors import CorruptIndexError, ManifestMismatchError
from ragx.index.build import run_index
from ragx.index.layout import Layout
from ragx.index.snapshot import Snapshot


def graph_by_location(root: Path) -> set[tuple]:
    """The undirected edge set keyed by (path, ordinal), so two indexes with other ids compare."""
    db = sqlite3.connect(root / ".ragx" / "index.sqlite")
    loc = {cid: (p, o) for cid, p, o in db.execute("SELECT c.id, f.path, c.ordinal FROM chunks c JOIN files f ON f.id = c.file_id")}
    edges = {tuple(sorted((loc[a], loc[b]))) + (round(w, 12),) for a, b, w in db.execute("SELECT a, b, weight FROM edges")}
    db.close()
    return edges


@pytest.fixture
def corpus(tmp_path):
    make_corpus(tmp_path)
    return tmp_path


def index(root: Path, embedder=None, full=False):
    embedder = embedder or HashEmbedder()
    return run_index(root, load_settings(root), embedder, full=full), embedder


def test_first_run_indexes_everything_and_chunks_are_byte_slices(corpus):
    report, emb = index(corpus)
    assert report.files == 19 and report.new == 19
    assert report.chunks == report.embedded_chunks == len(emb.embedded) > 19
    assert report.edges > 0 and report.communities >= 2
    db = sqlite3.connect(corpus / ".ragx" / "index.sqlite")
    rows = db.execute("SELECT f.path, c.byte_start, c.byte_end, c.line_start, c.line_end, c.text FROM chunks c JOIN files f ON f.id = c.file_id")
    for path, bs, be, ls, le, text in rows:
        data = (corpus / path).read_bytes()
        assert data[bs:be].decode("utf-8") == text
        assert ls == data[:bs].count(b"\n") + 1
        assert le == data[: be - 1].count(b"\n") + 1
    status = Corpus(corpus).status(deep=True)
    assert status["consistent"], status["problems"]
    assert status["drift"] == {"new": 0, "changed": 0, "deleted": 0, "unreadable": 0}
    # status counts undirected edges without the view; both directions, one-way pairs and the total agree
    directed = db.execute("SELECT count(*) FROM knn").fetchone()[0]
    one_way = db.execute("SELECT count(*) FROM knn k WHERE NOT EXISTS (SELECT 1 FROM knn r WHERE r.src = k.dst AND r.dst = k.src)").fetchone()[0]
    assert 0 < one_way < directed  # kNN lists are not symmetric: the count must handle both kinds of pair
    assert status["edges"] == db.execute("SELECT count(*) FROM edges").fetchone()[0] == report.edges


def test_store_edges_and_csr_agree_exactly(corpus):
    index(corpus)
    layout = Layout(corpus)
    db = sqlite3.connect(layout.db)
    gen = db.execute("SELECT value FROM manifest WHERE key = 'generation'").fetchone()[0]
    graph = Snapshot.load(layout.gen(int(gen))).graph
    stored = {(a, b): w for a, b, w in db.execute("SELECT a, b, weight FROM edges")}
    assert graph.n_edges == len(stored)
    for node in graph.ids[:10].tolist():
        nbr, wt = graph.neighbors(node)
        for other, w in zip(nbr.tolist(), wt.tolist()):
            assert stored[(min(node, other), max(node, other))] == w
    k = load_settings(corpus).graph.k
    per_src = db.execute("SELECT max(n) FROM (SELECT count(*) n FROM knn GROUP BY src)").fetchone()[0]
    assert per_src <= k


def test_nothing_changed_embeds_nothing(corpus):
    index(corpus)
    report, emb = index(corpus)
    assert emb.embedded == [] and report.unchanged == 19 and report.new == report.changed == report.deleted == 0


def test_touch_without_edit_is_not_a_change(corpus):
    index(corpus)
    f = corpus / "cooking-1.md"
    f.write_bytes(f.read_bytes())
    report, emb = index(corpus)
    assert emb.embedded == [] and report.changed == 0


def test_incremental_edits_equal_a_full_rebuild(corpus, tmp_path_factory):
    index(corpus)
    (corpus / "cooking-2.md").write_text("# cooking 2\n\nstars telescope orbit comet bread oven\n", encoding="utf-8")
    (corpus / "sailing-0.md").unlink()
    (corpus / "new-topic.md").write_text("# new\n\nanchor harbour galaxies nebula flour yeast\n", encoding="utf-8")
    report, emb = index(corpus)
    assert (report.new, report.changed, report.deleted) == (1, 1, 1)
    assert report.embedded_files == ["cooking-2.md", "new-topic.md"]
    assert all("note" not in t or "cooking 2" in t or "new" in t for t in emb.embedded)
    incremental = graph_by_location(corpus)

    index(corpus, full=True)
    assert graph_by_location(corpus) == incremental
    assert Corpus(corpus).status(deep=True)["consistent"]


def test_chunk_ids_are_never_reused(corpus):
    index(corpus)
    db = sqlite3.connect(corpus / ".ragx" / "index.sqlite")
    before = {r[0] for r in db.execute("SELECT id FROM chunks")}
    (corpus / "cooking-0.md").write_text("# cooking 0\n\nchanged text about dough\n", encoding="utf-8")
    index(corpus)
    after = {r[0] for r in db.execute("SELECT id FROM chunks")}
    assert min(after - before) > max(before)


def test_manifest_guard_asks_for_full(corpus):
    index(corpus)
    with pytest.raises(ManifestMismatchError, match="--full"):
        index(corpus, embedder=HashEmbedder(name="test:other-model"))
    report, _ = index(corpus, embedder=HashEmbedder(name="test:other-model"), full=True)
    assert report.chunks > 0


def test_crash_before_commit_leaves_previous_index_and_next_run_repairs(corpus, monkeypatch):
    index(corpus)
    before = Corpus(corpus).status()
    (corpus / "cooking-3.md").write_text("# cooking 3\n\nsomething else entirely\n", encoding="utf-8")

    import ragx.index.build as build

    def boom(*a, **k):
        raise KeyboardInterrupt  # stands for a kill between writing arrays and committing

    monkeypatch.setattr(build.Store, "write_manifest", staticmethod(boom))
    with pytest.raises(KeyboardInterrupt):
        index(corpus)
    monkeypatch.undo()
    after_crash = Corpus(corpus).status()
    assert after_crash["consistent"] and after_crash["chunks"] == before["chunks"]
    assert after_crash["drift"]["changed"] == 1
    report, emb = index(corpus)
    assert report.changed == 1 and Corpus(corpus).status(deep=True)["consistent"]
    assert sorted(p.name for p in (corpus / ".ragx").glob("*gen-*")) == ["gen-000001", "gen-000002"]


def test_undecodable_file_is_reported_and_skipped(corpus):
    (corpus / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    report, _ = index(corpus)
    assert any(p["path"] == "latin1.txt" for p in report.problems)
    assert report.files == 19 and report.new == 19  # the counts are of the files indexed, not of those found
    (corpus / "cooking-1.md").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))  # an indexed file turned Latin-1
    report, _ = index(corpus)
    assert report.changed == 0 and any(p["path"] == "cooking-1.md" for p in report.problems)


def test_index_limited_to_a_path_leaves_other_changes_for_later(corpus):
    index(corpus)
    (corpus / "sub").mkdir()
    (corpus / "sub" / "inside.md").write_text("# inside\n\nharbour anchor\n")
    (corpus / "outside.md").write_text("# outside\n\nflour yeast\n")
    report = run_index(corpus, load_settings(corpus), HashEmbedder(), only="sub")
    assert report.new == 1 and report.embedded_files == ["sub/inside.md"]
    assert Corpus(corpus).status()["drift"]["new"] == 1  # outside.md still waits


def test_renamed_file_and_graph_only_rebuild_reuse_vectors(corpus, monkeypatch):
    index(corpus)
    (corpus / "cooking-1.md").rename(corpus / "baking.md")
    report, emb = index(corpus)
    assert (report.new, report.deleted) == (1, 1)
    assert emb.embedded == [] and report.reused_chunks > 0 and report.embedded_files == []
    (corpus / "ragx.toml").write_text("[graph]\nk = 4\n")
    with pytest.raises(ManifestMismatchError):
        index(corpus)
    report, emb = index(corpus, full=True)
    assert emb.embedded == [] and report.reused_chunks == report.chunks
    assert Corpus(corpus).status(deep=True)["consistent"]
    per_src = sqlite3.connect(corpus / ".ragx" / "index.sqlite").execute("SELECT max(n) FROM (SELECT count(*) n FROM knn GROUP BY src)").fetchone()[0]
    assert per_src <= 4


def test_appending_to_a_file_embeds_only_its_changed_chunks(corpus):
    index(corpus)
    f = corpus / "astronomy-2.md"
    f.write_text(f.read_text() + "\n## Extra\n\nA new closing paragraph about comets.\n")
    report, emb = index(corpus)
    assert report.changed == 1 and report.embedded_files == ["astronomy-2.md"]
    assert 0 < len(emb.embedded) < report.embedded_chunks + report.reused_chunks


def test_a_run_killed_before_its_first_commit_reads_as_not_indexed(corpus, monkeypatch):
    import ragx.index.build as build

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(build.Store, "write_manifest", staticmethod(boom))
    with pytest.raises(KeyboardInterrupt):
        index(corpus)
    monkeypatch.undo()
    status = Corpus(corpus).status()
    assert status["indexed"] is False and status["drift"]["new"] == 19
    report, _ = index(corpus)
    assert report.new == 19 and Corpus(corpus).status(deep=True)["consistent"]


def test_deep_status_finds_a_vector_missing_from_hnsw(corpus):
    index(corpus)
    import ragx.index.vectors as vectors

    snap = Snapshot.load(sorted((corpus / ".ragx").glob("gen-*"))[-1])
    v = vectors.VectorIndex.load(snap.folder / "vectors.hnsw", snap.vectors.shape[1])
    v.remove(snap.ids[:1])
    v.save(snap.folder / "vectors.hnsw")
    quick = Corpus(corpus).status()  # the rewrite moved the file's identity: the quick check hashes it too
    assert not quick["consistent"] and "vectors.hnsw" in quick["problems"][0] and "fail their checksums" in quick["problems"][0]
    deep = Corpus(corpus).status(deep=True)
    assert not deep["consistent"] and "fail their checksums" in deep["problems"][0]  # caught before the ANN file is read


def test_full_rebuild_repairs_damaged_arrays(corpus):
    index(corpus)
    gen = sorted((corpus / ".ragx").glob("gen-*"))[-1]
    (gen / "graph.npz").write_bytes(b"junk")
    (corpus / "cooking-0.md").write_text("# cooking 0\n\nedited so the run needs the arrays\n")
    with pytest.raises(CorruptIndexError, match="index --full"):
        index(corpus)
    report, emb = index(corpus, full=True)
    # vectors.npy still matches its checksum, so its vectors are reused; the edited text was embedded by
    # the failed run, whose journal hands its vector over: nothing is embedded twice
    assert report.embedded_chunks == 0 and report.resumed_chunks == 1 and report.chunks > 0
    assert Corpus(corpus).status(deep=True)["consistent"]


def test_vectors_are_stored_in_float16_and_mapped_and_an_older_index_converts_without_embedding(corpus):
    import numpy as np

    from ragx.index.store import Store

    first, _ = index(corpus)
    layout = Layout(corpus)
    store = Store(layout.db, readonly=True)
    manifest = store.manifest()
    store.close()
    assert manifest["vectors"] == "float16+delta+usearch"
    snap = Snapshot.load(layout.gen(manifest["generation"]), checksums=manifest["checksums"])
    assert snap.vectors.dtype == np.float16 and isinstance(snap.vectors.base, np.memmap)  # mapped, not read
    # The HNSW file (usearch) holds int8 copies of those values (the walk's; results are re-scored
    # with vectors.npy); `get` widens them.
    assert np.allclose(snap.vindex.get(snap.ids), np.asarray(snap.vectors, dtype=np.float32), atol=1 / 127)
    edges = graph_by_location(corpus)
    # An index written before (float32 vectors: no "vectors" key) is rebuilt once, reusing every vector.
    db = sqlite3.connect(layout.db)
    with db:
        db.execute("DELETE FROM manifest WHERE key = 'vectors'")
    db.close()
    report, emb = index(corpus)
    assert report.full is False and report.embedded_chunks == 0 and report.reused_chunks == report.chunks == first.chunks
    assert graph_by_location(corpus) == edges


def test_an_index_whose_ann_file_hnswlib_wrote_still_answers_and_the_next_run_converts_it(corpus, fake_model):
    """An index written before the usearch file: queries read the hnswlib file as they did; the next
    index run (the manifest's older "vectors" format) writes a usearch file without embedding anything."""
    import hnswlib
    import numpy as np

    from ragx.index.verified import HNSW, file_checksum

    first, _ = index(corpus)
    query = "flour butter oven bread"
    before = Corpus(corpus).query(query)
    layout = Layout(corpus)
    db = sqlite3.connect(layout.db)
    manifest = {k: json.loads(v) for k, v in db.execute("SELECT key, value FROM manifest")}
    folder = layout.gen(int(manifest["generation"]))
    snap = Snapshot.load(folder)
    old = hnswlib.Index(space="cosine", dim=snap.vectors.shape[1])  # what ragx wrote before
    old.init_index(max_elements=len(snap.ids), ef_construction=200, M=16)
    old.add_items(np.asarray(snap.vectors, dtype=np.float32), snap.ids)
    (folder / HNSW).unlink()  # a hard link the next generation may share: replace, never write through
    old.save_index(str(folder / HNSW))
    manifest["checksums"][HNSW] = file_checksum(folder / HNSW)
    with db:
        db.execute("UPDATE manifest SET value = ? WHERE key = 'checksums'", (json.dumps(manifest["checksums"]),))
        db.execute("UPDATE manifest SET value = ? WHERE key = 'vectors'", (json.dumps("float16+delta"),))
    db.close()
    assert Corpus(corpus).status(deep=True)["consistent"]
    assert [r["chunk_id"] for r in Corpus(corpus).query(query)["results"]] == [r["chunk_id"] for r in before["results"]]
    report, _ = index(corpus)
    assert report.embedded_chunks == 0 and report.reused_chunks == first.chunks
    new_folder = sorted((corpus / ".ragx").glob("gen-*"))[-1]
    from usearch.index import Index

    assert Index.metadata(str(new_folder / HNSW))["count_present"] == first.chunks
    assert [r["text"] for r in Corpus(corpus).query(query)["results"]] == [r["text"] for r in before["results"]]
