"""`ragx eval snapshots`: repository snapshots replayed in one working folder, evaluated per instance.

The data folder is built here: a small git repository with three commits (a file added, one changed,
one deleted), bundled, and an instances.jsonl naming a tag per commit."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_runner import call

from ragx.errors import UsageError
from ragx.eval.metrics import evaluate
from ragx.eval.snapshots import Checkout, load_instances

FILES_1 = {
    "pkg/http.py": "def send_request(url, timeout):\n    '''Send an HTTP request and wait for the response.'''\n    return url\n",
    "pkg/cookies.py": "def parse_cookie(header):\n    '''Split a Set-Cookie header into name and value.'''\n    return header.split('=')\n",
    "docs/guide.md": "# Guide\n\nHow to install the package and run it.\n",
    "old.py": "def retired():\n    return None\n",
}


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True, env=env).stdout


def _commit(repo: Path, files: dict[str, str | None], tag: str) -> None:
    for path, text in files.items():
        target = repo / path
        if text is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", tag)
    _git(repo, "tag", f"swe/{tag}")


def _instance(iid: str, t: int, query: str, gold: str, split: str) -> str:
    return json.dumps({"instance_id": iid, "repo": "acme/web", "tag": f"refs/tags/swe/{iid}", "base_commit_time": t,
                       "query": query, "gold_files": [gold], "split": split})


@pytest.fixture
def data(tmp_path) -> Path:
    repo = tmp_path / "src"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, FILES_1, "acme__web-1")
    _commit(repo, {"pkg/http.py": FILES_1["pkg/http.py"] + "\ndef retry(times):\n    return times\n"}, "acme__web-2")
    _commit(repo, {"old.py": None, "pkg/session.py": "class Session:\n    '''Keeps cookies between requests.'''\n"}, "acme__web-3")
    out = tmp_path / "data"
    (out / "bundles").mkdir(parents=True)
    _git(repo, "bundle", "create", "-q", str(out / "bundles" / "acme__web.bundle"), "--all")
    lines = [  # listed out of commit order: the replay sorts them
        _instance("acme__web-3", 30, "Session forgets cookies between requests", "pkg/session.py", "test"),
        _instance("acme__web-1", 10, "Traceback: parse_cookie fails on a Set-Cookie header without a value", "pkg/cookies.py", "train"),
        _instance("acme__web-2", 20, "send_request ignores the timeout", "pkg/http.py", "train"),
    ]
    (out / "instances.jsonl").write_text("\n".join(lines) + "\n")
    return out


def test_instances_come_in_commit_order_and_a_split_filters_them(data):
    assert [i.id for i in load_instances(data)["acme/web"]] == ["acme__web-1", "acme__web-2", "acme__web-3"]
    assert [i.id for i in load_instances(data, "train")["acme/web"]] == ["acme__web-1", "acme__web-2"]
    with pytest.raises(UsageError, match="--repo psf/requests"):
        load_instances(data, repos=["psf/requests"])
    with pytest.raises(UsageError, match="one of train, test, all"):
        load_instances(data, "dev")


def test_a_move_writes_only_changed_files_and_deletes_removed_ones(data, tmp_path):
    checkout = Checkout(data / "bundles" / "acme__web.bundle", tmp_path / "work" / "acme__web")
    first = checkout.move_to("refs/tags/swe/acme__web-1")
    assert (first.added, first.modified, first.deleted) == (4, 0, 0)
    folder = checkout.folder
    (folder / ".ragx").mkdir()
    (folder / ".ragx" / "kept").write_text("index")
    kept = folder / "pkg" / "cookies.py"
    before = (kept.stat().st_ino, kept.stat().st_mtime_ns)   # a rewrite makes a new file (git writes anew)
    second = checkout.move_to("refs/tags/swe/acme__web-2")
    assert (second.added, second.modified, second.deleted) == (0, 1, 0)
    assert (kept.stat().st_ino, kept.stat().st_mtime_ns) == before
    assert "def retry" in (folder / "pkg" / "http.py").read_text()
    third = checkout.move_to("refs/tags/swe/acme__web-3")
    assert (third.added, third.modified, third.deleted) == (1, 0, 1)
    assert not (folder / "old.py").exists() and (folder / "pkg" / "session.py").is_file()
    assert (folder / ".ragx" / "kept").read_text() == "index"   # the index beside the tree is never touched


def test_accuracy_at_k_needs_every_relevant_file_within_k():
    qrels = {"one": {"a.py": 1}, "two": {"a.py": 1, "b.py": 1}}
    run = {"one": {"x.py": 3.0, "a.py": 2.0}, "two": {"a.py": 3.0, "x.py": 2.0, "b.py": 1.0}}
    means, per_query = evaluate(qrels, run, "code")
    assert per_query["one"]["Acc@1"] == 0.0 and per_query["one"]["Acc@5"] == 1.0 and per_query["one"]["MRR"] == 0.5
    assert per_query["two"]["Acc@1"] == 0.0 and per_query["two"]["R@5"] == 1.0 and per_query["two"]["Acc@5"] == 1.0
    assert evaluate({"q": {"a.py": 1, "b.py": 1}}, {"q": {"a.py": 2.0, "x.py": 1.0}}, "code")[0]["Acc@10"] == 0.0
    assert means["MRR"] == pytest.approx(0.75)


def test_eval_snapshots_replays_indexes_incrementally_and_pools(data, tmp_path, capsys, fake_model):
    cache = tmp_path / "cache"
    code, out, err = call(capsys, "eval", "snapshots", str(data), "--cache", str(cache), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "ragx.eval-snapshots.v1"
    steps = doc["steps"]["acme/web"]
    assert [s["instance"] for s in steps] == ["acme__web-1", "acme__web-2", "acme__web-3"]
    assert steps[0]["fresh"] and not steps[1]["fresh"]
    assert steps[1]["index"]["changed"] == 1 and steps[1]["index"]["new"] == 0
    assert steps[2]["index"]["new"] == 1 and steps[2]["index"]["deleted"] == 1
    embedded = [s["index"]["embedded_chunks"] for s in steps]
    assert embedded[0] == steps[0]["index"]["chunks"] and 0 < embedded[1] < embedded[0] and 0 < embedded[2] < embedded[0]
    repo = doc["repositories"][0]
    assert repo["n_queries"] == 3 and set(repo["files"]["means"]) >= {"dense", "bm25", "bm25-ref", "hybrid", "default"}
    assert set(repo["metrics"]) == {"Acc@1", "Acc@5", "Acc@10", "R@5", "R@10", "MRR"}
    assert [d["dataset"] for d in doc["pooled"]] == ["pooled train", "pooled test"]
    assert doc["pooled"][0]["n_queries"] == 2 and "default" in doc["pooled"][0]["comparisons"]["configs"]
    assert next(iter(repo["top_files"]["bm25-ref"]["acme__web-1"])) == "pkg/cookies.py"
    again = json.loads(call(capsys, "eval", "snapshots", str(data), "--cache", str(cache), "--json")[1])
    first_again = again["steps"]["acme/web"][0]
    assert not first_again["fresh"]   # the cached working folder is reused; walking back re-embeds nothing
    assert first_again["vectors_from_cache"] == first_again["index"]["embedded_chunks"] > 0
    assert all(s["vectors_from_cache"] == 0 for s in steps)
    assert again["repositories"][0]["files"]["means"] == repo["files"]["means"]


def test_eval_snapshots_refuses_options_of_other_modes(data, capsys):
    code, _, err = call(capsys, "eval", "snapshots", str(data), "--gap")
    assert code == 2 and "--gap applies to" in err
    code, _, err = call(capsys, "eval", "snapshots", str(data / "nowhere"))
    assert code == 2 and "is not a folder" in err
