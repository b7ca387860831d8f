"""Queries about code: issue texts read for their names (search/query_features.py) and the file-role
prior (ingest/file_roles.py, scoring/score.py role_prior)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from conftest import DATA
from test_score import BASE, make

from ragx.ingest.file_roles import DOC, EXAMPLE, OTHER, SOURCE, TEST, role_of
from ragx.scoring.files import rank_files
from ragx.scoring.score import score
from ragx.search.query_features import features, is_issue, lexical_text

ISSUE = """Session.resolve_redirects drops the body on a 307

Calling `requests.post` through a redirect loses the payload.

```
Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/requests/sessions.py", line 210, in resolve_redirects
    prepared_request.body = None
  File "/home/me/app/client.py", line 4, in upload
    session.post(url, data=payload)
TypeError: expected bytes
```
""" + "It happens every time I upload a file through the proxy. " * 3


def test_an_issue_keeps_its_prose_and_the_names_of_its_traceback():
    assert is_issue(ISSUE)
    f = features(ISSUE)
    assert "Calling" in f.prose and "prepared_request.body = None" not in f.prose
    assert {"resolve_redirects", "upload", "TypeError", "Session.resolve_redirects", "requests.post"} <= set(f.names)
    assert "requests/sessions.py" in f.paths   # the site-packages prefix is cut
    text = lexical_text(ISSUE).split()
    assert "sessions" in text and "requests" in text and "site" not in " ".join(text).replace("site-", "")
    assert "File" not in text and "line" not in text


@pytest.mark.parametrize("query", ["parse_args", "how are chunk ids kept stable across index runs",
                                   "click.core.Context.invoke HTTPAdapter parseArgs"])
def test_a_short_query_is_searched_exactly_as_written(query):
    assert not is_issue(query) and lexical_text(query) == query


@pytest.mark.parametrize("collection", ["scifact", "cranfield", "musique-small", "dendron-vault"])
def test_no_query_of_the_shared_prose_sets_reads_as_an_issue(collection):
    path = DATA / collection / "queries.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is not on this machine")
    queries = [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert queries and not any(is_issue(q) for q in queries)


@pytest.mark.parametrize("path, role", [
    ("src/flask/app.py", SOURCE), ("requests/models.py", SOURCE), ("tests/test_app.py", TEST),
    ("testing/python/collect.py", TEST), ("src/pkg/conftest.py", TEST), ("web/app.spec.ts", TEST),
    ("examples/tutorial/flaskr/db.py", EXAMPLE), ("README.md", DOC), ("ragx/agent/SKILL.md", DOC),
    ("docs/conf.py", DOC), ("CHANGELOG.rst", DOC), ("LICENSE", DOC), ("pyproject.toml", OTHER), ("setup.cfg", OTHER),
])
def test_a_file_role_comes_from_its_path(path, role):
    assert role_of(path) == role


def _ranked_files(roles, p):
    c = make([], [0.9, 0.8, 0.7, 0.1], dense=[0, 1, 2, 3], file_ids=[0, 1, 2, 3])
    c.file_role = np.asarray(roles, dtype=np.int8)
    files, _ = rank_files(c, score(c, p), p)
    return files.tolist()


def test_the_role_prior_puts_source_above_a_test_and_a_doc_that_match_better():
    p = BASE.replace(prior_test=0.5, prior_doc=0.5, lexical_n=0, hops=0)
    assert _ranked_files([SOURCE, SOURCE, SOURCE, SOURCE], p) == [0, 1, 2, 3]
    assert _ranked_files([TEST, DOC, SOURCE, SOURCE], p) == [2, 0, 1, 3]
    assert _ranked_files([TEST, DOC, SOURCE, SOURCE], p.replace(prior_test=1.0, prior_doc=1.0)) == [0, 1, 2, 3]


def test_the_role_prior_changes_nothing_where_no_source_code_is_among_the_candidates():
    p = BASE.replace(prior_test=0.5, prior_doc=0.1, lexical_n=0, hops=0)
    c = make([], [0.9, 0.8, 0.7], dense=[0, 1, 2], file_ids=[0, 1, 2])
    c.file_role = np.asarray([DOC, DOC, TEST], dtype=np.int8)
    plain = make([], [0.9, 0.8, 0.7], dense=[0, 1, 2], file_ids=[0, 1, 2])
    assert np.array_equal(score(c, p).score, score(plain, p).score, equal_nan=True)


PASTE = ("Redirects lose the request body\n\nWhen a server answers 307 the session drops what I posted.\n\n```python\n"
         + "banana mango papaya guava kiwi lychee durian " * 12 + "\n```\n")


def test_query_features_issues_searches_the_prose_not_the_pasted_code(tmp_path, fake_model):
    from ragx.api import Corpus

    (tmp_path / "sessions.py").write_text("def resolve_redirects(response):\n    '''Follow a 307 redirect and keep the request body.'''\n")
    (tmp_path / "fruit.md").write_text("# Fruit\n\n" + "banana mango papaya guava kiwi lychee durian\n" * 3)
    corpus = Corpus.open(tmp_path)
    corpus.index()
    searcher, p = corpus.searcher, corpus.settings.search.replace(dense_n=1, hops=0)
    paths = searcher.store.file_paths()

    def lexical_files(features: str) -> list[str]:
        c = searcher.pass_with_caps(PASTE, p.replace(query_features=features).caps(), expand=False)
        return [paths[int(f)] for f in c.file_ids[np.searchsorted(c.nodes, c.lexical_ids)]]

    assert lexical_files("off")[0] == "fruit.md"        # the pasted snippet's words dominate
    assert lexical_files("issues") == ["sessions.py"]   # the prose names the redirect and the body
    corpus.close()


def test_the_code_that_answers_outranks_the_readme_that_quotes_the_question(tmp_path, fake_model):
    from ragx.api import Corpus

    question = "how are chunk ids kept stable across index runs"
    (tmp_path / "README.md").write_text(f"# Demo\n\nTry it:\n\n    ragx query \"{question}\"\n")
    (tmp_path / "plan.py").write_text("def stable_chunk_ids(old, new):\n"
                                      "    '''Chunk ids are kept across index runs: an unchanged chunk keeps its id.'''\n"
                                      "    return {key: old.get(key, key) for key in new}\n")
    (tmp_path / "test_plan.py").write_text("def test_ids():\n    assert stable_chunk_ids({}, {}) == {}\n")
    Corpus.open(tmp_path).index()

    def first(**priors) -> str:
        settings = Corpus.open(tmp_path).settings
        corpus = Corpus(tmp_path, dataclasses.replace(settings, search=settings.search.replace(**priors)))
        try:
            return corpus.query(question, files_only=True)["results"][0]["file"]
        finally:
            corpus.close()

    assert first() == "plan.py"                                                   # the shipped priors
    assert first(prior_test=1.0, prior_example=1.0, prior_doc=1.0) != "plan.py"   # without them a quote wins
