import json

import pytest

from ragx.errors import UsageError
from ragx.eval.beir import materialise


@pytest.fixture
def beir(tmp_path):
    d = tmp_path / "set"
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_text(
        "\n".join(json.dumps(x) for x in [
            {"_id": "d1", "title": "First", "text": "alpha beta"},
            {"_id": "d/2", "title": "", "text": "gamma"},
            {"_id": "d3", "title": "", "text": ""},
        ]) + "\n"
    )
    (d / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "alpha?"}) + "\n" + json.dumps({"_id": "q2", "text": "none"}) + "\n")
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td/2\t1\nq2\td3\t0\n")
    return d


def test_materialise_writes_files_and_queries(beir, tmp_path):
    out = tmp_path / "out"
    made = materialise(beir, out)
    assert (out / "corpus" / "d1.md").read_text() == "# First\n\nalpha beta\n"
    assert (out / "corpus" / "d_2.md").read_text() == "gamma\n"
    assert made.documents == 3 and made.written == 3 and (out / "corpus" / "d3.md").read_text() == ""
    lines = [json.loads(x) for x in (out / "queries" / "test.jsonl").read_text().splitlines()]
    assert lines == [{"id": "q1", "query": "alpha?", "relevance": {"d1.md": 2, "d_2.md": 1}}]
    mtime = (out / "corpus" / "d1.md").stat().st_mtime_ns
    assert materialise(beir, out).written == 0
    assert (out / "corpus" / "d1.md").stat().st_mtime_ns == mtime


def test_unknown_split_is_a_usage_error(beir, tmp_path):
    with pytest.raises(UsageError, match="no qrels for split train"):
        materialise(beir, tmp_path / "out", ["train"])
