"""Edits that keep a file's size and mtime (`cp -p`, `touch -r`, `rsync -t`, tar extraction): found by
the inode change time against the last run's recorded scan start (ragx/index/diff.py).

ctime cannot be set back, so nothing here sleeps: a file rewritten after an index run has a ctime past
that run's recorded start (less the 2 s margin, past the start itself). Where a test needs a run that
began long after an edit, the run's clock is moved forward instead (`scan_start_ns` patched).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from cli_runner import call
from fakes import HashEmbedder, make_corpus

import ragx.index.build as build
import ragx.index.diff as diff_module
from ragx.api import Corpus
from ragx.config import load_settings
from ragx.index.build import run_index
from ragx.index.store import SCAN_MARGIN_NS
from ragx.ingest.discover import discover

pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake

EDITED = "cooking-0.md"
NEW_WORDS = "zeppelin dirigible hangar"


@pytest.fixture
def corpus(tmp_path):
    make_corpus(tmp_path)
    index(tmp_path)
    return tmp_path


def index(root: Path, **kwargs):
    return run_index(root, load_settings(root), HashEmbedder(), **kwargs)


def rewrite_keeping_stat(path: Path, words: str = NEW_WORDS) -> bytes:
    """Other bytes of the same size, the mtime put back: invisible to size and mtime."""
    st, old = path.stat(), path.read_bytes()
    text = f"# rewritten\n\n{(words + ' ') * (st.st_size // len(words) + 1)}".encode()[: st.st_size - 1] + b"\n"
    path.write_bytes(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns) and text != old
    return text


def manifest_value(root: Path, key: str):
    db = sqlite3.connect(root / ".ragx" / "index.sqlite")
    try:
        row = db.execute("SELECT value FROM manifest WHERE key = ?", (key,)).fetchone()
    finally:
        db.close()
    return json.loads(row[0]) if row else None


def results_of(root: Path, text: str) -> list[dict]:
    corpus = Corpus(root)
    try:
        return corpus.query(text, top=1000)["results"]
    finally:
        corpus.close()


def test_a_run_records_when_its_scan_began(tmp_path):
    make_corpus(tmp_path)
    before = time.time_ns()
    index(tmp_path)
    after = time.time_ns()
    recorded = manifest_value(tmp_path, "scan_started_ns")
    assert isinstance(recorded, int) and before <= recorded <= after


def test_a_same_size_edit_that_keeps_the_mtime_is_stale_drift_and_reindexed(corpus):
    old_text = (corpus / EDITED).read_text()
    new_text = rewrite_keeping_stat(corpus / EDITED).decode()

    # before the next run: the query's results of that file say stale, the others do not
    results = results_of(corpus, "flour butter oven bake bread")
    stale = {r["file"]: r["stale"] for r in results}
    assert stale[EDITED] is True
    assert not any(flag for path, flag in stale.items() if path != EDITED)
    status = Corpus(corpus).status()
    assert status["drift"] == {"new": 0, "changed": 1, "deleted": 0, "unreadable": 0}
    assert status["drifted"]["changed"] == [EDITED]

    report = index(corpus)
    assert (report.new, report.changed, report.deleted, report.unchanged) == (0, 1, 0, 18)
    assert Corpus(corpus).status()["drift"]["changed"] == 0
    top = results_of(corpus, NEW_WORDS)
    assert top[0]["file"] == EDITED and top[0]["stale"] is False
    assert top[0]["text"] in new_text and top[0]["text"] not in old_text
    for r in results_of(corpus, "flour butter oven bake bread"):  # the old words: never the old chunks
        assert r["file"] != EDITED or (r["text"] in new_text and r["stale"] is False)
    assert index(corpus).changed == 0  # found once


def test_a_chmod_alone_is_not_a_change_and_the_next_run_stops_reading_it(corpus, monkeypatch):
    os.chmod(corpus / EDITED, 0o600)  # the ctime moves, the bytes stay
    status = Corpus(corpus).status()
    assert status["drift"] == {"new": 0, "changed": 0, "deleted": 0, "unreadable": 0}
    assert all(r["stale"] is False for r in results_of(corpus, "flour butter oven bake bread"))
    generation = manifest_value(corpus, "generation")

    # A run that began well after the chmod: it reads the file once, finds the same bytes, writes no
    # generation, and records its start, so later runs trust size and mtime again.
    later = time.time_ns() + 10 * SCAN_MARGIN_NS
    monkeypatch.setattr(build, "scan_start_ns", lambda: later)
    read: list[str] = []
    real_compare = diff_module._compare_content
    monkeypatch.setattr(diff_module, "_compare_content", lambda f, row, out: (read.append(f.path), real_compare(f, row, out)))
    report = index(corpus)
    assert (report.changed, report.unchanged) == (0, 19) and EDITED in read
    assert manifest_value(corpus, "generation") == generation and manifest_value(corpus, "scan_started_ns") == later
    read.clear()
    assert index(corpus).changed == 0 and read == []


def test_a_run_limited_to_a_path_keeps_the_older_start(corpus, monkeypatch):
    """`ragx index PATH` leaves the other files as indexed: recording its own (later) start would hide
    an edit elsewhere, made before it, from every later run."""
    recorded = manifest_value(corpus, "scan_started_ns")
    rewrite_keeping_stat(corpus / EDITED)
    monkeypatch.setattr(build, "scan_start_ns", lambda: time.time_ns() + 10 * SCAN_MARGIN_NS)
    assert index(corpus, only="sailing-1.md").changed == 0
    assert manifest_value(corpus, "scan_started_ns") == recorded
    report = index(corpus)
    assert report.changed == 1 and report.embedded_files == [EDITED]


def forget_scan_start(root: Path) -> None:
    """As an index from before scan starts were recorded."""
    db = sqlite3.connect(root / ".ragx" / "index.sqlite")
    with db:
        db.execute("DELETE FROM manifest WHERE key = 'scan_started_ns'")
    db.close()


def test_the_first_run_to_record_a_start_confirms_every_file_by_content(corpus, monkeypatch):
    """Its start promises every file was read or confirmed after it: an edit made before it, keeping
    size and mtime, would otherwise never be seen (its ctime is older than every later start)."""
    forget_scan_start(corpus)
    rewrite_keeping_stat(corpus / EDITED)
    assert Corpus(corpus).status()["drift"]["changed"] == 0  # status and queries: size and mtime alone
    assert all(r["stale"] is False for r in results_of(corpus, "flour butter oven bake bread"))
    report = index(corpus)
    assert report.changed == 1 and report.embedded_files == [EDITED] and report.unchanged == 18
    assert isinstance(manifest_value(corpus, "scan_started_ns"), int)  # the first, from this run on
    assert results_of(corpus, NEW_WORDS)[0]["file"] == EDITED
    rewrite_keeping_stat(corpus / EDITED, "airship balloon gondola")
    assert index(corpus).changed == 1


def test_a_run_limited_to_a_path_on_an_index_without_a_start_reads_only_what_it_must(corpus, monkeypatch):
    forget_scan_start(corpus)
    read: list[str] = []
    real_compare = diff_module._compare_content
    monkeypatch.setattr(diff_module, "_compare_content", lambda f, row, out: (read.append(f.path), real_compare(f, row, out)))
    assert index(corpus, only="sailing-1.md").changed == 0
    assert read == [] and manifest_value(corpus, "scan_started_ns") is None  # no start: nothing promised


def test_a_touched_file_is_read_once_not_by_every_later_run(corpus, monkeypatch):
    """A `touch` (new mtime, same bytes) rewrites the file's row; its new ctime is past the recorded
    start, so unless the run records its own, every later run would read it again."""
    # A recorded start after every file's ctime (less the margin), as after a run long after the writes.
    newest = max(p.stat().st_ctime_ns for p in corpus.iterdir() if p.is_file())
    db = sqlite3.connect(corpus / ".ragx" / "index.sqlite")
    with db:
        db.execute("UPDATE manifest SET value = ? WHERE key = 'scan_started_ns'", (json.dumps(newest + SCAN_MARGIN_NS + 1),))
    db.close()
    st = (corpus / EDITED).stat()
    os.utime(corpus / EDITED, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # its ctime: after that start
    monkeypatch.setattr(build, "scan_start_ns", lambda: time.time_ns() + 10 * SCAN_MARGIN_NS)
    read: list[str] = []
    real_compare = diff_module._compare_content
    monkeypatch.setattr(diff_module, "_compare_content", lambda f, row, out: (read.append(f.path), real_compare(f, row, out)))
    report = index(corpus)
    assert (report.changed, report.unchanged) == (0, 19) and read == [EDITED]
    read.clear()
    assert index(corpus).changed == 0 and read == []


def test_a_file_once_not_utf8_rewritten_keeping_its_stat_is_read_again(corpus, monkeypatch):
    """Such a file has no hash: it is read again when its ctime is past the start itself (no margin).
    The run here is dated 2 s early, so the rewrite below is past it whatever the clock's tick."""
    bad = corpus / "latin.md"
    bad.write_bytes("# caf\xe9 na\xefve\n\nsome text\n".encode("latin-1"))
    with monkeypatch.context() as early:
        early.setattr(build, "scan_start_ns", lambda: time.time_ns() - SCAN_MARGIN_NS)
        report = index(corpus)
    assert report.problems == [{"path": "latin.md", "reason": "not valid UTF-8"}]  # remembered as not UTF-8
    st = bad.stat()
    good = b"# cafe naive\n\nsome text\n"[: st.st_size].ljust(st.st_size, b"\n")
    bad.write_bytes(good)
    os.utime(bad, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert Corpus(corpus).status()["drift"]["new"] == 1
    report = index(corpus)
    assert report.new == 1 and report.problems == []
    assert "latin.md" in {r["file"] for r in results_of(corpus, "cafe naive")}


def test_a_chmod_on_a_file_once_not_utf8_keeps_it_skipped(corpus, monkeypatch):
    """No hash to compare, so it is decoded again: still not UTF-8, it is no new file, to status or to
    the run, and the next run does not look at it again."""
    bad = corpus / "latin.md"
    bad.write_bytes("# caf\xe9 na\xefve\n\nsome text\n".encode("latin-1"))
    with monkeypatch.context() as early:
        early.setattr(build, "scan_start_ns", lambda: time.time_ns() - SCAN_MARGIN_NS)
        index(corpus)
    os.chmod(bad, 0o600)
    status = Corpus(corpus).status()
    assert status["drift"]["new"] == 0
    report = index(corpus)
    assert (report.new, report.changed) == (0, 0) and report.problems == []
    assert {"path": "latin.md", "reason": "not valid UTF-8"} in Corpus(corpus).status()["not_indexed"]["skipped"]
    generation = manifest_value(corpus, "generation")
    decoded: list[str] = []
    real = diff_module.read_text
    monkeypatch.setattr(diff_module, "read_text", lambda p: (decoded.append(str(p)), real(p))[1])
    assert index(corpus).new == 0 and decoded == []
    assert manifest_value(corpus, "generation") == generation


def test_discovery_sniffs_a_known_file_again_when_its_inode_changed_since(tmp_path):
    note = tmp_path / "note.md"
    note.write_text("plain text\n")
    st = note.stat()
    note.write_bytes(b"plain\0text\n")  # binary now, same size
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))
    known = {"note.md": (st.st_size, st.st_mtime_ns)}
    assert [f.path for f in discover(tmp_path, known=known).files] == ["note.md"]  # trusted: not sniffed
    found = discover(tmp_path, known=known, known_until_ns=time.time_ns() - SCAN_MARGIN_NS)
    assert found.files == [] and [p.path for p in found.skipped] == ["note.md"]
    assert discover(tmp_path, known=known, known_until_ns=note.stat().st_ctime_ns + 1).files[0].ctime_ns == note.stat().st_ctime_ns


