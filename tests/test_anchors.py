"""Anchor texts: what a note says where it links to another note becomes evidence for that note
(extraction, storage, incremental exactness, the query's signals and their effect on the ranking)."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from fakes import HashEmbedder

from ragx.api import Corpus
from ragx.config import load_settings
from ragx.index.build import run_index
from ragx.index.store import ANCHORS_OUTDATED
from ragx.ingest.anchors import extract
from ragx.log import reset_warnings
from ragx.scoring.score import score

pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake


def test_extract_takes_the_line_with_links_as_labels_and_skips_embeds_fences_and_self_links():
    text = (
        "---\ntitle: Hub\nlinks: '[[not.a.link]]'\n---\n"
        "- Run events like [[Office Hours|community.office-hours]] and [[community.tuesdays]].\n"
        "![[garden.tulips]]\n"
        "See the [pruning guide](guides/prune.md#winter) or [[hub]] itself.\n"
        "```\n[[inside.a.fence]]\n```\n"
    )
    got = extract("hub.md", text)
    assert got == [
        ("wikilink", "community.office-hours.md", "Run events like Office Hours and community tuesdays."),
        ("wikilink", "community.tuesdays.md", "Run events like Office Hours and community tuesdays."),
        ("link", "guides/prune.md", "See the pruning guide or hub itself."),
    ]


def _note(title: str, body: str) -> str:
    return f"---\ntitle: {title}\n---\n\n{body}\n"


@pytest.fixture
def vault(tmp_path):
    # Only the anchor in hub.md says "quarterly budget review": the target's own text never does.
    (tmp_path / "hub.md").write_text(_note("Hub", "For the quarterly budget review read [[finance.sheet]].\n\nAlso [[garden]]."), encoding="utf-8")
    (tmp_path / "finance.sheet.md").write_text(_note("Sheet", "Columns: cost centre, owner, amount."), encoding="utf-8")
    (tmp_path / "garden.md").write_text(_note("Garden", "Roses and tulips."), encoding="utf-8")
    for i in range(6):
        (tmp_path / f"other{i}.md").write_text(_note(f"Other {i}", f"Unrelated note number {i} about cooking."), encoding="utf-8")
    (tmp_path / "ragx.toml").write_text("[search]\nmin_dense_evidence = 0.0\nmin_lexical_evidence = 0.0\n", encoding="utf-8")
    run_index(tmp_path, load_settings(tmp_path), HashEmbedder())
    return tmp_path


def _anchors(root):
    with sqlite3.connect(root / ".ragx" / "index.sqlite") as db:
        rows = sorted(db.execute("SELECT f.path, a.kind, a.target, a.text FROM anchors a JOIN files f ON f.id = a.file_id"))
        docs = sorted(db.execute("SELECT d.target, x.text FROM anchor_docs d JOIN anchor_fts x ON x.rowid = d.id"))
        blobs = sorted(db.execute("SELECT target, wiki, vectors FROM anchor_docs"))
    return rows, docs, blobs


def test_anchors_are_stored_with_vectors_and_one_bm25_document_per_target(vault):
    rows, docs, _ = _anchors(vault)
    assert ("hub.md", "wikilink", "finance.sheet.md", "For the quarterly budget review read finance sheet.") in rows
    assert dict(docs)["garden.md"] == "Also garden."
    with sqlite3.connect(vault / ".ragx" / "index.sqlite") as db:
        (blob,) = db.execute("SELECT vector FROM anchors WHERE target = 'garden.md'").fetchone()
    vec = np.frombuffer(blob, np.float16)  # the chunk vectors' precision
    assert vec.shape == (HashEmbedder().dim,) and np.isclose(np.linalg.norm(vec.astype(np.float32)), 1.0, atol=1e-3)


def test_incremental_runs_keep_anchors_exact(vault):
    (vault / "hub.md").write_text(_note("Hub", "Budget notes live in [[finance.sheet]] now."), encoding="utf-8")
    (vault / "notes.md").write_text(_note("Notes", "The [[garden]] in spring."), encoding="utf-8")
    run_index(vault, load_settings(vault), HashEmbedder())
    incremental = _anchors(vault)
    run_index(vault, load_settings(vault), HashEmbedder(), full=True)
    assert incremental == _anchors(vault)
    rows, docs, _ = incremental
    assert dict(docs) == {"finance.sheet.md": "Budget notes live in finance sheet now.", "garden.md": "The garden in spring."}
    (vault / "notes.md").unlink()
    run_index(vault, load_settings(vault), HashEmbedder())
    assert "garden.md" not in dict(_anchors(vault)[1])  # nobody links to it any more: no document


def _best_anchor_cosine(root, target: str, query_vec: np.ndarray) -> float:
    """From the anchor rows themselves (not the per-document blobs a query reads)."""
    with sqlite3.connect(root / ".ragx" / "index.sqlite") as db:
        blobs = [r[0] for r in db.execute("SELECT vector FROM anchors WHERE target = ?", (target,))]
    vectors = np.frombuffer(b"".join(blobs), np.float16).reshape(len(blobs), -1).astype(np.float32)
    return float((vectors @ query_vec.astype(np.float32)).max())


def test_an_index_from_before_the_per_document_blobs_is_reported_then_converted_by_the_next_run(vault, capsys):
    query = "quarterly budget review"
    corpus = Corpus(vault)
    p = corpus.settings.search.replace(dense_n=50, lexical_n=50)
    current = corpus.searcher.candidates(query, p, expand=False)
    paths = corpus.searcher.store.file_paths()
    sheet = np.array([paths[int(f)] == "finance.sheet.md" for f in current.file_ids])
    assert sheet.any()
    expected = _best_anchor_cosine(vault, "finance.sheet.md", corpus.embedder.embed_query(query))
    assert np.allclose(current.anchor_sim[sheet], expected, atol=1e-5)
    before = _anchors(vault)
    with sqlite3.connect(vault / ".ragx" / "index.sqlite") as db:  # the layout of older indexes
        db.execute("ALTER TABLE anchor_docs DROP COLUMN vectors")
        db.execute("ALTER TABLE anchor_docs DROP COLUMN wiki")

    old = Corpus(vault)
    status = old.status(drift=False)  # consistent (the data agree), with a notice saying what to run
    assert status["consistent"] and status["notices"] == [ANCHORS_OUTDATED] and "ragx index" in ANCHORS_OUTDATED
    reset_warnings()
    stale = old.searcher.candidates(query, p, expand=False)  # answers, without anchor evidence, and says so once
    assert np.isnan(stale.anchor_sim).all() and not stale.anchor_lexical.any()
    assert capsys.readouterr().err.count(ANCHORS_OUTDATED) == 1

    run_index(vault, load_settings(vault), HashEmbedder())  # no file changed: the writer converts on open
    assert _anchors(vault) == before
    assert Corpus(vault).status(drift=False)["notices"] == []


def test_anchor_evidence_lifts_the_linked_note_and_the_weights_turn_it_off(vault):
    corpus = Corpus(vault)
    p = corpus.settings.search.replace(dense_n=50, lexical_n=50)
    c = corpus.searcher.candidates("quarterly budget review", p, expand=False)
    paths = corpus.searcher.store.file_paths()
    sheet = np.array([paths[int(f)] == "finance.sheet.md" for f in c.file_ids])
    assert sheet.any() and np.all(c.anchor_lexical[sheet] > 0) and not np.isnan(c.anchor_sim[sheet]).any()
    unlinked = np.array([paths[int(f)].startswith("other") for f in c.file_ids])
    assert np.isnan(c.anchor_sim[unlinked]).all() and np.all(c.anchor_lexical[unlinked] == 0)

    def rank_of_sheet(params) -> int:
        order = score(c, params).order
        return int(np.flatnonzero(sheet[order])[0])

    off = p.replace(anchor_dense=0.0, anchor_lexical=0.0)
    assert rank_of_sheet(p.replace(anchor_dense=0.5, anchor_lexical=0.5)) < rank_of_sheet(off)
    # a file nobody links to keeps exactly its own signals
    on = score(c, p.replace(anchor_dense=0.5, anchor_lexical=0.5))
    assert on.score[unlinked].size and np.isfinite(on.score[unlinked]).all()


def test_query_breakdown_reports_the_anchor_evidence(vault):
    results = {r["file"]: r["breakdown"] for r in Corpus(vault).query("quarterly budget review", top=10)["results"]}
    assert results["finance.sheet.md"]["anchor_lexical"] > 0 and results["finance.sheet.md"]["anchor_dense"] is not None
    assert results["hub.md"]["anchor_dense"] is None and results["hub.md"]["anchor_lexical"] == 0  # nobody links to the hub


def test_lab_pass_cache_keeps_the_anchor_signals(vault, tmp_path):
    pytest.importorskip("polars")
    from lab.passes import build_cache, load_cache
    from ragx.eval.queries import LabelledQuery

    corpus = Corpus(vault)
    p = corpus.settings.search.replace(dense_n=50, lexical_n=50)
    query = LabelledQuery(id="q1", text="quarterly budget review", files={"finance.sheet.md": 1})
    (cached,), _ = load_cache(build_cache(corpus, [query], p.caps(), tmp_path / "cache"))
    live = corpus.searcher.candidates(query.text, p, expand=False)
    assert np.array_equal(cached.anchor_sim, live.anchor_sim, equal_nan=True)
    assert np.array_equal(cached.anchor_lexical, live.anchor_lexical)
    assert cached.lexical_ceiling == live.lexical_ceiling > 0  # the evidence rule's third signal
    assert np.array_equal(score(cached, p).score, score(live, p).score, equal_nan=True)
    # a cache written before the ceiling was kept still loads for research re-scoring, the ceiling unknown
    import polars as pl

    folder = tmp_path / "cache"
    pl.read_parquet(folder / "passes.parquet").drop("lexical_ceiling").write_parquet(folder / "passes.parquet")
    (older,), _ = load_cache(folder)
    assert older.lexical_ceiling == 0.0 and np.array_equal(older.nodes, cached.nodes)
