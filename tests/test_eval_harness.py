"""The honest harness: equal candidate budgets, paired significance against a reference, the reference
BM25 and several datasets in one run. Real retrieval on a small corpus (hash embedder), real statistics."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from cli_runner import call
from fakes import TOPICS, HashEmbedder, beir_folder, make_corpus

from ragx.api import Corpus
from ragx.config import load_settings
from ragx.eval import runner
from ragx.eval.presets import ReferenceBM25, parse_config
from ragx.eval.queries import load_queries
from ragx.eval.reference import ReferenceIndex
from ragx.eval.report import CAPPED, WORSE, marker
from ragx.eval.stats import paired
from ragx.index.build import run_index
from ragx.scoring.score import Ranking

BROKEN_RRF_K = 77.0  # a configuration with this rrf_k gets the broken scoring below


pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake


def topic_queries(n_per_topic: int, per_topic: int = 8) -> list[dict]:
    """Queries of three topic words; every file of that topic is relevant."""
    rng = random.Random(11)
    out = []
    for topic, words in TOPICS.items():
        w = words.split()
        for i in range(per_topic):
            out.append({"id": f"{topic}-{i}", "query": " ".join(rng.sample(w, 3)),
                        "relevant_files": [f"{topic}-{j}.md" for j in range(n_per_topic)]})
    return out


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    make_corpus(root, n_per_topic=10)
    run_index(root, load_settings(root), HashEmbedder())
    q = tmp_path / "queries.jsonl"
    q.write_text("\n".join(json.dumps(x) for x in topic_queries(10)) + "\n")
    return root, q


def topic_sets(tmp_path, seed: int, sets: dict[str, list[str]]):
    """BEIR folders named after `sets`' keys, each six documents of 30 random words per listed topic."""
    rng = random.Random(seed)
    out = []
    for name, topics in sets.items():
        words = {f"{t}{i}": " ".join(rng.choice(TOPICS[t].split()) for _ in range(30)) for t in topics for i in range(6)}
        out.append(beir_folder(tmp_path / name, words))
    return out


def run_json(capsys, *args):
    code, out, err = call(capsys, "eval", *args, "--json")
    assert code == 0, err
    return json.loads(out), err


def test_a_broken_scoring_change_is_significantly_worse_and_a_no_op_is_not(corpus, capsys, monkeypatch):
    real_score = runner.score

    def broken(c, p):  # the deliberate bug: every score's sign flipped, so the ranking is reversed
        r = real_score(c, p)
        if p.rrf_k != BROKEN_RRF_K:
            return r
        return Ranking(r.order[::-1].copy(), -r.score, r.fused, r.trace, r.reranked)

    monkeypatch.setattr(runner, "score", broken)
    root, q = corpus
    full, err = run_json(capsys, str(q), "--root", str(root), "-c", "hybrid", "-c", f"broken=hybrid,rrf_k={BROKEN_RRF_K}",
                         "-c", "same=hybrid")
    doc = full["datasets"][0]
    comps = doc["comparisons"]
    assert comps["reference"] == "hybrid" and set(comps["configs"]) == {"broken", "same"}
    n = doc["n_queries"]
    bad = comps["configs"]["broken"]["nDCG@10"]
    assert bad["significant"] and bad["diff"] < 0 and bad["ci"][1] < 0 and bad["p_adjusted"] < 0.01
    # Ties are queries whose every candidate file is relevant: reversing their order changes nothing.
    assert bad["wins"] == 0 and bad["losses"] >= 8 and bad["wins"] + bad["ties"] + bad["losses"] == n
    assert marker(doc, "broken", "nDCG@10").startswith(WORSE) and WORSE in err
    for metric, same in comps["configs"]["same"].items():
        assert same["p"] == 1.0 and same["p_adjusted"] == 1.0 and not same["significant"], metric
        assert (same["wins"], same["ties"], same["losses"]) == (0, n, 0) and same["diff"] == 0 and same["ci"] == [0, 0], metric