def test_an_import_finds_a_same_size_edit_and_the_next_run_too(tmp_path, capsys, monkeypatch):
    origin, copy = tmp_path / "origin", tmp_path / "copy"
    origin.mkdir()
    make_corpus(origin)
    index(origin)
    archive = tmp_path / "index.tar.gz"
    assert call(capsys, "export", str(archive), "--root", str(origin))[0] == 0
    shutil.copytree(origin, copy, ignore=shutil.ignore_patterns(".ragx"))  # copy2: mtimes kept to the ns
    assert all((copy / name).stat().st_mtime_ns == (origin / name).stat().st_mtime_ns for name in ("notes.txt", EDITED))
    rewrite_keeping_stat(copy / EDITED)

    # An import that began long after the edit still names it, and leaves the next run a start no later
    # than the edit's ctime.
    with monkeypatch.context() as later:
        later.setattr(diff_module, "scan_start_ns", lambda: time.time_ns() + 10 * SCAN_MARGIN_NS)
        code, out, err = call(capsys, "import", str(archive), "--root", str(copy), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["differs"] == {"new": [], "changed": [EDITED], "deleted": []} and doc["same"] == 18
    assert manifest_value(copy, "scan_started_ns") <= (copy / EDITED).stat().st_ctime_ns
    report = index(copy)
    assert report.changed == 1 and report.embedded_files == [EDITED]
    assert results_of(copy, NEW_WORDS)[0]["file"] == EDITED


def test_an_import_compares_by_content_whatever_the_exporters_clock(tmp_path, capsys, monkeypatch):
    """The copy here was made, then edited keeping size and mtime, all before the exporter's scan began
    (here: well before, or a clock ahead): its ctime is older than the exporter's recorded start, and
    still it holds other bytes."""
    origin, copy = tmp_path / "origin", tmp_path / "copy"
    origin.mkdir()
    make_corpus(origin)
    shutil.copytree(origin, copy)  # copy2: mtimes kept to the ns
    rewrite_keeping_stat(copy / EDITED)
    with monkeypatch.context() as later:
        later.setattr(build, "scan_start_ns", lambda: time.time_ns() + 10 * SCAN_MARGIN_NS)
        index(origin)
    assert manifest_value(origin, "scan_started_ns") - SCAN_MARGIN_NS > (copy / EDITED).stat().st_ctime_ns
    archive = tmp_path / "index.tar.gz"
    assert call(capsys, "export", str(archive), "--root", str(origin))[0] == 0
    code, out, err = call(capsys, "import", str(archive), "--root", str(copy), "--json")
    assert code == 0, err
    assert json.loads(out)["differs"]["changed"] == [EDITED]
    report = index(copy)
    assert report.changed == 1 and report.embedded_files == [EDITED]


def test_the_mcp_server_sees_a_settings_edit_that_keeps_size_and_mtime(tmp_path):
    from ragx.mcp.service import _stamp

    toml = tmp_path / "ragx.toml"
    toml.write_text("[search]\ntop = 5\n")
    before = _stamp(toml)
    rewrite_keeping_stat(toml, "x")
    assert _stamp(toml) != before
