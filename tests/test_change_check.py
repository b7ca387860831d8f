"""The change check's shortcut: files found as the index holds them come back by path alone, and the
walk finds exactly what it finds without the shortcut (same files, same rules, links and ignores kept)."""

from __future__ import annotations

import os
import time

import pytest

from ragx.ingest.discover import discover


def _tree(root):
    (root / "sub").mkdir()
    (root / "ignored").mkdir()
    for i in range(5):
        (root / f"a{i}.md").write_text(f"note {i}\n")
        (root / "sub" / f"b{i}.py").write_text(f"x = {i}\n")
        (root / "ignored" / f"c{i}.md").write_text("hidden\n")
    (root / ".gitignore").write_text("ignored/\n")
    (root / "sub" / ".gitignore").write_text("b4.py\n")
    (root / "image.bin").write_bytes(b"\0\1\2")
    (root / "md").write_text("a name that is an extension: not a default type\n")
    (root / "UPPER.MD").write_text("an upper-case extension: a default type\n")
    os.symlink(root / "a0.md", root / "link-to-a0.md")  # a link to an indexed file: not a second file
    os.symlink(root / "ignored" / "c0.md", root / "link-to-c0.md")  # a link to a file the walk leaves out: kept


def test_the_shortcut_finds_what_the_plain_walk_finds(tmp_path):
    _tree(tmp_path)
    plain = discover(tmp_path)
    known = {f.path: (f.size, f.mtime_ns) for f in plain.files}
    since = time.time_ns() + 10**9
    cut = discover(tmp_path, known=known, known_until_ns=since, unchanged_of=known)
    assert sorted(cut.unchanged + [f.path for f in cut.files]) == [f.path for f in plain.files]
    assert "a0.md" in cut.unchanged and "sub/b0.py" in cut.unchanged  # (sub/ has its own ignore rules)
    assert "UPPER.MD" in cut.unchanged and "md" not in cut.unchanged
    assert [f.path for f in cut.files] == ["link-to-c0.md"]  # links always take the general route
    assert cut.skipped == plain.skipped and cut.problems == plain.problems


def _edit_a1_and_a2(root) -> int:
    """A scan start, then an edit of a1.md and a same-size edit of a2.md that puts its mtime back."""
    time.sleep(0.05)  # (file-system clocks are coarse)
    since = time.time_ns()
    time.sleep(0.05)
    (root / "a1.md").write_text("note 1, edited\n")
    st = (root / "a2.md").stat()
    (root / "a2.md").write_text("note X\n")  # same size, mtime put back: only the ctime tells
    os.utime(root / "a2.md", ns=(st.st_atime_ns, st.st_mtime_ns))
    return since


def test_a_file_written_since_or_changed_is_not_taken_as_unchanged(tmp_path):
    _tree(tmp_path)
    plain = discover(tmp_path)
    known = {f.path: (f.size, f.mtime_ns) for f in plain.files}
    since = _edit_a1_and_a2(tmp_path)
    cut = discover(tmp_path, known=known, known_until_ns=since, unchanged_of=known)
    looked_at = {f.path for f in cut.files}
    assert {"a1.md", "a2.md"} <= looked_at and not {"a1.md", "a2.md"} & set(cut.unchanged)
    assert "a3.md" in cut.unchanged


def _plain_tree(root):
    """A corpus with no ignore rules or globs (the batched route), and every case it must hand on."""
    (root / "sub").mkdir()
    for i in range(5):
        (root / f"a{i}.md").write_text(f"note {i}\n")
        (root / "sub" / f"b{i}.py").write_text(f"x = {i}\n")
    (root / "md").write_text("a name that is an extension: not a default type\n")
    (root / "UPPER.MD").write_text("an upper-case extension: a default type\n")
    (root / "ragx.toml").write_text("[index]\n")  # the corpus's settings: never a file of it
    (root / ".hidden.md").write_text("a dot-file\n")
    (root / "big.md").write_text("x" * 200)
    (root / "image.bin").write_bytes(b"\0\1\2")
    os.symlink(root / "a0.md", root / "sub" / "link-to-a0.md")
    os.symlink(root / "sub", root / "linked-sub")


