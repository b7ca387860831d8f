from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

import ragx.ingest.discover as discover_mod
from ragx.ingest.discover import (
    DiscoverSettings,
    FoundFile,
    NotUTF8Error,
    Problem,
    discover,
    hash_bytes,
    read_text,
)
from ragx.ingest.filetypes import is_default_type, kind_for_path


def write(root: Path, rel: str, content: str | bytes = "hello\n") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode()
    p.write_bytes(content)
    return p


def paths(d) -> list[str]:
    return [f.path for f in d.files]


def reasons(problems: list[Problem]) -> dict[str, str]:
    return {p.path: p.reason for p in problems}


def run_with_timeout(fn, seconds=10.0):
    """Run fn in a thread so that a hang (an endless symlink loop) fails instead of blocking."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # pragma: no cover - re-raised below
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "discover() did not finish (hang?)"
    if "error" in box:
        raise box["error"]
    return box["value"]


# --------------------------------------------------------------------------------------------


def test_default_types():
    for name in ["a.md", "b.MARKDOWN", "x.mdx", "n.txt", "doc.rst", "a.py", "lib.rs", "s.tsx",
                 "c.yaml", "d.json", "e.csv", "README", "LICENSE", "Makefile", "Dockerfile",
                 "sub/Dockerfile.dev", "q.sql", "t.tex", "b.pdf"]:  # PDFs: text through pypdf
        assert is_default_type(name), name
    for name in ["a.png", "c.so", "archive.tar.gz", "noext", "x.pyc", "db.sqlite"]:
        assert not is_default_type(name), name
    assert kind_for_path("a/b.md") == "markdown"
    assert kind_for_path("a/b.go") == "code"
    assert kind_for_path("notes.txt") == "text"
    assert kind_for_path("weird.zzz") == "text"


def test_basic_walk_sorted_with_metadata(tmp_path):
    write(tmp_path, "b.md", "bee\n")
    write(tmp_path, "a/z.py", "x = 1\n")
    write(tmp_path, "a/b/c.txt", "c\n")
    write(tmp_path, "image.png", "not really\n")
    d = discover(tmp_path, DiscoverSettings())
    assert paths(d) == ["a/b/c.txt", "a/z.py", "b.md"]
    f = d.files[-1]
    assert isinstance(f, FoundFile)
    assert f.size == 4
    assert Path(f.abspath) == tmp_path / "b.md" and os.path.isabs(f.abspath)
    assert f.mtime_ns == os.stat(tmp_path / "b.md").st_mtime_ns
    assert d.problems == [] and d.skipped == []


def test_nested_gitignore_with_negation(tmp_path, monkeypatch):
    write(tmp_path, ".gitignore", "secret*.md\nbuild/\n*.rst\n!keep.rst\n# comment\n")
    write(tmp_path, "a.md")
    write(tmp_path, "secret1.md")
    write(tmp_path, "notes.txt")
    write(tmp_path, "drop.rst")
    write(tmp_path, "keep.rst")
    write(tmp_path, "build/x.md")
    write(tmp_path, "sub/build/y.md")  # "build/" (no leading slash) matches at any depth
    write(tmp_path, "sub/.gitignore", "!secret_ok.md\n*.txt\n/only_here.md\n")
    write(tmp_path, "sub/secret_ok.md")  # re-included by the nested negation
    write(tmp_path, "sub/secret2.md")  # still ignored by the root file
    write(tmp_path, "sub/notes.txt")  # ignored by the nested file
    write(tmp_path, "sub/only_here.md")  # anchored pattern, relative to sub/
    write(tmp_path, "sub/deeper/only_here.md")  # not matched by the anchored pattern
    write(tmp_path, "sub/deeper/notes.txt")  # nested file's "*.txt" applies below it too
    write(tmp_path, "other/notes.txt")  # the nested file does not apply to siblings

    scanned: list[str] = []
    real_scandir = os.scandir

    def spy(path):
        scanned.append(os.fspath(path))
        return real_scandir(path)

    # os.scandir is the process's own: undo the spy before teardown (pytest's rmtree scans by fd).
    with monkeypatch.context() as patched:
        patched.setattr(discover_mod.os, "scandir", spy)
        d = discover(tmp_path, DiscoverSettings())
    assert paths(d) == [
        "a.md",
        "keep.rst",
        "notes.txt",
        "other/notes.txt",
        "sub/deeper/only_here.md",
        "sub/secret_ok.md",
    ]
    # ignored directories are pruned, not walked
    assert not any(s.endswith("build") for s in scanned), scanned
    assert d.problems == []


def test_include_and_exclude_globs(tmp_path):
    write(tmp_path, "docs/a.md")
    write(tmp_path, "docs/data.weird")  # not a default type, but included explicitly
    write(tmp_path, "docs/private/p.md")
    write(tmp_path, "docs/sub/draft_x.md")
    write(tmp_path, "src/main.py")
    write(tmp_path, "src/util.py")
    write(tmp_path, "top.md")
    settings = DiscoverSettings(
        include=("docs/", "*.py"), exclude=("docs/private/", "draft_*", "/src/util.py")
    )
    d = discover(tmp_path, settings)
    assert paths(d) == ["docs/a.md", "docs/data.weird", "src/main.py"]

    # exclude alone narrows the default types
    d = discover(tmp_path, DiscoverSettings(exclude=("*.py",)))
    assert paths(d) == ["docs/a.md", "docs/private/p.md", "docs/sub/draft_x.md", "top.md"]


def test_dot_entries_and_ragx_dir_skipped(tmp_path):
    write(tmp_path, "visible.md")
    write(tmp_path, ".hidden.md")
    write(tmp_path, ".gitignore", "nothing-matches\n")
    write(tmp_path, ".ragx/index.md")
    write(tmp_path, ".git/HEAD.txt")
    write(tmp_path, ".venv/lib/site.py")
    write(tmp_path, "pkg/.cache/c.md")
    write(tmp_path, "node_modules/dep/index.js")
    write(tmp_path, "pkg/__pycache__/m.py")
    d = discover(tmp_path, DiscoverSettings(include=("*",)))
    assert paths(d) == ["visible.md"]


def test_binary_and_size_cap(tmp_path):
    write(tmp_path, "bin.txt", b"abc\x00def")
    write(tmp_path, "late_nul.txt", b"a" * 9000 + b"\x00")  # NUL after the 8 KiB sniff window
    write(tmp_path, "exact.txt", b"x" * 100)
    write(tmp_path, "big.txt", b"x" * 101)
    write(tmp_path, "empty.txt", b"")
    d = discover(tmp_path, DiscoverSettings(max_file_bytes=100))
    assert paths(d) == ["empty.txt", "exact.txt"]
    assert reasons(d.skipped) == {
        "big.txt": "larger than 100 bytes",
        "bin.txt": "binary",
        "late_nul.txt": "larger than 100 bytes",
    }
    d = discover(tmp_path, DiscoverSettings())
    assert "late_nul.txt" in paths(d)
    assert reasons(d.skipped) == {"bin.txt": "binary"}
    assert d.problems == []


def test_fifo_is_not_read(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no fifos here")
    write(tmp_path, "a.md")
    os.mkfifo(tmp_path / "pipe.md")
    d = run_with_timeout(lambda: discover(tmp_path, DiscoverSettings()))
    assert paths(d) == ["a.md"]
    assert reasons(d.skipped) == {"pipe.md": "not a regular file"}


def test_symlinks_inside_root_are_followed(tmp_path):
    write(tmp_path, "docs/a.md", "alpha\n")
    write(tmp_path, "docs/deep/b.md", "beta\n")
    os.symlink("docs/a.md", tmp_path / "link.md")
    os.symlink("docs", tmp_path / "linkdir")
    d = discover(tmp_path, DiscoverSettings())
    assert paths(d) == [
        "docs/a.md", "docs/deep/b.md", "link.md", "linkdir/a.md", "linkdir/deep/b.md"
    ]
    by = {f.path: f for f in d.files}
    # paths as the user sees them, through the link
    assert by["link.md"].abspath == str(tmp_path / "link.md")
    assert by["linkdir/deep/b.md"].abspath == str(tmp_path / "linkdir" / "deep" / "b.md")
    assert by["link.md"].size == 6
    assert d.problems == []

    d = discover(tmp_path, DiscoverSettings(follow_symlinks=False))
    assert paths(d) == ["docs/a.md", "docs/deep/b.md"]


def test_symlink_loops_are_reported_not_followed(tmp_path):
    write(tmp_path, "docs/a.md")
    os.symlink("..", tmp_path / "docs" / "up")  # back to the root
    os.symlink(".", tmp_path / "docs" / "self")  # to itself
    os.symlink("x.md", tmp_path / "y.md")  # file-level loop
    os.symlink("y.md", tmp_path / "x.md")
    d = run_with_timeout(lambda: discover(tmp_path, DiscoverSettings()))
    assert paths(d) == ["docs/a.md"]
    assert reasons(d.problems) == {
        "docs/self": "symlink cycle",
        "docs/up": "symlink cycle",
        "x.md": "symlink cycle",
        "y.md": "symlink cycle",
    }


def test_mutual_directory_links_terminate(tmp_path):
    write(tmp_path, "a/one.md")
    write(tmp_path, "b/two.md")
    os.symlink("../b", tmp_path / "a" / "to_b")
    os.symlink("../a", tmp_path / "b" / "to_a")
    d = run_with_timeout(lambda: discover(tmp_path, DiscoverSettings()))
    assert paths(d) == ["a/one.md", "a/to_b/two.md", "b/to_a/one.md", "b/two.md"]
    assert reasons(d.problems) == {"a/to_b/to_a": "symlink cycle", "b/to_a/to_b": "symlink cycle"}


def test_symlinks_leaving_the_root_are_reported(tmp_path):
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    write(outside, "secret.md")
    write(root, "in.md")
    os.symlink(outside / "secret.md", root / "out.md")
    os.symlink(outside, root / "outdir")
    os.symlink("../outside", root / "reloutdir")
    os.symlink("missing.md", root / "broken.md")
    os.symlink(outside / "image.png", root / "ignored.png")  # not a candidate: silently skipped
    d = discover(root, DiscoverSettings())
    assert paths(d) == ["in.md"]
    assert reasons(d.problems) == {
        "broken.md": "broken symlink",
        "out.md": "symlink leaves the root",
        "outdir": "symlink leaves the root",
        "reloutdir": "symlink leaves the root",
    }


def test_root_reached_through_a_symlink(tmp_path):
    write(tmp_path, "real/a.md")
    os.symlink("real", tmp_path / "alias")
    d = discover(tmp_path / "alias", DiscoverSettings())
    assert paths(d) == ["a.md"]
    assert d.files[0].abspath == str(tmp_path / "alias" / "a.md")


def test_missing_root_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        discover(tmp_path / "nope", DiscoverSettings())
    write(tmp_path, "file.md")
    with pytest.raises(NotADirectoryError):
        discover(tmp_path / "file.md", DiscoverSettings())


def test_undecodable_file_name_reported(tmp_path):
    write(tmp_path, "ok.md")
    try:
        fd = os.open(os.fsencode(tmp_path) + b"/bad\xff.md", os.O_CREAT | os.O_WRONLY)
    except (OSError, ValueError):
        pytest.skip("file system refuses non-UTF-8 names")
    os.close(fd)
    d = discover(tmp_path, DiscoverSettings())
    assert paths(d) == ["ok.md"]
    assert [p.reason for p in d.problems] == ["file name is not valid UTF-8"]


def test_unreadable_entries_simulated(tmp_path, monkeypatch):
    """Permission errors, simulated so that the test means the same as root and as a user."""
    write(tmp_path, "ok.md")
    write(tmp_path, "locked.md")
    write(tmp_path, "lockeddir/inner.md")
    write(tmp_path, "after/z.md")
    real_scandir, real_open = os.scandir, open

    def scandir(path):
        if os.fspath(path).endswith("lockeddir"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    def fake_open(path, *args, **kwargs):
        if os.fspath(path).endswith("locked.md"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, *args, **kwargs)

    with monkeypatch.context() as patched:  # os.scandir is the process's own: undone before teardown
        patched.setattr(discover_mod.os, "scandir", scandir)
        patched.setattr(discover_mod, "open", fake_open, raising=False)
        d = discover(tmp_path, DiscoverSettings())
    assert paths(d) == ["after/z.md", "ok.md"]
    assert reasons(d.problems) == {
        "locked.md": "permission denied", "lockeddir": "permission denied"
    }


def _discover_as_nobody(base: Path) -> dict:
    """Fork, drop to uid/gid 65534 in the child, walk `base` there and send the result back."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        code = 0
        try:
            os.close(rfd)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            d = discover(base, DiscoverSettings())
            out = {"files": paths(d), "problems": reasons(d.problems)}
        except BaseException as exc:
            out, code = {"error": repr(exc)}, 1
        with os.fdopen(wfd, "w") as fh:
            fh.write(json.dumps(out))
        os._exit(code)
    os.close(wfd)
    with os.fdopen(rfd) as fh:
        raw = fh.read()
    os.waitpid(pid, 0)
    return json.loads(raw)


