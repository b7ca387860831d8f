"""`ragx watch`'s change feed (ragx/index/feed.py, watcher.py): an index run that looks only at the paths
the watcher heard must leave the index exactly as a walk of every file would, and must walk every
file whenever the feed cannot be trusted."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fakes import HashEmbedder, make_corpus

from ragx.config import load_settings
from ragx.errors import UsageError
from ragx.index.build import run_index
from ragx.index.diff import diff_corpus
from ragx.index.feed import Focus, feed_dir, focus_of, hear
from ragx.index.layout import Layout
from ragx.index.store import Store
from ragx.index.watcher import Watcher, watch

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="inotify is Linux's")


class Running:
    """A watcher in a thread of this process, as `ragx watch --no-index` runs it."""

    def __init__(self, root: Path):
        self.root, self.lines, self.done = root, [], threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not (feed_dir(root / ".ragx") / "watcher.json").exists():
            assert time.monotonic() < deadline and self.error is None, self.error
            time.sleep(0.01)

    def _run(self):
        try:
            watch(self.root, self.root / ".ragx", self.lines.append, stop=self.done.is_set)
        except BaseException as exc:  # noqa: BLE001 - shown by the test that waits for it
            self.error = exc

    def stop(self):
        self.done.set()
        self.thread.join(10)


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "c"
    (root / "a" / "deep").mkdir(parents=True)
    (root / "b").mkdir()
    make_corpus(root)
    for i in range(4):
        (root / "a" / f"a{i}.md").write_text(f"# a {i}\n\nbread oven flour {i} words of the a folder\n")
        (root / "a" / "deep" / f"d{i}.md").write_text(f"# d {i}\n\nriver boat sail {i} words deep down\n")
        (root / "b" / f"b{i}.md").write_text(f"# b {i}\n\nstars comet orbit {i} words of folder b\n")
    return root


@pytest.fixture
def watched(corpus):
    run_index(corpus, load_settings(corpus), HashEmbedder())
    running = Running(corpus)
    yield corpus, running
    running.stop()


def index(root: Path):
    return run_index(root, load_settings(root), HashEmbedder())


def drift(root: Path) -> dict[str, int]:
    """What a walk of every file finds against the index: all zero when the index is current."""
    store = Store(Layout(root).db)
    try:
        manifest = store.manifest()
        diff = diff_corpus(root, load_settings(root), store.files(rows_on_demand=True), store.undecodable(),
                           manifest.get("scan_started_ns"))
        undecodable = store.undecodable()
    finally:
        store.close()
    counts = diff.counts()
    del counts["unchanged"]
    counts["undecodable rows"] = len(set(undecodable) ^ {f.path for f in diff.undecodable})
    return counts


ZERO = {"new": 0, "changed": 0, "deleted": 0, "undecodable rows": 0}


def test_a_watched_edit_is_found_by_looking_at_its_folder_alone(watched):
    root, _ = watched
    first = index(root)
    assert first.scan_kind == "walk" and "first run" in first.scan_note  # no cursor yet: every file once
    with open(root / "a" / "deep" / "d1.md", "a") as fh:
        fh.write("\nmore words about the river\n")
    report = index(root)
    assert report.scan_kind == "feed", report.scan_note
    assert (report.new, report.changed, report.deleted) == (0, 1, 0)
    assert report.unchanged == first.files - 1
    assert drift(root) == ZERO
    quiet = index(root)  # nothing changed since: nothing looked at, nothing to do
    assert quiet.scan_kind == "feed" and (quiet.new, quiet.changed, quiet.deleted) == (0, 0, 0)


def _random_step(root: Path, rng: random.Random, step: int) -> None:
    folders = sorted({p.parent for p in root.rglob("*.md") if ".ragx" not in p.parts} | {root})
    files = sorted(p for p in root.rglob("*.md") if ".ragx" not in p.parts)
    kind = rng.choice(["new", "edit", "same-size", "delete", "rename", "move-folder", "new-folder", "drop-folder",
                       "ignore", "unignore", "binary", "not-utf8"])
    if kind == "new" or not files:
        (rng.choice(folders) / f"n{step}.md").write_text(f"# new {step}\n\nfresh words {step} about bread and rivers\n")
    elif kind == "edit":
        with open(rng.choice(files), "a") as fh:
            fh.write(f"\nan edit {step} about comets\n")
    elif kind == "same-size":  # same size, mtime put back: only the inode's change time tells
        victim = rng.choice(files)
        st = victim.stat()
        data = bytearray(victim.read_bytes())
        data[-2] = ord("x") if data[-2] != ord("x") else ord("y")
        victim.write_bytes(bytes(data))
        os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif kind == "delete":
        rng.choice(files).unlink()
    elif kind == "rename":
        victim = rng.choice(files)
        victim.rename(rng.choice(folders) / f"r{step}-{victim.name}")
    elif kind == "move-folder":
        subs = [f for f in folders if f != root]
        if subs:
            victim = rng.choice(subs)
            if victim.exists():
                victim.rename(root / f"m{step}")
    elif kind == "new-folder":  # made and filled at once: before the watcher can watch it
        fresh = rng.choice(folders) / f"f{step}" / "inner"
        fresh.mkdir(parents=True)
        for i in range(3):
            (fresh / f"x{i}.md").write_text(f"# x {i}\n\nwords {step} {i} in a new folder\n")
    elif kind == "drop-folder":
        subs = [f for f in folders if f != root]
        if subs:
            shutil.rmtree(rng.choice(subs), ignore_errors=True)
    elif kind == "ignore":
        subs = [f for f in folders if f != root]
        if subs:
            victim = rng.choice(subs)
            with open(victim.parent / ".gitignore", "a") as fh:
                fh.write(f"{victim.name}/\n")
    elif kind == "unignore":
        for ignore in root.rglob(".gitignore"):
            if ".ragx" not in ignore.parts:
                ignore.unlink()
    elif kind == "binary":
        (rng.choice(folders) / f"bin{step}.md").write_bytes(b"\0\1\2binary")
    else:
        (rng.choice(folders) / f"latin{step}.md").write_bytes("caf\xe9 au lait".encode("latin-1"))


def test_feed_runs_leave_the_index_as_a_full_walk_would(watched):
    """Random edits, moves, deletions, new and dropped folders, ignore rules, undecodable files: after
    every run that used the feed, a walk of every file finds nothing left to do."""
    root, _ = watched
    index(root)
    rng = random.Random(11)
    kinds = []
    for step in range(60):
        for _ in range(rng.randint(1, 3)):
            _random_step(root, rng, step)
        report = index(root)
        kinds.append(report.scan_kind)
        assert drift(root) == ZERO, f"step {step}: {report.scan_kind}, {report.scan_note}"
    assert kinds.count("feed") == len(kinds), kinds


def test_no_watcher_or_a_stopped_one_means_a_walk_of_every_file(watched):
    root, running = watched
    index(root)
    running.stop()
    with open(root / "b" / "b1.md", "a") as fh:
        fh.write("\nan edit while nobody listened\n")
    report = index(root)
    assert report.scan_kind == "walk" and report.changed == 1
    assert drift(root) == ZERO
    again = Running(root)  # a new session: its first run walks, the next ones trust it
    try:
        assert "restarted" in index(root).scan_note
        (root / "b" / "b9.md").write_text("# b9\n\nnew words\n")
        assert index(root).scan_kind == "feed"
    finally:
        again.stop()


def test_a_restarted_session_is_not_trusted_with_the_old_cursor(watched):
    root, running = watched
    index(root)
    running.stop()
    again = Running(root)
    try:
        (root / "a" / "a9.md").write_text("# a9\n\nwritten between the sessions\n")
        report = index(root)
        assert report.scan_kind == "walk" and "restarted" in (report.scan_note or "")
        assert report.new == 1
    finally:
        again.stop()


def test_an_overflowed_queue_ends_the_session(corpus):
    """A kernel queue overflow loses events: the session ends, the next run walks every file."""
    index(corpus)
    watcher = Watcher(corpus, corpus / ".ragx")
    watcher.claim()
    try:
        watcher.start()
        session = watcher.session
        overflow = type("Event", (), {"wd": -1, "mask": watcher._in.flags.Q_OVERFLOW, "cookie": 0, "name": ""})()
        watcher.inotify.read = lambda timeout=None: [overflow]
        watcher.read(0)
        assert watcher.session != session and not watcher.untracked
    finally:
        watcher.close()


def test_changed_walk_rules_and_symlinks_mean_a_walk(watched, tmp_path):
    root, _ = watched
    index(root)
    (root / "ragx.toml").write_text('[index]\nexclude = ["b/"]\n')
    report = index(root)
    assert report.scan_kind == "walk" and "rules changed" in report.scan_note and report.deleted == 4
    assert drift(root) == ZERO
    (root / "link.md").symlink_to(root / "a" / "a1.md")
    report = index(root)
    assert report.scan_kind == "walk" and "symbolic links" in report.scan_note
    index(root)
    report = index(root)  # recorded: every later run walks too, and says why
    assert report.scan_kind == "walk" and "symbolic links" in report.scan_note
    assert drift(root) == ZERO


def test_hard_linked_files_mean_a_walk(watched):
    root, _ = watched
    index(root)
    os.link(root / "a" / "a1.md", root / "b" / "same.md")
    report = index(root)
    assert report.scan_kind == "walk" and "hard-linked" in report.scan_note
    with open(root / "a" / "a1.md", "a") as fh:  # heard as a/a1.md only: b/same.md changed as well
        fh.write("\nboth names change\n")
    report = index(root)
    assert report.scan_kind == "walk" and report.changed == 2
    assert drift(root) == ZERO


def test_a_silent_watcher_is_waited_for_briefly_then_walked_past(corpus):
    index(corpus)
    proc = subprocess.Popen([sys.executable, "-m", "ragx.cli.main", "watch", "--no-index", "--root", str(corpus)],
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (feed_dir(corpus / ".ragx") / "watcher.json").exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(19)  # SIGSTOP: alive, holding the lock, answering nothing
        started = time.monotonic()
        report = index(corpus)
        assert report.scan_kind == "walk" and "did not answer" in report.scan_note
        assert time.monotonic() - started < 10
    finally:
        proc.send_signal(18)
        proc.terminate()
        proc.wait(10)


def test_one_watcher_per_corpus(watched):
    root, _ = watched
    with pytest.raises(UsageError, match="already watching"):
        Watcher(root, root / ".ragx").claim()


def test_the_cli_keeps_the_index_current(tmp_path):
    """`ragx watch` (with its index runs, the embedded model) indexes the corpus at once, then picks up
    an edit without anyone running `ragx index`."""
    corpus = tmp_path / "small"
    (corpus / "b").mkdir(parents=True)
    (corpus / "b" / "horse.md").write_text("# horse\n\nhorses run in the field\n")
    proc = subprocess.Popen([sys.executable, "-m", "ragx.cli.main", "watch", "--settle", "0.2", "--root", str(corpus)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        db = corpus / ".ragx" / "index.sqlite"
        deadline = time.monotonic() + 120
        while not db.exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        (corpus / "b" / "zebra.md").write_text("# zebra\n\nzebras graze on the savanna\n")
        while True:
            store = Store(db, readonly=True)
            try:
                if "b/zebra.md" in store.files():
                    break
            except Exception:  # noqa: BLE001 - the first run may still be writing its first generation
                pass
            finally:
                store.close()
            assert time.monotonic() < deadline and proc.poll() is None, "the edit was never indexed"
            time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(20)


def test_focus_of_the_records():
    records = [(b"f", "a/x.md"), (b"d", "a/new"), (b"f", "a/new/y.md"), (b"f", "top.md"), (b"f", "b/.gitignore"),
               (b"f", "b/c/z.md"), (b"d", "a-b")]
    assert focus_of(records) == Focus(deep=("a-b", "a/new", "b"), shallow=("", "a"))
    assert focus_of([(b"d", ""), (b"f", "x")]) == Focus(("",), ())
    assert focus_of([]).empty


def test_no_watcher_no_question(corpus):
    index(corpus)
    heard = hear(corpus / ".ragx", {}, "rules")
    assert heard.answer is None and heard.focus is None and heard.why_not is None


def test_the_index_folder_removed_under_the_watcher(watched):
    """`rm -rf .ragx` while watching: the watcher takes the new folder's lock and starts a new session;
    the next index (a first one again) walks, the one after reads the feed."""
    root, running = watched
    shutil.rmtree(root / ".ragx")
    deadline = time.monotonic() + 10
    while not (feed_dir(root / ".ragx") / "watcher.json").exists():
        assert time.monotonic() < deadline and running.error is None, running.error
        time.sleep(0.02)
    assert index(root).scan_kind == "walk"
    (root / "b" / "again.md").write_text("# again\n\nwords after the index was removed\n")
    assert index(root).scan_kind == "feed"
    assert drift(root) == ZERO


def test_changes_made_while_runs_read_the_feed_are_caught_by_the_next_run(watched):
    """A writer keeps changing the corpus while index runs read the feed: whatever a run missed (written
    after its barrier, or while it listed a folder), the next one finds. Once the writer stops, one more
    run leaves nothing for a walk of every file to find."""
    root, _ = watched
    index(root)
    stop, errors = threading.Event(), []

    def writer():
        rng, step = random.Random(5), 1000
        while not stop.is_set():
            try:
                _random_step(root, rng, step)
            except OSError:  # a folder another step of this writer just moved or dropped
                pass
            except Exception as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
            step += 1
            time.sleep(rng.random() * 0.01)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        kinds = [index(root).scan_kind for _ in range(15)]
    finally:
        stop.set()
        thread.join(10)
    assert not errors, errors
    assert kinds.count("feed") == len(kinds), kinds
    assert index(root).scan_kind == "feed"
    assert drift(root) == ZERO


def test_an_imported_index_carries_no_cursor(watched, tmp_path, monkeypatch):
    """An export's cursor names the exporter's watcher log: the import drops it, so the first run after
    an import walks every file."""
    from ragx.api import Corpus

    root, _ = watched
    index(root)
    (root / "b" / "b0.md").write_text("# b0\n\nrewritten before the export\n")
    index(root)
    store = Store(Layout(root).db)
    try:
        assert "watch_cursor" in store.manifest()
    finally:
        store.close()
    archive = tmp_path / "index.tar.gz"
    corpus = Corpus.open(root).use_embedder(HashEmbedder())  # the index's own (fake) model
    corpus.export_index(archive)
    corpus.import_index(archive, force=True)
    store = Store(Layout(root).db)
    try:
        assert "watch_cursor" not in store.manifest()
    finally:
        store.close()
    report = index(root)
    assert report.scan_kind == "walk" and "first run" in report.scan_note
    assert drift(root) == ZERO


def test_a_watcher_that_cannot_watch_says_so_and_tries_again(watched, monkeypatch):
    """A folder it cannot watch (permissions, the watch limit) leaves the watcher not tracking: runs walk
    every file and say why, each barrier is answered once, and the next run's barrier retries."""
    from ragx.index import watcher as watcher_module

    root, running = watched
    running.stop()
    real = watcher_module.Watcher._watch_tree
    failures = iter([True, True])  # the session's start, then the first run's retry

    def watch_tree(self, top, rel):
        if next(failures, False):
            raise watcher_module._Lost("cannot watch b: permission denied")
        return real(self, top, rel)

    monkeypatch.setattr(watcher_module.Watcher, "_watch_tree", watch_tree)
    again = Running(root)
    try:
        report = index(root)
        assert report.scan_kind == "walk" and "not tracking (cannot watch b: permission denied)" in report.scan_note
        assert not [p.name for p in feed_dir(root / ".ragx").iterdir() if p.name.startswith(("answer-", "barrier-"))]
        index(root)  # its barrier's retry succeeds: a session to trust from here
        (root / "b" / "late.md").write_text("# late\n\nwritten once the watcher could watch\n")
        assert index(root).scan_kind == "feed"
        assert drift(root) == ZERO
    finally:
        again.stop()
