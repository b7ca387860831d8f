"""A warm searcher's file paths and roles (ragx/search/generation_files.py): read once per generation,
and a new generation's files read afresh, so a file that moves gets the role of its new path."""

from __future__ import annotations

import numpy as np

from ragx.ingest.file_roles import SOURCE, TEST
from ragx.search.lexical import bm25_terms

QUESTION = "how are chunk ids kept stable across index runs"
CODE = "def stable_chunk_ids(old, new):\n    '''Chunk ids are kept across index runs.'''\n    return dict(new)\n"


def _roles_by_path(corpus) -> dict[str, int]:
    """Each candidate file's role in the pass a query makes, by path."""
    searcher = corpus.searcher
    c = searcher.candidates(QUESTION, corpus.settings.search)
    with searcher.reading():
        paths = searcher.store.file_paths_of(np.unique(c.file_ids).tolist())
    return {paths[int(f)]: int(r) for f, r in zip(c.file_ids, c.file_role)}


def test_a_warm_searcher_reads_each_files_path_once_per_generation(tmp_path, fake_model, monkeypatch):
    from ragx.api import Corpus
    from ragx.index.store import Store

    (tmp_path / "plan.py").write_text(CODE)
    (tmp_path / "test_plan.py").write_text("def test_ids():\n    assert stable_chunk_ids({}, {}) == {}\n")
    Corpus.open(tmp_path).index()
    corpus = Corpus.open(tmp_path)
    corpus.query(QUESTION)
    reads: list[int] = []
    real = Store.file_paths_of
    monkeypatch.setattr(Store, "file_paths_of", lambda self, ids: reads.append(len(ids)) or real(self, ids))
    first = corpus.query(QUESTION)
    assert reads == []                        # the same files again: nothing read
    assert corpus.query(QUESTION) == first    # and the same answer
    corpus.close()


def test_a_new_generation_s_files_get_their_own_roles_even_under_a_reused_file_id(tmp_path, fake_model):
    """SQLite gives a new row the highest id + 1: a file added after the last file was deleted takes its
    id. A searcher that kept the old generation's roles would weigh the new test file as the old source."""
    from ragx.api import Corpus

    (tmp_path / "plan.py").write_text(CODE)
    (tmp_path / "util.py").write_text("def ids_kept_stable_across_runs():\n    return 'chunk ids'\n")
    Corpus.open(tmp_path).index()
    corpus = Corpus.open(tmp_path)
    assert _roles_by_path(corpus)["util.py"] == SOURCE
    (tmp_path / "util.py").unlink()
    Corpus.open(tmp_path).index()             # other processes' index runs: new generations
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "util.py").write_text("def ids_kept_stable_across_runs():\n    return 'chunk ids'\n")
    Corpus.open(tmp_path).index()
    roles = _roles_by_path(corpus)            # the warm searcher follows them
    assert "util.py" not in roles
    assert roles["tests/util.py"] == TEST
    assert roles["plan.py"] == SOURCE
    corpus.close()


def test_prose_and_identifiers_give_the_terms_of_their_words_and_names():
    assert bm25_terms("chunk ids kept stable") == bm25_terms("chunk ids kept stable.")
    assert "parsearg" not in bm25_terms("parse the args")
    assert {"parsearg", "pars", "arg"} <= set(bm25_terms("what does parse_args return"))
    assert {"parsearg", "pars", "arg"} <= set(bm25_terms("what does parseArgs return"))


def _anchor_files(corpus, question: str) -> set[str]:
    """The files among a query's candidates that anchor evidence reaches."""
    searcher = corpus.searcher
    c = searcher.candidates(question, corpus.settings.search)
    with searcher.reading():
        paths = searcher.store.file_paths_of(np.unique(c.file_ids).tolist())
    return {paths[int(f)] for f, s in zip(c.file_ids, c.anchor_sim) if not np.isnan(s)}


def test_a_warm_searcher_sees_the_anchors_a_new_generation_adds(tmp_path, fake_model):
    """The targets anchor documents are kept for are read once per generation: a link written later
    (another process's index run) reaches its target in the next query of the same searcher."""
    from ragx.api import Corpus

    note = "---\ntitle: {}\n---\n\n{}\n"
    (tmp_path / "hub.md").write_text(note.format("Hub", "For the budget review read [[sheet]]."))
    (tmp_path / "sheet.md").write_text(note.format("Sheet", "Columns: cost centre, owner, amount."))
    (tmp_path / "garden.md").write_text(note.format("Garden", "Roses and tulips."))
    (tmp_path / "ragx.toml").write_text("[search]\nmin_dense_evidence = 0.0\nmin_lexical_evidence = 0.0\n")
    Corpus.open(tmp_path).index()
    corpus = Corpus.open(tmp_path)
    assert _anchor_files(corpus, "budget review roses") == {"sheet.md"}
    (tmp_path / "plants.md").write_text(note.format("Plants", "The spring planting plan is in [[garden]]."))
    Corpus.open(tmp_path).index()
    assert _anchor_files(corpus, "budget review roses") == {"sheet.md", "garden.md"}
    corpus.close()
