"""Runs that resume: the vector journal keeps what a killed or failed run embedded (ragx/index/journal.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from fakes import HashEmbedder, make_corpus

from ragx.api import Corpus
from ragx.config import load_settings
from ragx.index.build import run_index
from ragx.index.journal import VectorJournal, journal_paths
from ragx.index.layout import Layout
from ragx.index.snapshot import Snapshot


class DiesAfter(HashEmbedder):
    """Embeds `batches` batches, then fails as a killed process would stop: mid-run."""

    def __init__(self, batches: int):
        super().__init__()
        self.left = batches

    def embed_documents(self, texts, batch_size: int = 32, progress=None):
        if self.left == 0:
            raise KeyboardInterrupt("killed")
        self.left -= 1
        return super().embed_documents(texts, batch_size, progress)


def index(root: Path, embedder=None):
    embedder = embedder or HashEmbedder()
    return run_index(root, load_settings(root), embedder), embedder


def what_matters(root: Path) -> tuple:
    """Chunk ids with their file and text, the vectors' bytes, and the kNN edges of an index."""
    assert Corpus(root).status(deep=True)["consistent"]
    layout = Layout(root)
    db = sqlite3.connect(layout.db)
    gen = int(db.execute("SELECT value FROM manifest WHERE key = 'generation'").fetchone()[0])
    ids, vecs = Snapshot.load_vectors(layout.gen(gen), _checksums(db))
    chunks = db.execute("SELECT c.id, f.path, c.ordinal, c.text FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY c.id").fetchall()
    edges = sorted(db.execute("SELECT a, b, weight FROM edges").fetchall())
    db.close()
    return ids.tolist(), np.asarray(vecs).tobytes(), chunks, edges


def _checksums(db) -> dict:
    import json

    row = db.execute("SELECT value FROM manifest WHERE key = 'checksums'").fetchone()
    return json.loads(row[0]) if row else {}


@pytest.fixture
def corpora(tmp_path):
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    for root in (killed, clean):
        root.mkdir()
        make_corpus(root)
        (root / "ragx.toml").write_text("[embeddings]\nbatch_size = 4\n", encoding="utf-8")
    return killed, clean


def test_a_run_killed_while_embedding_resumes_and_equals_a_run_never_killed(corpora):
    killed, clean = corpora
    with pytest.raises(KeyboardInterrupt):
        index(killed, DiesAfter(batches=12))
    assert not list(Layout(killed).dir.glob("gen-*"))  # nothing committed
    assert len(journal_paths(Layout(killed).dir)) == 1
    report, emb = index(killed)
    clean_report, _ = index(clean)
    assert report.resumed_chunks == 12 * 4 and report.embedded_chunks == clean_report.embedded_chunks - 48
    assert len(emb.embedded) == report.embedded_chunks  # only what the journal lacked was embedded
    assert what_matters(killed) == what_matters(clean)
    assert not journal_paths(Layout(killed).dir)  # committed: the journal is gone


def test_an_incremental_run_that_fails_keeps_the_committed_index_and_resumes(corpora):
    root, _ = corpora
    index(root)
    before = what_matters(root)
    for i in range(3):
        (root / f"new-{i}.md").write_text(f"# new {i}\n\n" + " ".join(f"word{j}x{i}" for j in range(60)), encoding="utf-8")
    with pytest.raises(KeyboardInterrupt):
        index(root, DiesAfter(batches=1))
    assert what_matters(root) == before
    report, emb = index(root)
    assert report.resumed_chunks == 4 and report.embedded_chunks == len(emb.embedded) > 0


def test_a_torn_last_record_is_cut_off_and_whole_records_are_kept(tmp_path):
    journal = VectorJournal(tmp_path, "test:hash-64", 3)
    journal.append(np.array([5, 1], np.uint64), np.arange(6, dtype=np.float32).reshape(2, 3))
    journal.append(np.array([9], np.uint64), np.full((1, 3), 7, np.float32))
    journal.close()
    whole = journal.path.stat().st_size
    with open(journal.path, "ab") as f:  # a record the kill cut short
        f.write(b"VJR1" + b"\x02\x00\x00\x00" + b"\x00" * 20)
    keys, vecs = VectorJournal(tmp_path, "test:hash-64", 3).recorded()
    assert keys.tolist() == [1, 5, 9] and vecs.tolist() == [[3, 4, 5], [0, 1, 2], [7, 7, 7]]
    assert journal.path.stat().st_size == whole
    with open(journal.path, "r+b") as f:  # a flipped bit in the last record: its CRC rejects it
        f.seek(whole - 2)
        f.write(b"\xff")
    assert VectorJournal(tmp_path, "test:hash-64", 3).recorded()[0].tolist() == [1, 5]


def test_another_models_journal_is_not_read(tmp_path):
    VectorJournal(tmp_path, "test:model-a", 3).append(np.array([1], np.uint64), np.ones((1, 3), np.float32))
    assert len(VectorJournal(tmp_path, "test:model-b", 3).recorded()[0]) == 0
    assert len(VectorJournal(tmp_path, "test:model-a", 4).recorded()[0]) == 0
