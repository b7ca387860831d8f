"""QA pass 38: status sees a changed setting, --global marks stale files and says why it lists no
topic, inspect refuses an argument it would ignore, `index PATH` refuses a path it would not index,
NUL bytes and non-UTF-8 corpus paths get one clear line."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from cli_runner import call
from fakes import TOPICS, make_corpus

from ragx.api import Corpus
from ragx.errors import UsageError

pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake


@pytest.fixture
def topics(indexed_topics):
    return indexed_topics


# 1 ---------------------------------------------------------------------------------------------


def test_status_names_a_setting_changed_since_indexing_and_the_full_run_it_needs(tmp_path, capsys):
    (tmp_path / "a.md").write_text("# Alpha\n\nrivers and boats\n")
    (tmp_path / "ragx.toml").write_text("[graph]\nmin_sim = 0.3\n")
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    code, out, _ = call(capsys, "status", "--root", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["notices"] == []

    (tmp_path / "ragx.toml").write_text("[graph]\nmin_sim = 0.35\n")
    code, out, _ = call(capsys, "status", "--root", str(tmp_path), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["consistent"] is True  # the index itself is sound: queries still work
    assert doc["notices"] == ["index was built with graph.min_sim = 0.3, config now says 0.35: "
                              "run `ragx index --full` (or restore the setting)"]
    code, out, _ = call(capsys, "status", "--root", str(tmp_path))
    assert "notice      index was built with graph.min_sim = 0.3" in out
    code, _, err = call(capsys, "index", "--root", str(tmp_path))  # what status warned of
    assert code == 2 and "ragx index --full" in err
    assert call(capsys, "index", "--root", str(tmp_path), "--full")[0] == 0
    assert json.loads(call(capsys, "status", "--root", str(tmp_path), "--json")[1])["notices"] == []


def test_status_notices_every_changed_chunking_setting_through_the_api(tmp_path, capsys):
    (tmp_path / "a.md").write_text("# Alpha\n\nrivers and boats\n")
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    (tmp_path / "ragx.toml").write_text("[chunking]\ntarget_tokens = 150\nmin_tokens = 20\n[graph]\nk = 7\n")
    notices = Corpus.open(tmp_path).status(drift=False)["notices"]
    named = {n.split(" = ")[0].removeprefix("index was built with ") for n in notices}
    assert named == {"chunking.target_tokens", "chunking.min_tokens", "graph.k"}
    assert all(n.endswith("run `ragx index --full` (or restore the setting)") for n in notices)


# 2 ---------------------------------------------------------------------------------------------


def _global(capsys, root: Path, question: str) -> dict:
    code, out, err = call(capsys, "query", "--global", question, "--root", str(root), "--json", "--top", "3")
    assert code == 0, err
    return json.loads(out)


def test_global_query_marks_changed_and_deleted_files_stale(topics, capsys):
    question = "what do my notes say about " + " ".join(TOPICS["astronomy"].split()[:3])
    doc = _global(capsys, topics, question)
    chunks = [ch for c in doc["communities"] for ch in c["chunks"]]
    assert chunks and all(ch["stale"] is False for ch in chunks)
    assert all(c["stale_files"] == [] for c in doc["communities"])

    first = doc["communities"][0]
    changed, deleted = first["chunks"][0]["file"], first["top_files"][0]
    if changed == deleted:
        changed = next(ch["file"] for c in doc["communities"] for ch in c["chunks"] if ch["file"] != deleted)
    path = topics / changed
    path.write_text(path.read_text() + "\nmore words\n")
    later = time.time() + 5
    os.utime(path, (later, later))
    (topics / deleted).unlink()

    doc = _global(capsys, topics, question)
    for c in doc["communities"]:
        for ch in c["chunks"]:
            assert ch["stale"] is (ch["file"] in (changed, deleted)), ch["file"]
        assert c["stale_files"] == [f for f in c["top_files"] if f in (changed, deleted)]
    assert deleted in doc["communities"][0]["stale_files"]
    code, text, _ = call(capsys, "query", "--global", question, "--root", str(topics), "--top", "3")
    assert code == 0
    marked = [line for line in text.splitlines() if "(file changed since indexed)" in line]
    assert marked and all(changed in line or deleted in line for line in marked)


# 3 ---------------------------------------------------------------------------------------------


def test_inspect_communities_refuses_an_argument_it_would_ignore(topics, capsys):
    code, out, err = call(capsys, "inspect", "communities", "extra", "--root", str(topics))
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "`ragx inspect communities` takes no argument, got 'extra'" in err
    with pytest.raises(UsageError, match="takes no argument, got 'junk'"):
        Corpus.open(topics).inspect("communities", "junk")
    assert Corpus.open(topics).inspect("communities", None)["communities"]  # none given: as before


@pytest.mark.parametrize("arg", ["x\udcff.md", "cats \ud83d"])  # a shell byte that is not UTF-8; half an emoji
def test_inspect_refuses_an_argument_that_is_not_utf8_in_one_line(topics, capsys, arg):
    code, out, err = call(capsys, "inspect", "file", arg, "--root", str(topics))
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "the argument of `ragx inspect file` is not valid UTF-8" in err
    with pytest.raises(UsageError, match="not valid UTF-8"):
        Corpus.open(topics).inspect("file", arg)


# 4 ---------------------------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path, capsys):
    (tmp_path / "a.md").write_text("# Alpha\n\nrivers and boats\n")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (tmp_path / "pictures").mkdir()
    (tmp_path / "pictures" / "b.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (tmp_path / "data.bin").write_bytes(b"abc\0def")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "c.md").write_text("a dependency's readme\n")
    (tmp_path / ".gitignore").write_text("ignored.md\n")
    (tmp_path / "ignored.md").write_text("left out\n")
    (tmp_path / "ragx.toml").write_text("")
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    return tmp_path


@pytest.mark.parametrize("path, why", [
    ("image.png", "not a file type ragx indexes"),
    ("data.bin", "not a file type ragx indexes"),
    ("ignored.md", ".gitignore"),
    ("ragx.toml", "the corpus's ragx settings"),
    (".ragx/index.sqlite", "ragx's own index folder"),
    (".ragx", "ragx's own index folder"),
    (".gitignore", "dot-files"),
    ("node_modules/c.md", "node_modules"),
    ("pictures", "no file below it is indexed"),
])
def test_index_refuses_a_path_the_corpus_does_not_index(small, path, why):
    corpus = Corpus.open(small)
    with pytest.raises(UsageError) as info:
        corpus.index(path=path)
    message = str(info.value)
    assert message.startswith(f"{path} is not indexed by this corpus: ") and why in message
    assert len(message.splitlines()) == 1


def test_index_of_a_binary_with_an_indexed_extension_says_why(small):
    (small / "blob.md").write_bytes(b"\0\1\2 binary")
    with pytest.raises(UsageError, match="blob.md is not indexed by this corpus: binary"):
        Corpus.open(small).index(path="blob.md")


def test_index_path_still_indexes_new_and_indexed_files_and_refuses_missing_ones(small):
    corpus = Corpus.open(small)
    (small / "new.md").write_text("# New\n\nharbour and tide\n")
    assert corpus.index(path="new.md").new == 1
    (small / "notes").mkdir()
    (small / "notes" / "d.md").write_text("keel and mast\n")
    assert corpus.index(path="notes").new == 1
    assert corpus.index(path="a.md").unchanged >= 1
    (small / "new.md").unlink()
    assert corpus.index(path="new.md").deleted == 1  # indexed, now gone: still refreshed
    with pytest.raises(UsageError, match="nothing.md does not exist in the corpus and was not indexed"):
        corpus.index(path="nothing.md")
    assert corpus.index(path=".").unchanged >= 1


# 5 ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["\x00", "notes/\x00a.md"])
def test_a_nul_byte_in_a_path_is_refused_as_such_and_shown_escaped(small, path):
    corpus = Corpus.open(small)
    for attempt in (lambda: corpus.relative(path), lambda: corpus.inspect("file", path), lambda: corpus.index(path=path)):
        with pytest.raises(UsageError) as info:
            attempt()
        message = str(info.value)
        assert message.startswith("path contains a NUL byte: ") and "\\x00" in message and "\0" not in message


def test_a_path_outside_the_root_is_shown_with_its_control_characters_escaped(small):
    with pytest.raises(UsageError) as info:
        Corpus.open(small).relative("../x\x1b[31m")
    assert "\x1b" not in str(info.value) and "\\x1b" in str(info.value) and "is outside the corpus root" in str(info.value)


# 6 ---------------------------------------------------------------------------------------------


def test_global_query_without_communities_says_why_and_what_would_change_it(tmp_path, capsys):
    make_corpus(tmp_path, n_per_topic=2)
    (tmp_path / "ragx.toml").write_text("[graph]\nmin_sim = 0.999\n")
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    code, out, _ = call(capsys, "query", "--global", "telescope orbit", "--root", str(tmp_path), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["communities"] == []
    assert doc["reason"] == ("no chunk pair is similar enough to form communities at graph.min_sim = 0.999: lower "
                             "graph.min_sim and run `ragx index --full`, or search without --global")
    code, out, _ = call(capsys, "query", "--global", "telescope orbit", "--root", str(tmp_path))
    assert code == 1 and "no communities (no chunk pair is similar enough" in out
    assert "no edges yet" not in out


# 7 ---------------------------------------------------------------------------------------------


def test_a_corpus_under_a_folder_name_that_is_not_utf8_is_refused_before_anything_is_written(tmp_path, capsys):
    root = tmp_path / os.fsdecode(b"bad\xffroot")
    try:
        root.mkdir()
    except (OSError, UnicodeEncodeError):  # a file system that insists on UTF-8 names
        pytest.skip("this file system refuses names that are not UTF-8")
    (root / "a.md").write_text("# Alpha\n\nrivers and boats\n")
    code, out, err = call(capsys, "index", "--root", str(root))
    assert code == 2 and len(err.strip().splitlines()) == 2  # "indexing ..." then the one error line
    assert "the corpus path is not valid UTF-8: " in err and "bad\\xffroot" in err and "internal error" not in err
    assert not (root / ".ragx").exists()
    with pytest.raises(UsageError, match="not valid UTF-8"):
        Corpus.open(root).index()