def test_the_batched_route_finds_what_the_plain_walk_finds(tmp_path):
    from ragx.ingest.discover import DiscoverSettings

    _plain_tree(tmp_path)
    settings = DiscoverSettings(max_file_bytes=100)
    plain = discover(tmp_path, settings)
    known = {f.path: (f.size, f.mtime_ns) for f in plain.files}
    # Rows the walk must not take as unchanged whatever the table says: left out by the rules now.
    stored = known | {path: (p.stat().st_size, p.stat().st_mtime_ns)
                      for path, p in ((n, tmp_path / n) for n in ("md", "ragx.toml", ".hidden.md", "big.md"))}
    cut = discover(tmp_path, settings, known=stored, known_until_ns=time.time_ns() + 10**9, unchanged_of=stored)
    assert sorted(cut.unchanged + [f.path for f in cut.files]) == [f.path for f in plain.files]
    assert {"a0.md", "sub/b0.py", "UPPER.MD"} <= set(cut.unchanged)
    assert not {"md", "ragx.toml", ".hidden.md", "big.md"} & set(cut.unchanged)
    assert [f.path for f in cut.files] == [f.path for f in plain.files if f.path not in cut.unchanged]
    assert cut.skipped == plain.skipped and cut.problems == plain.problems


def test_the_batched_route_hands_on_written_changed_and_undecodable_files(tmp_path):
    _plain_tree(tmp_path)
    plain = discover(tmp_path)
    stored = {f.path: (f.size, f.mtime_ns) for f in plain.files}
    since = _edit_a1_and_a2(tmp_path)
    known = stored | {"a3.md": (1, 1)}  # remembered otherwise (as not UTF-8, say): not unchanged
    cut = discover(tmp_path, known=known, known_until_ns=since, unchanged_of=stored)
    assert not {"a1.md", "a2.md", "a3.md"} & set(cut.unchanged)
    assert {"a1.md", "a2.md", "a3.md"} <= {f.path for f in cut.files}
    assert {"a0.md", "a4.md", "sub/b0.py"} <= set(cut.unchanged)


def test_a_folder_with_an_unstatable_entry_takes_the_general_route(tmp_path, monkeypatch):
    _plain_tree(tmp_path)
    plain = discover(tmp_path)
    stored = {f.path: (f.size, f.mtime_ns) for f in plain.files}
    import ragx.ingest.discover as discover_module

    class Wrapped:  # a DirEntry whose stat fails for one file: it vanished between the listing and its stat
        def __init__(self, entry):
            self._entry = entry

        def __getattr__(self, name):
            return getattr(self._entry, name)

        def stat(self, *, follow_symlinks=True):
            if self._entry.name == "a3.md":
                raise FileNotFoundError(2, "gone", self._entry.path)
            return self._entry.stat(follow_symlinks=follow_symlinks)

    real_scandir = os.scandir

    class Listing:
        def __init__(self, path):
            self._it = real_scandir(path)

        def __enter__(self):
            return (Wrapped(e) for e in self._it)

        def __exit__(self, *exc):
            self._it.close()

    monkeypatch.setattr(discover_module.os, "scandir", Listing)
    cut = discover(tmp_path, known=stored, known_until_ns=time.time_ns() + 10**9, unchanged_of=stored)
    assert "a3.md" not in cut.unchanged and "a3.md" not in {f.path for f in cut.files}
    assert {"a0.md", "sub/b0.py"} <= set(cut.unchanged)  # the other files of its folder still by path alone


def test_rows_read_on_demand_equal_the_rows_read_at_once(tmp_path):
    from ragx.index.store import Store

    store = Store(tmp_path / "index.sqlite", create=True)
    paths = ["a.md", "dir/b, with a comma.md", "dir/ünïcode.md", "line\nbreak.md", "z.md"]
    store.db.executemany("INSERT INTO files(id, path, size, mtime_ns, hash) VALUES (?, ?, ?, ?, ?)",
                         [(i + 1, p, 10 * i, 2**62 + i, f"h{i}") for i, p in enumerate(paths)])
    eager, lazy = store.files(), store.files(rows_on_demand=True)
    assert lazy.stats == eager.stats and list(lazy) == list(eager) and len(lazy) == 5
    assert lazy["dir/b, with a comma.md"] == eager["dir/b, with a comma.md"]
    lazy.prefetch(["z.md", "not there.md"])
    assert lazy["z.md"] == eager["z.md"] and "not there.md" not in lazy
    with pytest.raises(KeyError):
        lazy["not there.md"]
    assert sorted(lazy.values()) == sorted(eager.values())
    store.db.execute("DELETE FROM files")
    assert len(store.files(rows_on_demand=True)) == 0 and store.files(rows_on_demand=True).stats == {}
    store.close()
