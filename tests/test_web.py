"""`ragx serve`: the pages in a real browser (Debian's chromium), checked against the JSON the CLI prints."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import call
from fakes import HashEmbedder, make_corpus
from fakes_registration import RAGX_TOML
from web_harness import browser_page, fetch, served

TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(corpus root, base URL): the make_corpus notes indexed with the hash fake and served."""
    import ragx.models.registry as registry
    from ragx.api import Corpus

    root = tmp_path_factory.mktemp("web-corpus")
    make_corpus(root, n_per_topic=6)
    (root / "tagged.md").write_text("---\ntags: [baking]\n---\n# tagged\n\nBread from the oven, with yeast and flour.\n")
    (root / "markup.md").write_text("# markup\n\nA note about <script>window.pwned = 1</script> bread <b>oven</b> & yeast.\n")
    with pytest.MonkeyPatch.context() as mp:
        embedder = HashEmbedder()
        mp.setattr(registry, "make_embedder", lambda *a, **k: embedder)
        corpus = Corpus.open(root)
        corpus.index()
        with served(corpus) as url:
            yield root, url


@pytest.fixture(scope="module")
def page():
    with browser_page() as p:
        yield p


def cli_json(capsys, *args: str) -> dict:
    code, out, err = call(capsys, *args)
    assert code == 0, err
    return json.loads(out)


def shown_results(page) -> list[dict]:
    return page.eval_on_selector_all(".result", "els => els.map(e => ({chunk_id: +e.dataset.chunk, rank: +e.dataset.rank, "
                                                "score: e.dataset.score, file: e.closest('.file-group').dataset.file}))")


def test_search_result_and_explain_show_what_the_json_says(site, page, capsys, fake_model):
    root, url = site
    page.goto(url + "/")
    page.fill("#q", "bread oven")
    page.click("#go")
    page.wait_for_selector("#results")
    doc = cli_json(capsys, "query", "bread oven", "--root", str(root), "--json", "--explain", "--top", "10")
    want = [{"chunk_id": r["chunk_id"], "rank": r["rank"], "score": f"{r['score']:.4f}", "file": r["file"]} for r in doc["results"]]
    shown = shown_results(page)
    assert sorted(shown, key=lambda r: r["rank"]) == want and want
    groups = page.eval_on_selector_all(".file-group", "els => els.map(e => e.dataset.file)")
    assert groups == list(dict.fromkeys(r["file"] for r in doc["results"]))  # files in the order of their best passage
    assert [r["file"] for r in shown] == [f for f in groups for r in doc["results"] if r["file"] == f]
    first = doc["results"][0]
    marks = page.locator(f"#result-{first['chunk_id']} pre.passage mark").all_inner_texts()
    assert marks and {m.lower() for m in marks} <= {"bread", "oven"}
    # explain: closed until clicked, then the seed's legs and ranks from the JSON path
    path = page.locator(f"#result-{first['chunk_id']} ol.path")
    assert not path.is_visible()
    page.click(f"#result-{first['chunk_id']} details.explain summary")
    assert path.is_visible()
    seed = first["path"][0]
    step = path.locator("li.step").first.inner_text()
    assert str(seed["chunk_id"]) in step and f"dense #{seed['dense_rank']}" in step
    dense = page.locator(f"#result-{first['chunk_id']} td[data-signal=dense]").inner_text()
    assert dense == f"{first['breakdown']['dense']:.4f}"
    # the result's file: its chunks as `ragx inspect file` lists them
    page.click(f".file-group[data-file='{first['file']}'] a.file-link")
    assert page.inner_text("#file-name") == first["file"]
    listed = [int(c) for c in page.eval_on_selector_all("tr.chunk", "els => els.map(e => e.dataset.chunk)")]
    inspected = cli_json(capsys, "inspect", "file", first["file"], "--root", str(root), "--json")
    assert listed == [c["chunk_id"] for c in inspected["chunks"]]


def search_filtered(page, url: str, query: str, field: str, value: str) -> None:
    """Search from the page's form with one filter (opened from its fold) filled in."""
    page.goto(url + "/")
    page.fill("#q", query)
    page.click(".filters summary")
    page.fill(field, value)
    page.click("#go")
    page.wait_for_selector("#summary")


def test_path_filter_keeps_only_matching_files(site, page, capsys, fake_model):
    root, url = site
    search_filtered(page, url, "bread oven", "#path", "sailing-*")
    doc = cli_json(capsys, "query", "bread oven", "--root", str(root), "--json", "--path", "sailing-*", "--no-evidence-check")
    files = [r["file"] for r in sorted(shown_results(page), key=lambda r: r["rank"])]
    assert all(f.startswith("sailing-") for f in files)
    if doc["evidence"]["match"]:
        assert files == [r["file"] for r in doc["results"]]
    else:
        assert files == [] and page.is_visible("#evidence")


def test_tag_filter_shows_what_the_json_shows(site, page, capsys, fake_model):
    root, url = site
    search_filtered(page, url, "bread oven", "#tags", "baking")
    doc = cli_json(capsys, "query", "bread oven", "--root", str(root), "--json", "--tag", "baking")
    shown = sorted(shown_results(page), key=lambda r: r["rank"])
    assert [r["file"] for r in shown] == [r["file"] for r in doc["results"]] == ["tagged.md"]


