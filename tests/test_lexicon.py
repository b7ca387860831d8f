"""BM25 from ragx's own postings ranks exactly as FTS5's bm25() does: the same terms (SQLite's tokenizer
cuts them), the same formula over the live chunks, across base and delta parts, deletions, incremental
runs and generations written before the postings existed."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from fakes import HashEmbedder, add_fts5_table, make_corpus
from test_incremental_graph import edit

from ragx.api import Corpus
from ragx.config import load_settings
from ragx.errors import ManifestMismatchError
from ragx.index import lexicon as lexicon_module
from ragx.index.build import run_index
from ragx.index.fts_tokens import FTS_TOKENIZER, shared
from ragx.index.identifiers import with_identifier_parts
from ragx.index.layout import Layout
from ragx.index.lexicon import Lexicon, LexiconPart
from ragx.index.snapshot import Snapshot
from ragx.index.store import Store
from ragx.index.verified import LEXICON, LEXICON_DELTA
from ragx.search.lexical import bm25_matches, query_words

# Words where a Python tokenizer and stemmer part ways with FTS5's (measured on the shared collections)
TRICKY = [
    "Epidemiology of possibly reversibly assembled µm-scale cells; Straße, ψυχή, γoρδιoς and 가면의주인.",
    "The eed of an incredibly terrible analogy: cells, CELLS and cell_line in 15µm wells.",
    "Café, naïve, coöperate, résumé: diacritics go, Ελληνικά stay; x\u0301y combining marks.",
    "",  # a chunk with no terms still counts as a row
    "a text with its own \x00 break character and \x00trailing pieces",
    "bread oven yeast flour " * 30,
]
QUERIES = ["epidemiology cells", "possibly incredibly reversibly", "straße µm", "cafe resume naive", "cell_line wells",
           "bread", "ψυχή", "CELLS cell cells", "the of and", "nothing-matches-here zzqx", "x y"]


def fts5_scores(texts: dict[int, str], query: str) -> dict[int, float]:
    """FTS5's own bm25() over an FTS5 table of `texts` (chunk id -> text), higher is better."""
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{FTS_TOKENIZER}')")
    # the postings read each piece with its identifiers' parts (ragx/index/identifiers.py): so does this table
    db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)",
                   [(i, " ".join(map(with_identifier_parts, t.split()))) for i, t in texts.items()])
    expression = " OR ".join(f'"{w}"' for w in query_words(query))
    return {i: -s for i, s in db.execute("SELECT rowid, bm25(t) FROM t WHERE t MATCH ?", (expression,))}


def postings_scores(lexicon: Lexicon, query: str) -> dict[int, float]:
    ids, scores = lexicon.matches(shared().of_words(query_words(query)))
    return dict(zip(ids.tolist(), scores.tolist()))


def assert_same(ours: dict[int, float], theirs: dict[int, float]) -> None:
    assert ours.keys() == theirs.keys()
    for i in theirs:
        assert ours[i] == pytest.approx(theirs[i], rel=1e-12, abs=1e-12)


def test_tricky_words_become_fts5s_terms():
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{FTS_TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    words = " ".join(TRICKY).split()
    db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(map(with_identifier_parts, words)))
    expected: dict[int, list[str]] = {}
    for term, doc, _, _ in sorted(db.execute("SELECT term, doc, col, offset FROM v"), key=lambda r: (r[1], r[3])):
        expected.setdefault(doc, []).append(term)
    assert [shared().of_words([w]) for w in words] == [expected.get(i, []) for i in range(len(words))]
    assert shared().of_words(["epidemiology", "possibly", "µm"]) == ["epidemiolog", "possibl", "μm"]


