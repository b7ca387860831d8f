"""`ragx serve`'s runs page in a real browser: two configurations of a saved `ragx eval --json` run,
per-query differences and their paired test checked against the run's own JSON, then one query side by side."""

from __future__ import annotations

import json
import random

import pytest
from fakes import HashEmbedder
from web_harness import browser_page, fetch, served

WORDS = "comet orbit star nebula bread oven yeast flour boat sail keel wind rope knot mast tide".split()


def collection(path):
    """A BEIR folder where dense (hashed words) and BM25 disagree: long and short documents, repeated
    words, two graded relevant documents per query."""
    rng = random.Random(3)
    (path / "qrels").mkdir(parents=True)
    docs = {f"d{i}": " ".join(rng.choice(WORDS) for _ in range(rng.choice((6, 12, 40)))) for i in range(24)}
    queries, qrels = [], []
    for i in range(12):
        words = rng.sample(WORDS, 2)
        queries.append({"_id": f"q{i}", "text": " ".join(words)})
        hits = sorted(docs, key=lambda d: (-sum(docs[d].split().count(w) for w in words), d))
        qrels += [f"q{i}\t{hits[rng.randrange(4)]}\t2", f"q{i}\t{hits[4 + rng.randrange(6)]}\t1"]
    (path / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": k, "title": "", "text": v}) for k, v in docs.items()) + "\n")
    (path / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    (path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(qrels) + "\n")
    return path


@pytest.fixture(scope="module")
def runs_site(tmp_path_factory):
    """(eval document, base URL, the BEIR folder): one saved run of two configurations, served over its own corpus."""
    import ragx.models.registry as registry
    from ragx.api import Corpus

    base = tmp_path_factory.mktemp("web-runs")
    data = collection(base / "data")
    runs = base / "runs"
    runs.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        embedder = HashEmbedder()
        mp.setattr(registry, "make_embedder", lambda *a, **k: embedder)
        doc = _eval(data, base / "cache")
        (runs / "dense-vs-bm25.json").write_text(json.dumps(doc))
        corpus = Corpus.open(doc["datasets"][0]["corpus"])
        queries = sorted((base / "cache").rglob("queries/test.jsonl"))[0]  # the labelled queries `ragx eval beir` materialised
        with served(corpus, runs, queries) as url:
            yield doc, url, data


def _eval(data, cache) -> dict:
    import contextlib
    import io

    from ragx.cli.main import run

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit) as done:
        run(["eval", "beir", str(data), "--split", "test", "--cache", str(cache), "--json",
             "-c", "dense=dense,budget=own", "-c", "bm25=bm25,budget=own", "--reference", "dense"])
    assert done.value.code == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def page():
    with browser_page() as p:
        yield p


def test_runs_page_shows_the_paired_test_and_per_query_differences_of_the_json(runs_site, page):
    doc, url, data = runs_site
    ds = doc["datasets"][0]
    page.goto(url + "/")
    page.click("#nav-runs")
    page.click("#compare")  # A and B default to the run's first and second configuration
    page.wait_for_selector("#stats")
    assert page.input_value("#config-a") == "dense" and page.input_value("#config-b") == "bm25"
    want = ds["comparisons"]["configs"]["bm25"]["nDCG@10"]  # bm25 against the reference dense: B - A
    assert page.inner_text("#diff") == f"{want['diff']:+.4f}"
    assert page.inner_text("#ci") == f"[{want['ci'][0]:+.4f}, {want['ci'][1]:+.4f}]"
    assert page.inner_text("#p") == f"{want['p']:.4f}"
    assert page.inner_text("#wtl") == f"{want['wins']} / {want['ties']} / {want['losses']}"
    per_query = ds["files"]["per_query"]
    diffs = {q: per_query["bm25"][q]["nDCG@10"] - per_query["dense"][q]["nDCG@10"] for q in per_query["dense"]}
    rows = page.eval_on_selector_all("tr.delta", "els => els.map(e => [e.dataset.qid, +e.dataset.diff])")
    assert [q for q, _ in rows] == sorted(diffs, key=lambda q: (-abs(diffs[q]), q))
    assert all(abs(d - diffs[q]) < 1e-4 for q, d in rows)
    assert any(abs(d) > 0 for _, d in rows)  # the collection makes the two configurations disagree


def test_a_query_opens_both_rankings_side_by_side_with_relevance_marks(runs_site, page):
    doc, url, data = runs_site
    per_query = doc["datasets"][0]["files"]["per_query"]
    page.goto(url + "/runs")
    page.click("#compare")
    qid = page.eval_on_selector("tr.delta", "e => e.dataset.qid")  # the query that changed most
    page.click(f"tr.delta[data-qid='{qid}'] a")
    page.wait_for_selector("#side-b")
    queries = {json.loads(line)["_id"]: json.loads(line)["text"] for line in (data / "queries.jsonl").read_text().splitlines()}
    assert page.inner_text("#query-text") == f"{qid}: {queries[qid]}"
    relevant = {line.split("\t")[1]: int(line.split("\t")[2]) for line in (data / "qrels" / "test.tsv").read_text().splitlines()[1:]
                if line.split("\t")[0] == qid}
    for side in ("a", "b"):
        shown = page.eval_on_selector_all(f"#side-{side} li.ranked", "els => els.map(e => [e.dataset.file, +e.dataset.grade, +e.dataset.score])")
        assert shown and all(grade == relevant.get(f.removesuffix(".md"), 0) for f, grade, _ in shown)
        # the live re-run with the run's recorded params ranks as the run did: its nDCG@10 is the JSON's
        config = page.inner_text(f"#side-{side} h2").split(": ", 1)[1]
        # trec_eval orders equal scores by document name, last first
        trec_order = sorted(sorted(shown, key=lambda r: r[0], reverse=True), key=lambda r: -r[2])
        assert ndcg10([g for _, g, _ in trec_order], sorted(relevant.values(), reverse=True)) == pytest.approx(per_query[config][qid]["nDCG@10"], abs=1e-6)
    page.click("#side-b li.ranked details.explain summary")
    assert page.locator("#side-b li.ranked td[data-signal=lexical]").first.is_visible()


def test_a_live_run_of_two_configurations_equals_the_saved_run(runs_site, page):
    """The page evaluates two --config specs itself over the served corpus's labelled queries: the same two
    configurations as the saved run give its very comparison."""
    doc, url, _ = runs_site
    want = doc["datasets"][0]["comparisons"]["configs"]["bm25"]["nDCG@10"]
    page.goto(url + "/runs")
    page.fill("#live-a", "dense,budget=own")
    page.fill("#live-b", "bm25,budget=own")
    page.click("#run-live")
    page.wait_for_selector("#stats")
    assert page.inner_text("#diff") == f"{want['diff']:+.4f}"
    assert page.inner_text("#ci") == f"[{want['ci'][0]:+.4f}, {want['ci'][1]:+.4f}]"
    assert page.inner_text("#wtl") == f"{want['wins']} / {want['ties']} / {want['losses']}"
    page.click("tr.delta a")
    page.wait_for_selector("#side-b")
    assert page.locator("#side-a li.ranked").count() > 0


def ndcg10(grades: list[int], ideal: list[int]) -> float:
    """trec_eval's nDCG@10 (linear gains, log2 discount) of a ranking's relevance grades."""
    import math

    def dcg(gs: list[int]) -> float:
        return sum(g / math.log2(i + 2) for i, g in enumerate(gs[:10]))

    return dcg(grades) / dcg(ideal) if ideal else 0.0


@pytest.mark.parametrize("name", ["../runs/dense-vs-bm25.json", "/etc/passwd", "..%2f..%2fetc%2fpasswd", "missing.json"])
def test_a_run_outside_the_runs_folder_is_refused(runs_site, name):
    _, url, _ = runs_site
    status, body = fetch(f"{url}/runs?a={name}&b={name}")
    assert status == 400 and "no saved run" in body and "root:" not in body