def test_communities_page_lists_labels_sizes_and_members(site, page, capsys):
    root, url = site
    page.goto(url + "/communities")
    doc = cli_json(capsys, "inspect", "communities", "--root", str(root), "--json")
    rows = page.eval_on_selector_all("tr.community", "els => els.map(e => [+e.dataset.community, "
                                                     "e.querySelector('.label').innerText, +e.children[2].innerText])")
    assert rows == [[c["community"], c.get("label") or "", c["chunks"]] for c in doc["communities"]] and rows
    page.click(f"tr.community[data-community='{rows[1][0]}'] a")
    members = page.eval_on_selector_all("tr.member", "els => els.map(e => +e.dataset.chunk)")
    inspected = cli_json(capsys, "inspect", "community", str(rows[1][0]), "--root", str(root), "--json")
    assert members == [c["chunk_id"] for c in inspected["chunks"]] and len(members) == rows[1][2]


def test_a_date_filter_empties_the_page_as_it_empties_the_json(site, page, capsys, fake_model):
    root, url = site
    search_filtered(page, url, "bread oven", "#since", "2999-01-01")
    code, out, _ = call(capsys, "query", "bread oven", "--root", str(root), "--json", "--since", "2999-01-01")
    doc = json.loads(out)
    assert code == 1 and doc["results"] == [] and shown_results(page) == []
    assert doc["time"]["reason"] in page.inner_text("main")


def test_file_text_is_shown_as_text_never_run_as_markup(site, page):
    _, url = site
    page.goto(url + "/?q=script+window+pwned+bread&top=50")
    passage = page.locator(".file-group[data-file='markup.md'] pre.passage").first
    assert "<script>window.pwned = 1</script>" in passage.inner_text()
    assert page.evaluate("window.pwned") is None and page.locator(".file-group[data-file='markup.md'] pre.passage b").count() == 0


def raw_get(url: str, path: str) -> tuple[int, str]:
    """A GET with `path` sent exactly as written (no client-side normalisation of `..`)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, response.read().decode(errors="replace")


@pytest.mark.parametrize("path", ["/static/../../../../etc/passwd", "/static/..%2f..%2f..%2f..%2fetc/passwd",
                                  "/static/%2e%2e/%2e%2e/app.py", "/static/../app.py", "/file?path=../../../../etc/passwd",
                                  "/file?path=/etc/passwd", "/file?path=..%2f..%2fetc%2fpasswd"])
def test_path_traversal_through_the_urls_is_refused(site, path):
    _, url = site
    status, body = raw_get(url, path)
    assert status in (400, 404)
    assert "root:" not in body and "make_app" not in body  # neither /etc/passwd nor the page's own source


def test_a_file_outside_the_corpus_is_refused_with_one_clear_line(site):
    _, url = site
    status, body = fetch(url + "/file?path=../secret.txt")
    assert status == 400 and "is outside the corpus root" in body


def test_bad_form_values_are_a_400_page_not_a_crash(site):
    _, url = site
    assert fetch(url + "/?q=bread&top=abc")[0] == 400
    status, body = fetch(url + "/?q=bread&since=yesterday-ish")
    assert status == 400 and "--since" in body


def test_every_response_says_its_server_time(site):
    _, url = site
    with __import__("urllib.request").request.urlopen(url + "/?q=bread") as response:
        timing = response.headers["Server-Timing"]
    assert timing.startswith("app;dur=") and float(timing.split("=")[1]) > 0


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::"])
def test_a_non_loopback_host_is_refused_without_expose(tmp_path, capsys, host):
    make_corpus(tmp_path, n_per_topic=1)
    code, _, err = call(capsys, "serve", "--root", str(tmp_path), "--host", host, "--port", "0")
    assert code == 2 and "not a loopback address" in err and "--expose" in err


def test_without_the_web_extra_serve_says_what_to_install(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a))
    make_corpus(tmp_path, n_per_topic=1)
    code, _, err = call(capsys, "serve", "--root", str(tmp_path))
    assert code == 2 and "pip install 'ragx[web]'" in err and "uvicorn" in err and len(err.strip().splitlines()) == 1


def test_the_default_binds_loopback_only(tmp_path):
    """`ragx serve` with no --host listens on 127.0.0.1 (the address it says, from the bound socket)."""
    make_corpus(tmp_path, n_per_topic=1)
    (tmp_path / "ragx.toml").write_text(RAGX_TOML)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    start = "import fakes_registration; from ragx.cli.main import run; run({})"
    subprocess.run([sys.executable, "-c", start.format(["index", "--root", str(tmp_path)])], env=env, check=True,
                   capture_output=True, timeout=120)
    proc = subprocess.Popen([sys.executable, "-c", start.format(["serve", "--root", str(tmp_path), "--port", "0"])],
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        assert line.startswith("ragx serve: http://127.0.0.1:"), line
        url = line.split()[2].rstrip("/")
        assert fetch(url + "/communities")[0] == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