def test_paired_test_and_interval_follow_the_data():
    rng = np.random.default_rng(3)
    ref = rng.uniform(0, 1, 60)
    better = paired(np.clip(ref + 0.1 + rng.normal(0, 0.05, 60), 0, 1), ref)
    assert better.p < 0.001 and better.ci[0] > 0 and better.wins > 50
    noise = paired(ref + rng.normal(0, 0.1, 60), ref)
    assert noise.p > 0.05 and noise.ci[0] < 0 < noise.ci[1]
    tiny = paired(np.array([1.0, 1.0, 1.0]), np.array([0.0, 0.0, 0.0]))
    assert tiny.p == pytest.approx(0.25)  # 3 queries: the exact test's smallest two-sided p is 2/8


def test_equal_budgets_are_filled_per_query(corpus):
    root, q = corpus
    c = Corpus(root)
    specs = ["dense", "bm25", "hybrid", "graph", "fixed=hybrid,budget=12", "own=hybrid,budget=own", "g12=graph,budget=12"]
    configs = [parse_config(s, c.settings.search) for s in specs]
    result = runner.run_eval(c.searcher, load_queries(q), configs)
    cands = result.candidates
    for qid, graph in cands["graph"].items():
        assert cands["dense"][qid] == graph and cands["hybrid"][qid] == graph, qid
        assert 0 < cands["bm25"][qid] <= graph  # the lexical leg fills only as far as the query's words match
        assert cands["fixed"][qid] == 12 and 0 < cands["g12"][qid] <= 12
        assert cands["own"][qid] <= c.settings.search.dense_n + c.settings.search.lexical_n
    assert max(cands["graph"].values()) > 40  # the graph admits more than its 20 + 20 seeds
    budgets = result.budgets()
    assert budgets["hybrid"]["candidates"] == budgets["graph"]["candidates"]
    assert budgets["fixed"]["files"] <= 12


def test_a_configuration_scores_the_same_whatever_else_runs_beside_it(corpus, monkeypatch):
    """An ANN dense leg is not prefix-stable (the first 100 of 400 seeds may not be a query's own 100):
    emulated here by a pass that, asked for more than 200 dense seeds, carries other dense evidence.
    `default` must still score what `ragx query` would, alone or beside a deep budgeted leg."""
    root, q = corpus
    c = Corpus(root)
    real_pass = c.searcher.pass_with_caps

    def deep_passes_differ(query, caps, **kwargs):
        cands = real_pass(query, caps, **kwargs)
        if caps.dense_n > 200:
            cands.qsim = cands.qsim[::-1].copy()
        return cands

    monkeypatch.setattr(c.searcher, "pass_with_caps", deep_passes_differ)

    alone = runner.run_eval(c.searcher, load_queries(q), [parse_config("default", c.settings.search)])
    beside = runner.run_eval(c.searcher, load_queries(q), [parse_config(s, c.settings.search)
                                                          for s in ("default", "deep=dense,budget=400", "hybrid")])
    assert beside.file_per_query["default"] == alone.file_per_query["default"]
    assert beside.candidates["default"] == alone.candidates["default"]


def test_recall_beyond_the_budget_is_flagged(corpus, capsys, tmp_path):
    root, q = corpus
    full, _ = run_json(capsys, str(q), "--root", str(root), "-c", "hybrid", "-c", "tight=hybrid,budget=3", "--report", str(tmp_path / "rep"))
    doc = full["datasets"][0]
    assert doc["budgets"]["tight"]["files"] <= 3
    assert all(CAPPED in marker(doc, "tight", m) for m in ("R@5", "R@10", "R@100"))
    assert CAPPED not in marker(doc, "hybrid", "R@5") and CAPPED in marker(doc, "hybrid", "R@100")  # 31 files in all
    md = (tmp_path / "rep" / "corpus-queries.md").read_text()
    assert f"{CAPPED}" in md and "| tight |" in md and "W/T/L" in md


def test_default_run_has_the_wide_hybrid_and_the_reference_bm25(corpus, capsys):
    root, q = corpus
    full, err = run_json(capsys, str(q), "--root", str(root))
    doc = full["datasets"][0]
    assert list(doc["files"]["means"]) == ["dense", "bm25", "bm25-ref", "hybrid", "hybrid-wide", "default", "graph"]
    assert full["reference"] == "hybrid" and "hybrid" not in doc["comparisons"]["configs"]
    assert doc["files"]["means"]["bm25-ref"]["nDCG@10"] > 0.5
    assert doc["budgets"]["bm25-ref"]["unit"] == "files"
    check = doc["lexical_check"]
    assert check["leg"] == "bm25" and set(check["metrics"]["nDCG@10"]) >= {"diff", "ci", "p", "p_adjusted", "wins", "ties", "losses"}
    assert "lexical check: bm25 nDCG@10" in err


