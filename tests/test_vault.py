"""A small notes vault end to end (hash embedder): frontmatter headers, links, --tag/--path, the
no-match rule, incremental exactness of the new tables, and `ragx init`'s markdown-only proposal."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from cli_runner import call
from fakes import HashEmbedder, make_corpus

from ragx.api import Corpus, markdown_includes
from ragx.config import load_settings
from ragx.index.build import run_index
from ragx.search.lexical import bm25_matches

pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake


def _note(title: str, desc: str, body: str, tags: str = "[]") -> str:
    return f"---\nid: abc{title}\ntitle: {title}\ndesc: '{desc}'\ntags: {tags}\nupdated: 1653409628830\n---\n\n{body}\n"


@pytest.fixture
def vault(tmp_path):
    (tmp_path / "daily").mkdir()
    (tmp_path / "hub.md").write_text(_note("Hub", "index of garden notes", "Start at [[garden.roses]] and ![[garden.tulips]]."), encoding="utf-8")
    (tmp_path / "garden.roses.md").write_text(_note("Roses", "pruning roses in winter", "Cut the canes above an outward bud.", "[garden, flowers]"), encoding="utf-8")
    (tmp_path / "garden.tulips.md").write_text(_note("Tulips", "zanzibar bulbs planting", "Plant bulbs in autumn, pointy end up.", "[garden]"), encoding="utf-8")
    (tmp_path / "daily" / "log.md").write_text(_note("Log", "what happened", "Watered the roses today. See [hub](../hub.md)."), encoding="utf-8")
    # The hash embedder's cosines mean nothing: the evidence rule is tested on its own, below.
    (tmp_path / "ragx.toml").write_text("[search]\nmin_dense_evidence = 0.0\nmin_lexical_evidence = 0.0\n", encoding="utf-8")
    run_index(tmp_path, load_settings(tmp_path), HashEmbedder())
    return tmp_path


def _db(root):
    return sqlite3.connect(root / ".ragx" / "index.sqlite")


def test_results_never_show_frontmatter_and_header_words_match(vault):
    doc = Corpus(vault).query("zanzibar", top=10)  # only in garden.tulips' desc
    assert doc["results"][0]["file"] == "garden.tulips.md"
    for r in Corpus(vault).query("roses notes bulbs", top=50)["results"]:
        assert not r["text"].startswith("---") and "updated:" not in r["text"]
        assert (vault / r["file"]).read_bytes()[r["byte_start"] : r["byte_end"]].decode().startswith(r["text"])


def test_tag_and_path_filters(vault, capsys):
    code, out, _ = call(capsys, "query", "roses bulbs garden", "--root", str(vault), "--json", "--tag", "#Garden", "--files-only")
    assert code == 0 and {r["file"] for r in json.loads(out)["results"]} == {"garden.roses.md", "garden.tulips.md"}
    code, out, _ = call(capsys, "query", "roses", "--root", str(vault), "--json", "--tag", "flowers", "--tag", "garden")
    assert code == 0 and {r["file"] for r in json.loads(out)["results"]} == {"garden.roses.md"}
    code, out, _ = call(capsys, "query", "roses", "--root", str(vault), "--json", "--path", "daily/*")
    assert code == 0 and {r["file"] for r in json.loads(out)["results"]} == {"daily/log.md"}
    code, out, _ = call(capsys, "query", "roses", "--root", str(vault), "--json", "--tag", "nosuchtag")
    assert code == 1 and json.loads(out)["results"] == [] and "filters" in json.loads(out)["evidence"]["reason"]


@pytest.mark.parametrize("args, message", [
    (("--path", "["), "--path '[': the '[' at position 1 is never closed (a literal '[' is written '[[]')"),
    (("--path", "daily/[0-9"), "the '[' at position 7 is never closed"),
    (("--path", ""), "--path '': an empty pattern matches no file"),
    (("--tag", ""), "--tag '' names no tag"),
    (("--tag", " # "), "--tag ' # ' names no tag"),
])
def test_a_filter_that_can_match_nothing_by_its_form_is_bad_input(vault, capsys, args, message):
    code, out, err = call(capsys, "query", "roses", "--root", str(vault), *args)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and err.startswith("ragx: error: --") and message in err


def test_a_path_glob_is_read_from_the_root_however_it_is_written(vault, capsys):
    def files(*args):
        code, out, err = call(capsys, "query", "roses", "--root", str(vault), "--json", *args)
        assert code == 0, err
        return {r["file"] for r in json.loads(out)["results"]}

    assert files("--path", "./daily/*") == files("--path", f"{vault}/daily/*") == {"daily/log.md"}
    code, out, err = call(capsys, "query", "roses", "--root", str(vault), "--path", "/elsewhere/daily/*")
    assert code == 2 and out == "" and "is outside the corpus root" in err and len(err.splitlines()) == 1


def test_a_second_path_glob_is_refused_not_silently_dropped(vault, capsys):
    code, out, err = call(capsys, "query", "roses", "--root", str(vault), "--path", "daily/*", "--path", "garden*")
    assert code == 2 and out == "" and "--path is given 2 times: give one glob" in err


def test_no_evidence_among_the_filtered_files_says_so(vault, capsys):
    # The rule judges the chunks the filters allow: a match elsewhere in the corpus does not count.
    (vault / "ragx.toml").write_text("[search]\nmin_dense_evidence = 0.999\nmin_lexical_evidence = 0.01\n", encoding="utf-8")
    assert call(capsys, "query", "zanzibar", "--root", str(vault))[0] == 0  # only garden.tulips says it
    code, out, _ = call(capsys, "query", "zanzibar", "--root", str(vault), "--json", "--path", "daily/*")
    reason = json.loads(out)["evidence"]["reason"]
    assert code == 1 and reason.startswith("no relevant evidence") and reason.endswith("among the files the filters allow")


def test_globs_sqlite_can_match_are_accepted(vault, capsys):
    for glob in ("daily/[0-9]*", "[]x]*", "[^]x]*", "[[]*", "*"):
        assert call(capsys, "query", "roses", "--root", str(vault), "--path", glob)[0] in (0, 1)


def test_links_are_stored_and_resolved_among_candidates(vault):
    with _db(vault) as db:
        rows = set(db.execute("SELECT f.path, l.kind, l.target FROM links l JOIN files f ON f.id = l.file_id"))
    assert ("hub.md", "wikilink", "garden.roses.md") in rows and ("hub.md", "embed", "garden.tulips.md") in rows
    assert ("daily/log.md", "link", "hub.md") in rows and ("garden.roses.md", "tag", "flowers") in rows
    s = Corpus(vault).searcher
    c = s.candidates("roses tulips hub log garden", Corpus(vault).settings.search.replace(dense_n=50, lexical_n=50))
    paths = dict(s.store.db.execute("SELECT id, path FROM files"))
    linked = {tuple(sorted((paths[a], paths[b]))) for a, b in c.link_pairs.tolist()}
    assert {("garden.roses.md", "hub.md"), ("garden.tulips.md", "hub.md"), ("daily/log.md", "hub.md"),
            ("garden.roses.md", "garden.tulips.md")} <= linked


def test_incremental_runs_keep_headers_and_links_exact(vault):
    (vault / "hub.md").write_text(_note("Hub", "index", "Only [[garden.tulips]] now."), encoding="utf-8")
    (vault / "daily" / "log.md").unlink()
    run_index(vault, load_settings(vault), HashEmbedder())
    with _db(vault) as db:
        inc = sorted(db.execute("SELECT f.path, l.kind, l.target FROM links l JOIN files f ON f.id = l.file_id"))
        inc_h = sorted(db.execute("SELECT f.path, h.header FROM chunk_headers h JOIN chunks c ON c.id = h.chunk_id JOIN files f ON f.id = c.file_id"))
    searcher = Corpus(vault).searcher
    with searcher.reading() as snap:  # the header's word is in BM25's postings
        in_bm25 = len(bm25_matches(snap, searcher.store, "zanzibar")[0])
    searcher.close()
    run_index(vault, load_settings(vault), HashEmbedder(), full=True)
    with _db(vault) as db:
        full = sorted(db.execute("SELECT f.path, l.kind, l.target FROM links l JOIN files f ON f.id = l.file_id"))
        full_h = sorted(db.execute("SELECT f.path, h.header FROM chunk_headers h JOIN chunks c ON c.id = h.chunk_id JOIN files f ON f.id = c.file_id"))
    assert inc == full and inc_h == full_h and in_bm25 == 1
    assert ("hub.md", "wikilink", "garden.roses.md") not in inc and not any(p == "daily/log.md" for p, *_ in inc)
    assert Corpus(vault).status()["consistent"]


def test_an_old_index_is_rechunked_once_reusing_vectors(vault):
    with _db(vault) as db:
        db.execute("UPDATE manifest SET value = '1' WHERE key = 'chunker'")
    report = run_index(vault, load_settings(vault), HashEmbedder())
    assert report.embedded_chunks == 0 and report.reused_chunks == report.chunks
    assert run_index(vault, load_settings(vault), HashEmbedder()).reused_chunks == 0  # and only once


def test_no_evidence_means_empty_result_and_exit_1(vault, capsys):
    strict = load_settings(vault).search.replace(min_dense_evidence=0.999, min_lexical_evidence=0.01)
    c = Corpus(vault)
    doc = c.query("asdkjh qwpoeiru", params=strict)
    assert doc["results"] == [] and doc["evidence"]["match"] is False and "no relevant evidence" in doc["evidence"]["reason"]
    assert c.query("pruning roses", params=strict)["results"]  # BM25 evidence carries a real query
    (vault / "ragx.toml").write_text("[search]\nmin_dense_evidence = 0.999\nmin_lexical_evidence = 0.01\n", encoding="utf-8")
    code, out, _ = call(capsys, "query", "asdkjh qwpoeiru", "--root", str(vault), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["results"] == [] and "reason" in doc["evidence"]
    code, out, _ = call(capsys, "query", "asdkjh qwpoeiru", "--root", str(vault))
    assert code == 1 and "no relevant evidence" in out and "--no-evidence-check" in out


def test_the_bm25_share_keeps_a_question_its_words_answer_and_drops_one_about_words_the_corpus_lacks(vault):
    # Only the share can pass: the cosine and per-term bars are out of reach.
    share_only = load_settings(vault).search.replace(min_dense_evidence=0.999, min_lexical_evidence=1e6, min_lexical_share=0.2)
    c = Corpus(vault)
    kept = c.query("pruning roses", params=share_only)
    assert kept["results"] and kept["evidence"]["match"] is True and kept["evidence"]["lexical_share"] >= 0.2
    # the same two words among words no note holds: each absent word is worth the most a word can be
    dropped = c.query("pruning roses quetzalcoatl xylograph ombudsman", params=share_only)["evidence"]
    assert dropped["match"] is False and dropped["lexical_share"] < 0.2 and "share of its ceiling" in dropped["reason"]
    # 1 turns the share off alone (a best score never reaches its ceiling); the other two still judge
    assert c.query("pruning roses", params=share_only.replace(min_lexical_share=1.0))["results"] == []
    # even where a share can reach 1: at k1 = 0 a chunk holding every word once scores its ceiling
    at_one = c.query("zanzibar", params=share_only.replace(bm25_k1=0.0), evidence_check=False)["evidence"]
    assert at_one["lexical_share"] == pytest.approx(1.0) and at_one["match"] is True
    assert c.query("zanzibar", params=share_only.replace(bm25_k1=0.0, min_lexical_share=1.0))["results"] == []
    assert c.query("pruning roses", params=share_only.replace(min_lexical_share=1.0, min_lexical_evidence=0.01))["results"]


def test_a_query_of_function_words_only_has_no_lexical_evidence(vault):
    # Only BM25 could pass it (the cosine bar is out of reach). "the" is in most notes: its best chunk
    # scores most of a near-zero ceiling, and "is it" names no topic at all.
    lexical_only = load_settings(vault).search.replace(min_dense_evidence=0.999, min_lexical_evidence=1e-9, min_lexical_share=1e-9)
    c = Corpus(vault)
    for words in ("the", "is it the"):
        evidence = c.query(words, params=lexical_only, evidence_check=False)["evidence"]
        assert evidence["match"] is False and evidence["lexical"] == evidence["lexical_share"] == 0.0
    assert c.query("the roses", params=lexical_only)["evidence"]["match"] is True  # one topic word is enough


def test_the_bm25_variant_setting_reaches_the_query(vault):
    settings = load_settings(vault).search
    c = Corpus(vault)
    evidence = {v: c.query("pruning roses", params=settings.replace(bm25_variant=v))["evidence"] for v in ("fts5", "bm25+", "lucene")}
    # bm25+ adds delta * idf for each word a chunk holds; Lucene's idf is larger than FTS5's for every word
    assert evidence["bm25+"]["lexical"] > evidence["fts5"]["lexical"]
    assert evidence["lucene"]["lexical"] > evidence["fts5"]["lexical"]


def test_no_evidence_check_shows_the_closest_and_still_reports_the_verdict(vault, capsys):
    strict = load_settings(vault).search.replace(min_dense_evidence=0.999, min_lexical_evidence=0.01)
    c = Corpus(vault)
    shown = c.query("asdkjh qwpoeiru", params=strict, evidence_check=False)
    enforced = c.query("asdkjh qwpoeiru", params=strict)
    ranked_without_rule = c.query("asdkjh qwpoeiru", params=strict.replace(min_dense_evidence=0.0, min_lexical_evidence=0.0))
    assert enforced["results"] == [] and enforced["evidence"]["enforced"] is True
    assert shown["evidence"]["match"] is False and shown["evidence"]["enforced"] is False and "no relevant evidence" in shown["evidence"]["reason"]
    assert [r["chunk_id"] for r in shown["results"]] == [r["chunk_id"] for r in ranked_without_rule["results"]] != []
    (vault / "ragx.toml").write_text("[search]\nmin_dense_evidence = 0.999\nmin_lexical_evidence = 0.01\n", encoding="utf-8")
    code, out, _ = call(capsys, "query", "asdkjh qwpoeiru", "--root", str(vault), "--json", "--no-evidence-check")
    doc = json.loads(out)
    assert code == 0 and doc["results"] and doc["evidence"]["match"] is False
    code, out, _ = call(capsys, "query", "asdkjh qwpoeiru", "--root", str(vault), "--files-only", "--no-evidence-check")
    assert code == 0 and out.startswith("weak match, shown because of --no-evidence-check: no relevant evidence")


def test_init_proposes_markdown_only_for_a_vault(vault, tmp_path_factory, capsys):
    (vault / "theme.css").write_text("body { color: red }\n", encoding="utf-8")
    code, _, err = call(capsys, "init", "--root", str(vault), "--yes", "--force")
    assert code in (0, None) and "mostly markdown" in err
    assert "*.md" in (vault / "ragx.toml").read_text(encoding="utf-8")
    code_dir = tmp_path_factory.mktemp("code")
    make_corpus(code_dir, n_per_topic=1)
    for i in range(5):
        (code_dir / f"m{i}.py").write_text("x = 1\n", encoding="utf-8")
    code, _, err = call(capsys, "init", "--root", str(code_dir), "--yes")
    assert "mostly markdown" not in err and "*.md" not in (code_dir / "ragx.toml").read_text(encoding="utf-8")


def test_init_agent_judges_the_folder_without_the_agents_md_it_writes(tmp_path, capsys):
    """Two sources, a README and a CLAUDE.md: half markdown, so the code stays in; the AGENTS.md that
    `--agent` writes must not tip it to "mostly markdown"."""
    (tmp_path / "README.md").write_text("# Proj\n\nA tiny project.\n", encoding="utf-8")
    (tmp_path / "CLAUDE.md").write_text("# Claude notes\n", encoding="utf-8")
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("def f():\n    return 1\n", encoding="utf-8")
    code, _, err = call(capsys, "init", "--agent", "--root", str(tmp_path), "--yes")
    assert code in (0, None) and (tmp_path / "AGENTS.md").exists() and "mostly markdown" not in err
    assert "*.md" not in (tmp_path / "ragx.toml").read_text(encoding="utf-8")


def test_init_keeps_the_code_of_a_project_whose_docs_outnumber_its_sources(tmp_path, capsys, fake_model):
    for name in ("README.md", "AGENTS.md", "CLAUDE.md", "CHANGELOG.md"):
        (tmp_path / name).write_text(f"# {name}\n\nhow the tool works\n", encoding="utf-8")
    (tmp_path / "tool.py").write_text("def main():\n    return 1\n", encoding="utf-8")
    assert markdown_includes(tmp_path)  # by the share of markdown alone it would look like notes
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'tool'\n", encoding="utf-8")
    code, _, err = call(capsys, "init", "--root", str(tmp_path), "--yes")
    assert code in (0, None) and "a code project (pyproject.toml)" in err and "mostly markdown" not in err
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    code, out, _ = call(capsys, "status", "--root", str(tmp_path), "--json")
    assert json.loads(out)["files"] == 6  # the four notes, the code and the manifest


def test_lab_pass_cache_keeps_link_pairs_so_link_weight_rescoring_matches(vault, tmp_path):
    pytest.importorskip("polars")
    from lab.passes import build_cache, load_cache
    from ragx.eval.queries import LabelledQuery
    from ragx.scoring.score import score

    corpus = Corpus(vault)
    p = corpus.settings.search.replace(dense_n=50, lexical_n=50, link_weight=0.5)
    query = LabelledQuery(id="q1", text="roses tulips hub log garden", files={"hub.md": 1})
    (cached,), _ = load_cache(build_cache(corpus, [query], p.caps(), tmp_path / "cache"))
    live = corpus.searcher.candidates(query.text, p, expand=False)
    assert len(live.link_pairs) > 0 and np.array_equal(cached.link_pairs, live.link_pairs)
    assert np.array_equal(score(cached, p).score, score(live, p).score, equal_nan=True)
    assert not np.array_equal(score(live, p).score, score(live, p.replace(link_weight=0.0)).score, equal_nan=True)


def test_a_query_reads_link_edges_only_when_link_weight_uses_them(vault):
    corpus = Corpus(vault)
    base = corpus.settings.search.replace(dense_n=50, lexical_n=50)
    query = "roses tulips hub log garden"
    on = corpus.query(query, params=base.replace(link_weight=0.5), top=10)["results"]
    off = corpus.query(query, params=base.replace(link_weight=0.0), top=10)["results"]
    # the boost needs the edges: with them the linked files' scores rise above the unboosted ones
    assert sum(r["score"] for r in on) > sum(r["score"] for r in off)


def test_init_keeps_the_pdfs_and_text_of_a_vault_and_says_what_to_run_next(vault, capsys, monkeypatch):
    import ragx.ingest.discover as discover

    (vault / "theme.css").write_text("body { color: red }\n", encoding="utf-8")
    (vault / "minutes.txt").write_text("minutes of the meeting\n", encoding="utf-8")
    (vault / "paper.pdf").write_bytes(b"%PDF-1.4\n")
    for i in range(3):
        (vault / f"extra{i}.md").write_text(f"# Extra {i}\n", encoding="utf-8")
    monkeypatch.setattr(discover, "pdf_readable", lambda: False)  # kept even where this install cannot read it yet
    code, _, err = call(capsys, "init", "--root", str(vault), "--yes", "--force")
    assert code in (0, None)
    toml = (vault / "ragx.toml").read_text(encoding="utf-8")
    assert '"*.md"' in toml and '"*.pdf"' in toml and '"*.txt"' in toml and "css" not in toml
    assert f"next: ragx status --root {vault}" in err  # indexed already (the fixture)
    assert "graph" not in toml  # init writes only what a user would change for a folder
