"""The change check's shortcut: files found as the index holds them come back by path alone, and the
walk finds exactly what it finds without the shortcut (same files, same rules, links and ignores kept)."""

from __future__ import annotations

import os
import time

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


def test_a_file_written_since_or_changed_is_not_taken_as_unchanged(tmp_path):
    _tree(tmp_path)
    plain = discover(tmp_path)
    known = {f.path: (f.size, f.mtime_ns) for f in plain.files}
    time.sleep(0.05)  # (file-system clocks are coarse)
    since = time.time_ns()
    time.sleep(0.05)
    (tmp_path / "a1.md").write_text("note 1, edited\n")
    st = (tmp_path / "a2.md").stat()
    (tmp_path / "a2.md").write_text("note X\n")  # same size, mtime put back: only the ctime tells
    os.utime(tmp_path / "a2.md", ns=(st.st_atime_ns, st.st_mtime_ns))
    cut = discover(tmp_path, known=known, known_until_ns=since, unchanged_of=known)
    looked_at = {f.path for f in cut.files}
    assert {"a1.md", "a2.md"} <= looked_at and not {"a1.md", "a2.md"} & set(cut.unchanged)
    assert "a3.md" in cut.unchanged