@pytest.mark.parametrize("dense_share", [1, 10**9])  # summed sparse (sorted matches) / dense (an array per part)
def test_postings_score_every_match_as_fts5_does_across_parts_and_deletions(dense_share, monkeypatch):
    monkeypatch.setattr(lexicon_module, "DENSE_SHARE", dense_share)
    rng = np.random.default_rng(3)
    vocabulary = "bread oven yeast flour comet orbit telescope cells epidemiology possibly harbour sail".split()
    texts = {i: " ".join(rng.choice(vocabulary, rng.integers(1, 60))) for i in range(0, 300, 3)}
    texts |= {1000 + i: t for i, t in enumerate(TRICKY)}
    base_ids = np.array(sorted(i for i in texts if i < 250))
    delta_ids = np.array(sorted(i for i in texts if i >= 250))
    base = LexiconPart.build(base_ids, [texts[i] for i in base_ids])
    delta = LexiconPart.build(delta_ids, [texts[i] for i in delta_ids])
    deleted = {3, 27, 150, 1003}  # in the parts, no longer live
    live = np.array(sorted(set(texts) - deleted))
    lexicon = Lexicon(base, delta, live)
    assert lexicon.check()
    for query in QUERIES:
        assert_same(postings_scores(lexicon, query), fts5_scores({i: texts[i] for i in live.tolist()}, query))


def test_a_merged_delta_equals_one_built_from_its_texts():
    older = {3: "bread oven yeast", 5: "comet orbit bread", 8: "Straße µm cells", 9: "flour"}
    newer = {12: "oven oven telescope", 15: "cells epidemiology possibly"}
    part = LexiconPart.build(np.array(sorted(older)), [older[i] for i in sorted(older)])
    keep = np.array([i != 5 for i in sorted(older)])  # chunk 5 was deleted
    merged = part.merged(keep, LexiconPart.build(np.array(sorted(newer)), [newer[i] for i in sorted(newer)]))
    texts = {i: t for i, t in older.items() if i != 5} | newer
    built = LexiconPart.build(np.array(sorted(texts)), [texts[i] for i in sorted(texts)])
    live = np.array(sorted(texts))
    for query in ("bread", "oven cells", "comet", "straße flour possibly"):  # a term only 5 held scores nothing
        assert_same(postings_scores(Lexicon(merged, LexiconPart.empty(), live), query),
                    postings_scores(Lexicon(built, LexiconPart.empty(), live), query))
    assert merged.ids.tolist() == built.ids.tolist() and merged.length.tolist() == built.length.tolist()


def test_k1_and_b_change_the_scores_and_the_defaults_are_fts5s():
    texts = ["bread bread bread oven", "bread " + "filler " * 40, "oven yeast"]
    part = LexiconPart.build(np.arange(3), texts)
    lexicon = Lexicon(part, LexiconPart.empty(), np.arange(3))
    terms = shared().of_words(["bread"])
    _, default = lexicon.matches(terms)
    _, flat = lexicon.matches(terms, k1=1.2, b=0.0)  # no length normalisation: the long chunk gains
    _, saturated = lexicon.matches(terms, k1=0.01, b=0.75)  # tf barely counts
    assert default[1] < flat[1]
    assert saturated[0] / saturated[1] < default[0] / default[1]


def ceiling(lexicon: Lexicon, terms: list[str]) -> float:
    return lexicon.scored(terms)[2]


