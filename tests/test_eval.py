"""`ragx eval` end to end on a small corpus with the hash embedder, plus the gate's logic."""

from __future__ import annotations

import json

import pytest
from cli_runner import call
from fakes import make_indexed_corpus

from ragx.config import load_settings
from ragx.errors import UsageError
from ragx.eval.gate import check
from ragx.eval.presets import parse_config
from ragx.eval.queries import load_queries

pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake


@pytest.fixture
def corpus(tmp_path):
    root = make_indexed_corpus(tmp_path / "corpus")
    q = tmp_path / "queries.jsonl"
    q.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {"id": "a", "query": "telescope comet orbit", "relevant_files": ["astronomy-1.md", "astronomy-2.md"]},
                {"id": "b", "query": "dough yeast bread", "relevance": {"cooking-0.md": 2, "cooking-3.md": 1}},
                {"id": "c", "query": "keel mast", "relevant_chunks": {"sailing-2.md:1-6": 1}},
            ]
        )
        + "\n"
    )
    return root, q


def test_eval_json_reports_every_config_and_metric(corpus, capsys, tmp_path):
    root, q = corpus
    code, out, err = call(capsys, "eval", str(q), "--root", str(root), "--json", "-c", "dense", "-c", "deep=graph,hops=3", "--report", str(tmp_path / "rep"))
    full = json.loads(out)
    assert code == 0 and full["schema"] == "ragx.eval.v2" and len(full["datasets"]) == 1
    doc = full["datasets"][0]
    assert list(doc["files"]["means"]) == ["dense", "deep"]
    assert set(doc["files"]["means"]["dense"]) == {"nDCG@10", "R@5", "R@10", "R@100", "MRR@10", "MAP@100"}
    assert set(doc["files"]["per_query"]["deep"]) == {"a", "b", "c"}
    assert doc["chunks"] is not None and set(doc["chunks"]["per_query"]["dense"]) == {"a", "b", "c"}
    assert doc["files"]["means"]["dense"]["nDCG@10"] > 0.3
    assert (tmp_path / "rep" / "corpus-queries.md").exists() and (tmp_path / "rep" / "corpus-queries.png").stat().st_size > 1000


def test_gate_passes_on_itself_and_fails_on_a_drop(corpus, capsys, tmp_path):
    root, q = corpus
    base = tmp_path / "base.json"
    code, _, _ = call(capsys, "eval", str(q), "--root", str(root), "--write-baseline", str(base))
    assert code == 0
    assert call(capsys, "eval", str(q), "--root", str(root), "--gate", str(base))[0] == 0
    doc = json.loads(base.read_text())
    doc["metrics"]["graph"]["nDCG@10"] += 0.05
    base.write_text(json.dumps(doc))
    code, _, err = call(capsys, "eval", str(q), "--root", str(root), "--gate", str(base))
    assert code == 1 and "graph nDCG@10" in err and "FAILED" in err


def test_gate_logic():
    baseline = {"tolerance": 0.01, "metrics": {"graph": {"nDCG@10": 0.5, "R@100": 0.9}}}
    assert check(baseline, {"graph": {"nDCG@10": 0.495, "R@100": 0.95}}).passed
    failed = check(baseline, {"graph": {"nDCG@10": 0.48, "R@100": 0.95}})
    assert not failed.passed and [r["metric"] for r in failed.rows if not r["ok"]] == ["nDCG@10"]
    assert not check(baseline, {}).passed  # a config that vanished fails too


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"query": "x"}', "no relevant_files"),
        ('{"relevant_files": ["a"]}', "non-empty \\\"query\\\""),
        ("{not json", "malformed JSON"),
        ('{"query": "x", "relevant_chunks": {"a.md": 1}}', "path:START-END"),
        ('{"query": "x", "relevant_files": ["a.md"], "relevance": {"b.md": 1}}', "not both"),
    ],
)
def test_bad_query_lines_are_usage_errors(tmp_path, line, message):
    f = tmp_path / "q.jsonl"
    f.write_text(line + "\n")
    with pytest.raises(UsageError, match=message):
        load_queries(f)


def test_config_specs():
    defaults = load_settings(None).search
    c = parse_config("wide=graph,hops=3,decay=0.7", defaults)
    assert (c.name, c.params.hops, c.params.decay, c.params.rerank_weight) == ("wide", 3, 0.7, 0.0)
    assert parse_config("bm25", defaults).params.dense_n == 0
    for bad in ("nope", "x=graph,hops=many", "x=graph,colour=3"):
        with pytest.raises(UsageError):
            parse_config(bad, defaults)


def test_a_relevant_range_makes_its_file_relevant_beside_file_labels(tmp_path):
    f = tmp_path / "q.jsonl"
    f.write_text('{"query": "x", "relevance": {"a.md": 2}, "relevant_chunks": {"b.md:1-3": 1, "c.md:1-2": 0}}\n')
    (q,) = load_queries(f)
    assert q.files == {"a.md": 2, "b.md": 1}