def test_no_figure_is_cut_to_fit_a_narrow_or_absent_terminal(corpus, capsys):
    root, q = corpus
    code, out, err = call(capsys, "eval", str(q), "--root", str(root))  # captured: no terminal, 80 columns
    assert code == 0, err
    assert "nDCG@10" in out and "MAP@100" in out and "…" not in out


def test_the_commit_a_run_names_is_ragx_s_own_not_the_working_folder_s(corpus, capsys, tmp_path, monkeypatch):
    import subprocess
    from pathlib import Path

    import ragx
    from ragx.eval.report import git_commit

    elsewhere = tmp_path / "another-repo"
    elsewhere.mkdir()
    subprocess.run(["git", "init", "-q", str(elsewhere)], check=True)
    subprocess.run(["git", "-C", str(elsewhere), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    monkeypatch.chdir(elsewhere)
    root, q = corpus
    full, _ = run_json(capsys, str(q), "--root", str(root), "-c", "default")
    assert full["commit"] == git_commit(Path(ragx.__file__).resolve().parent) != git_commit(elsewhere)


def test_reference_bm25_stems_and_drops_stopwords(tmp_path):
    (tmp_path / "a.md").write_text("The dog runs in the park.\n")
    (tmp_path / "b.md").write_text("A cat sleeps on the sofa.\n")
    (tmp_path / "c.md").write_text("Nothing of the sort.\n")
    index = ReferenceIndex(tmp_path, ["c.md", "b.md", "a.md"])
    (run, matched), (none, zero) = index.rank(["running dogs", "the of"], ReferenceBM25(), 10)
    assert list(run) == ["a.md"] and matched == 1  # "running" ~ "runs", "dogs" ~ "dog"
    assert none == {} and zero == 0                   # only stopwords: nothing matches


def test_unknown_reference_is_a_usage_error(corpus, capsys):
    root, q = corpus
    code, _, err = call(capsys, "eval", str(q), "--root", str(root), "-c", "dense", "--reference", "nope")
    assert code == 2 and "--reference 'nope'" in err


def test_several_datasets_in_one_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "cache"))
    sets = [str(f) for f in topic_sets(tmp_path, 5, {"one": ["astronomy", "cooking"], "two": ["sailing", "cooking"]})]
    full, out_err = run_json(capsys, "beir", *sets, "--split", "test", "--report", str(tmp_path / "rep"),
                             "--write-baseline", str(tmp_path / "base"))
    assert [d["dataset"] for d in full["datasets"]] == ["one", "two"]
    row = full["summary"]["nDCG@10"]["graph"]
    assert row["mean"] == pytest.approx((row["one"] + row["two"]) / 2)
    assert "summary: nDCG@10" in out_err
    assert (tmp_path / "rep" / "summary-test.md").exists() and (tmp_path / "rep" / "summary-test.png").stat().st_size > 1000
    assert (tmp_path / "base" / "one-test.json").exists() and (tmp_path / "base" / "two-test.json").exists()
    code, _, err = call(capsys, "eval", "beir", *sets, "--gate", str(tmp_path / "base"))
    assert code == 0 and "gate one: passed" in err and "gate two: passed" in err