def test_the_ceiling_bounds_every_score_and_an_absent_word_raises_it_most():
    texts = ["bread bread bread bread bread bread oven", "bread oven yeast", "comet orbit", "yeast " * 50, "oven"]
    lexicon = Lexicon(LexiconPart.build(np.arange(5), texts), LexiconPart.empty(), np.arange(5))
    for k1 in (0.5, 1.2, 3.0):
        for words in (["bread"], ["bread", "oven"], ["bread", "oven", "yeast", "comet"], ["orbit", "zzqx"]):
            terms = shared().of_words(words)
            _, scores, top = lexicon.scored(terms, k1=k1)
            assert 0 < scores.max() < top
    # a word no chunk holds is worth the most a word can be (df = 0), so it lifts the ceiling above
    # what the rarest word present adds, and a query about it stays a small share of its ceiling
    rare, absent = shared().of_words(["comet"]), shared().of_words(["zzqx"])
    assert ceiling(lexicon, absent) > ceiling(lexicon, rare) > ceiling(lexicon, shared().of_words(["oven"]))
    assert ceiling(lexicon, []) == 0.0
    # only live chunks count: with chunk 3 deleted, one chunk of four holds "yeast", the ceiling of "comet"
    fewer = Lexicon(LexiconPart.build(np.arange(5), texts), LexiconPart.empty(), np.array([0, 1, 2, 4]))
    yeast, comet = shared().of_words(["yeast"]), shared().of_words(["comet"])
    assert ceiling(fewer, yeast) == pytest.approx(ceiling(Lexicon(LexiconPart.build(np.arange(4), texts[:3] + ["oven"]),
                                                                  LexiconPart.empty(), np.arange(4)), comet))


def index(root: Path, full: bool = False):
    return run_index(root, load_settings(root), HashEmbedder(), full=full)


def loaded(root: Path) -> tuple[Store, Snapshot, dict]:
    layout = Layout(root)
    store = Store(layout.db)
    manifest = store.manifest()
    folder = layout.gen(int(manifest["generation"]))
    return store, Snapshot.load(folder, with_ann=True, checksums=manifest["checksums"]), manifest


def assert_postings_rank_as_fts5(root: Path) -> None:
    """BM25 of the committed index against FTS5's bm25() over an FTS5 table of the same chunks' texts."""
    store, snap, _ = loaded(root)
    try:
        assert snap.lexicon is not None
        ids_all, texts = store.chunk_texts()
        texts_by_id = dict(zip(ids_all.tolist(), texts))
        for query in QUERIES + ["stars telescope orbit", "anchor harbour galaxies"]:
            ids, scores = bm25_matches(snap, store, query)
            theirs = fts5_scores(texts_by_id, query)
            fts_ids = sorted(theirs, key=lambda i: (-theirs[i], i))  # bm25_matches' order: best first, then id
            assert ids.tolist() == fts_ids
            np.testing.assert_allclose(scores, [theirs[i] for i in fts_ids], rtol=1e-12, atol=1e-12)
    finally:
        store.close()


def test_incremental_runs_link_the_postings_base_write_a_delta_and_rank_as_fts5(tmp_path, fake_model):
    make_corpus(tmp_path)
    index(tmp_path)
    assert_postings_rank_as_fts5(tmp_path)
    store, first, _ = loaded(tmp_path)
    store.close()
    base_inode = os.stat(first.folder / LEXICON).st_ino
    for step in range(4):
        edit(tmp_path, step)
        index(tmp_path)
        store, snap, _ = loaded(tmp_path)
        store.close()
        assert os.stat(snap.folder / LEXICON).st_ino == base_inode  # the base is linked, not rewritten
        assert snap.lexicon is not None and len(snap.lexicon.delta.ids) > 0
        assert_postings_rank_as_fts5(tmp_path)
    incremental = bm25_by_location(tmp_path)
    index(tmp_path, full=True)
    store, snap, _ = loaded(tmp_path)
    store.close()
    assert snap.lexicon is not None and len(snap.lexicon.delta.ids) == 0
    assert bm25_by_location(tmp_path) == incremental  # a full rebuild scores every chunk alike


def bm25_by_location(root: Path) -> dict[str, list[tuple[str, int, float]]]:
    """Per query, (file, first line, BM25 score) of every match, best first: comparable across runs
    whose chunk ids differ."""
    store, snap, _ = loaded(root)
    try:
        out = {}
        for query in QUERIES:
            ids, scores = bm25_matches(snap, store, query)
            rows = store.chunk_rows(ids, ("id", "line_start"))
            out[query] = sorted(((r["path"], r["line_start"], round(float(s), 12)) for r, s in zip(rows, scores)),
                                key=lambda x: (-x[2], x[0], x[1]))
        return out
    finally:
        store.close()