def test_unreadable_entries_for_real(tmp_path):
    """chmod 000 for real. Root reads everything regardless, so as root the walk runs in a child
    process that drops to the unprivileged 'nobody' user."""
    as_root = os.geteuid() == 0
    base = Path(tempfile.mkdtemp(prefix="ragx-perm-")) if as_root else tmp_path
    try:
        os.chmod(base, 0o755)
        write(base, "ok.md")
        write(base, "locked.md")
        write(base, "lockeddir/inner.md")
        write(base, "after/z.md")
        for p in [base / "ok.md", base / "after" / "z.md", base / "lockeddir" / "inner.md"]:
            os.chmod(p, 0o644)
        os.chmod(base / "after", 0o755)
        os.chmod(base / "locked.md", 0o000)
        os.chmod(base / "lockeddir", 0o000)
        if as_root:
            if not hasattr(os, "fork"):
                pytest.skip("running as root without fork(): cannot drop privileges")
            out = _discover_as_nobody(base)
            if "error" in out:
                pytest.skip(f"running as root; the unprivileged child failed: {out['error']}")
            files, problems = out["files"], out["problems"]
        else:
            d = discover(base, DiscoverSettings())
            files, problems = paths(d), reasons(d.problems)
        assert files == ["after/z.md", "ok.md"]
        assert problems == {"locked.md": "permission denied", "lockeddir": "permission denied"}
    finally:
        os.chmod(base / "lockeddir", 0o755)
        os.chmod(base / "locked.md", 0o644)
        if as_root:
            shutil.rmtree(base, ignore_errors=True)