def test_two_legs_fill_a_budget_exactly_where_the_legs_allow():
    from test_score import BASE, make

    from ragx.eval.budget import equal_prefix, fit
    from ragx.scoring.score import score

    # dense ranks chunks 1, 2, 3, 4 (positions 0-3); BM25 ranks 3, 5, 6, 1 (positions 2, 4, 5, 0).
    c = make([], [0.9, 0.8, 0.7, 0.6, 0.5, 0.4], dense=[0, 1, 2, 3], lexical=[2, 4, 5, 0])
    hybrid = BASE.replace(hops=0)
    # union of the first n of both legs: n=1 -> 2 chunks, n=2 -> 4, n=3 -> 5, n=4 -> 6
    assert [equal_prefix(c, t) for t in (2, 3, 4, 5, 6, 9)] == [1, 1, 2, 3, 4, 4]
    for target in range(1, 7):
        p = fit(hybrid, c, target)
        assert len(score(c, p).order) == target, target   # filled, never exceeded
    assert (fit(hybrid, c, 3).dense_n, fit(hybrid, c, 3).lexical_n) == (2, 1)  # one more dense seed still fits
    assert fit(BASE.replace(lexical_n=0, hops=0), c, 3).dense_n == 3
    graph = BASE.replace(dense_n=1, lexical_n=1, hops=1)
    assert fit(graph, c, 5).max_frontier == 3                            # seeds {1, 3} + 3 admitted
    assert fit(graph, c, 1).hops == 0                                    # below the seeds: a hybrid of that size


def test_gap_runs_the_train_split_where_there_is_one(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "cache"))
    sets = topic_sets(tmp_path, 9, {"tuned": ["astronomy", "cooking"], "heldout": ["sailing", "cooking"]})
    test_lines = (sets[0] / "qrels" / "test.tsv").read_text().splitlines()
    (sets[0] / "qrels" / "train.tsv").write_text("\n".join([test_lines[0], *test_lines[1:7]]) + "\n")
    (sets[0] / "qrels" / "test.tsv").write_text("\n".join([test_lines[0], *test_lines[7:]]) + "\n")
    configs = ["-c", "dense", "-c", "hybrid"]
    full, out_err = run_json(capsys, "beir", *map(str, sets), *configs, "--gap", "--report", str(tmp_path / "rep"))
    tuned, heldout = full["datasets"]
    train, _ = run_json(capsys, "beir", str(sets[0]), "--split", "train", *configs)
    assert tuned["gap"]["n_queries"] == 6 and "gap" not in heldout
    for name in ("dense", "hybrid"):
        train_mean = train["datasets"][0]["files"]["means"][name]["nDCG@10"]
        assert tuned["gap"]["means"][name]["nDCG@10"] == pytest.approx(train_mean)
        assert tuned["gap"]["gap"][name]["nDCG@10"] == pytest.approx(train_mean - tuned["files"]["means"][name]["nDCG@10"])
    assert "train - test gap: nDCG@10" in out_err
    summary = (tmp_path / "rep" / "summary-test.md").read_text()
    assert "Train / train − test gap" in summary and "no train split" in summary


def test_a_set_that_types_its_queries_is_also_reported_by_type(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "cache"))
    (folder,) = topic_sets(tmp_path, 3, {"typed": ["astronomy", "cooking"]})
    rows = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines()]
    for i, row in enumerate(rows):
        row["metadata"] = {"type": "linked" if i % 3 == 0 else "keyword"}
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    full, out_err = run_json(capsys, "beir", str(folder), "-c", "dense", "-c", "hybrid")
    doc = full["datasets"][0]
    linked = [r["_id"] for i, r in enumerate(rows) if i % 3 == 0]
    assert doc["by_type"]["linked"]["n"] == len(linked) and doc["by_type"]["keyword"]["n"] == len(rows) - len(linked)
    per_query = doc["files"]["per_query"]["hybrid"]
    assert doc["by_type"]["linked"]["means"]["hybrid"]["nDCG@10"] == pytest.approx(np.mean([per_query[q]["nDCG@10"] for q in linked]))
    assert "nDCG@10 by query type" in out_err


def test_the_power_of_a_paired_check_follows_the_t_test():
    """power(d, effect): the two-sided paired t-test's power at these many queries and this spread; the
    textbook figure for n = 40, sd 0.2, effect 0.05 (noncentrality 1.58) is about a third."""
    import numpy as np

    from ragx.eval.stats import power

    rng = np.random.default_rng(0)
    d = rng.normal(0, 1, 40)
    d = (d - d.mean()) / d.std(ddof=1) * 0.2  # exactly sd 0.2
    assert 0.32 < power(d, 0.05) < 0.36
    assert power(d, 0.05) < power(np.tile(d, 10), 0.05) and power(np.tile(d, 10), 0.05) > 0.99
    assert power(d, 0.0) == 0.05 and power(d[:1], 0.05) == 0.0
