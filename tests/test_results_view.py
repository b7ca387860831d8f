"""Human query output grouped by file (best chunk first, "+N more in this file", date, why); --json untouched."""

from __future__ import annotations

import json
import re

import pytest
from cli_runner import call

pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake


@pytest.fixture
def corpus(tmp_path):
    sections = "\n\n".join(f"## Harbour {i}\n\n" + " ".join(["the harbour lighthouse lamp and its keeper"] * 12) for i in range(4))
    (tmp_path / "harbour.md").write_text("# Harbour\n\n" + sections + "\n", encoding="utf-8")
    (tmp_path / "garden.md").write_text("# Garden\n\nroses and tulips, and a lamp by the garden gate\n", encoding="utf-8")
    (tmp_path / "ledger.md").write_text("# Ledger\n\ndues and dredging contracts of the harbour board\n", encoding="utf-8")
    return tmp_path


def test_each_file_once_best_chunk_first_with_the_rest_counted_and_json_unchanged(corpus, capsys):
    assert call(capsys, "index", "--root", str(corpus))[0] == 0
    args = ("query", "harbour lighthouse lamp keeper", "--root", str(corpus), "--top", "8", "--no-evidence-check")
    code, out, _ = call(capsys, *args, "--json")
    doc = json.loads(out)
    files = [r["file"] for r in doc["results"]]
    assert code == 0 and files.count("harbour.md") >= 3  # JSON: every chunk, as before (not grouped)
    assert doc["schema"] == "ragx.query.v1" and {"chunk_id", "line_start", "breakdown", "date", "stale"} <= doc["results"][0].keys()
    code, human, _ = call(capsys, *args)
    heads = re.findall(r"^\s*(\d+)\. (\S+?):(\d+)-(\d+)\s+(\d{4}-\d\d-\d\d)\s+score", human, re.M)
    order = list(dict.fromkeys(files))  # files in the order of their best chunk
    assert [h[1] for h in heads] == order and [int(h[0]) for h in heads] == list(range(1, len(order) + 1))
    best = doc["results"][files.index("harbour.md")]
    head = next(h for h in heads if h[1] == "harbour.md")
    assert (int(head[2]), int(head[3])) == (best["line_start"], best["line_end"])  # the best chunk leads
    assert f"+{files.count('harbour.md') - 1} more in this file (lines " in human
    assert human.count("why: meaning ") == len(order) and "words bm25 " in human