def test_read_text_and_hash(tmp_path):
    p = write(tmp_path, "bom.md", b"\xef\xbb\xbfline one\r\nline two\r\n")
    data, text = read_text(p)
    assert data == p.read_bytes()
    assert text == "\ufeffline one\r\nline two\r\n"  # BOM and CRLF kept as they are

    bad = write(tmp_path, "latin1.txt", "caf\u00e9 cr\u00e8me\n".encode("latin-1"))
    with pytest.raises(UnicodeDecodeError) as info:
        read_text(bad)
    err = info.value
    assert isinstance(err, NotUTF8Error)
    assert "not valid UTF-8" in str(err) and str(bad) in str(err)
    assert err.start == 3

    h = hash_bytes(b"abc")
    assert h == hash_bytes(b"abc") and h != hash_bytes(b"abd")
    assert len(h) == 32 and int(h, 16) >= 0


def test_many_files_are_quick(tmp_path):
    import time

    for i in range(1000):
        write(tmp_path, f"d{i % 20}/f{i}.md", "# t\n\nsome text\n" * 20)
    t0 = time.perf_counter()
    d = discover(tmp_path, DiscoverSettings())
    elapsed = time.perf_counter() - t0
    assert len(d.files) == 1000
    assert elapsed < 2.0  # generous; ~0.02 s locally


def test_a_file_read_before_and_unchanged_is_not_opened_again(tmp_path, monkeypatch):
    """Incremental runs and drift checks open only new and changed files (the binary sniff of an
    unchanged file was done when it was indexed)."""
    import ragx.ingest.discover as discover_module

    (tmp_path / "old.md").write_text("indexed before\n")
    (tmp_path / "new.md").write_text("never seen\n")
    st = (tmp_path / "old.md").stat()
    opened: list[str] = []

    def counting_open(path, *args, **kwargs):
        opened.append(os.path.basename(path))
        return open(path, *args, **kwargs)

    monkeypatch.setattr(discover_module, "open", counting_open, raising=False)
    found = discover_module.discover(tmp_path, known={"old.md": (st.st_size, st.st_mtime_ns)})
    assert [f.path for f in found.files] == ["new.md", "old.md"] and opened == ["new.md"]
    opened.clear()
    discover_module.discover(tmp_path, known={"old.md": (st.st_size, st.st_mtime_ns - 1)})  # touched since
    assert sorted(opened) == ["new.md", "old.md"]