def test_a_generation_without_postings_searches_with_fts5_and_gains_them_on_the_next_run(tmp_path, fake_model):
    make_corpus(tmp_path)
    index(tmp_path)
    before = Corpus(tmp_path).query("bread oven", graph=False, rerank=False, expand=False)
    store, snap, manifest = loaded(tmp_path)
    try:  # as written by an older ragx: no postings files, none in the manifest, an FTS5 table instead
        (snap.folder / LEXICON).unlink()
        (snap.folder / LEXICON_DELTA).unlink()
        checksums = {k: v for k, v in manifest["checksums"].items() if k not in (LEXICON, LEXICON_DELTA)}
        with store.db:
            Store.write_manifest(store.db, {"checksums": checksums})
            add_fts5_table(store.db)
    finally:
        store.close()
    store, snap, _ = loaded(tmp_path)
    store.close()
    assert snap.lexicon is None
    assert Corpus(tmp_path).status()["consistent"]
    old = Corpus(tmp_path).query("bread oven", graph=False, rerank=False, expand=False)
    assert json.dumps(old["results"]) == json.dumps(before["results"])
    with pytest.raises(ManifestMismatchError, match="run `ragx index`"):  # other k1, b than FTS5's need postings
        corpus = Corpus(tmp_path)
        corpus.query("bread oven", graph=False, rerank=False, expand=False, params=corpus.settings.search.replace(bm25_b=0.5))
    index(tmp_path)  # nothing changed, yet the postings are written, and the FTS5 table goes
    store, snap, _ = loaded(tmp_path)
    assert store.db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()[0] == 0
    store.close()
    assert snap.lexicon is not None and len(snap.lexicon.delta.ids) == 0  # a whole new base
    assert_postings_rank_as_fts5(tmp_path)
    assert json.dumps(Corpus(tmp_path).query("bread oven", graph=False, rerank=False, expand=False)["results"]) == \
        json.dumps(before["results"])


def test_deep_status_finds_postings_that_miss_a_live_chunk(tmp_path, fake_model):
    from ragx.index.snapshot import load_lexicon, save_mappable_npz
    from ragx.index.verified import file_checksum

    make_corpus(tmp_path)
    index(tmp_path)
    assert Corpus(tmp_path).status(deep=True)["consistent"]
    store, snap, manifest = loaded(tmp_path)
    try:  # postings rewritten without the last chunk, with a matching checksum: damage no hash can see
        lexicon = load_lexicon(snap.folder, snap.ids)
        assert lexicon is not None
        part = lexicon.base
        n = len(part.ids) - 1  # the last chunk's position
        short = LexiconPart(np.asarray(part.ids[:n]), np.asarray(part.length[:n]), np.asarray(part.term_bytes),
                            np.asarray(part.term_at), *_without_position(part, n))
        (snap.folder / LEXICON).unlink()  # a hard link shared with no one here, but never written in place
        with open(snap.folder / LEXICON, "wb") as fh:
            save_mappable_npz(fh, **short.arrays())
        with store.db:
            Store.write_manifest(store.db, {"checksums": manifest["checksums"] | {LEXICON: file_checksum(snap.folder / LEXICON)}})
    finally:
        store.close()
    status = Corpus(tmp_path).status(deep=True)
    assert not status["consistent"]
    assert any("BM25's postings miss live chunks" in p for p in status["problems"])


def _without_position(part: LexiconPart, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, doc, tf) of a part with position n's postings removed."""
    doc, tf = np.asarray(part.doc[0 : len(part.doc)]), np.asarray(part.tf[0 : len(part.tf)])
    term = np.repeat(np.arange(len(part.indptr) - 1), np.diff(part.indptr))
    keep = doc != n
    indptr = np.zeros(len(part.indptr), np.int64)
    np.cumsum(np.bincount(term[keep], minlength=len(part.indptr) - 1), out=indptr[1:])
    return indptr, doc[keep], tf[keep]
