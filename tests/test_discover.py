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
        except BaseException as exc:  # noqa: BLE001 - re-raised below
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
    write(tmp_path, ".shelf/deep/c.md", "gamma\n")  # a dot-folder: reached only through a link
    write(tmp_path, ".notes/n.md", "delta!\n")  # a dot-folder's file, reached only through a file link
    os.symlink(".notes/n.md", tmp_path / "link.md")
    os.symlink("docs/a.md", tmp_path / "again.md")  # a file indexed already: indexed once, as docs/a.md
    os.symlink("../.shelf/deep/c.md", tmp_path / "docs" / "c.md")  # ... also where its folder came by a link
    os.symlink("docs", tmp_path / "linkdir")  # a folder walked already: indexed once, as docs/
    os.symlink(".shelf", tmp_path / "shelf")
    d = discover(tmp_path, DiscoverSettings())
    assert paths(d) == ["docs/a.md", "docs/deep/b.md", "link.md", "shelf/deep/c.md"]
    by = {f.path: f for f in d.files}
    # paths as the user sees them, through the link
    assert by["link.md"].abspath == str(tmp_path / "link.md")
    assert by["shelf/deep/c.md"].abspath == str(tmp_path / "shelf" / "deep" / "c.md")
    assert by["link.md"].size == 7
    assert d.problems == []
    assert reasons(d.skipped) == {
        "again.md": "a link to a file already indexed as docs/a.md",
        "docs/c.md": "a link to a file already indexed as shelf/deep/c.md",
        "linkdir": "a link to a folder already indexed as docs",
    }

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
    assert paths(d) == ["a/one.md", "b/two.md"]  # each real folder once, under its own path
    assert d.problems == []
    assert reasons(d.skipped) == {
        "a/to_b": "a link to a folder already indexed as b", "b/to_a": "a link to a folder already indexed as a"
    }
    # "a" moved into a dot-folder and reached through a link: walked there, its loop back reported
    (tmp_path / "a").rename(tmp_path / ".x")
    os.symlink(".x", tmp_path / "a")
    os.symlink("../a", tmp_path / ".x" / "back")
    d = run_with_timeout(lambda: discover(tmp_path, DiscoverSettings()))
    assert paths(d) == ["a/one.md", "b/two.md"]
    assert reasons(d.problems) == {"a/back": "symlink cycle"}
    assert reasons(d.skipped) == {
        "a/to_b": "a link to a folder already indexed as b", "b/to_a": "a link to a folder already indexed as a"
    }


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
        except BaseException as exc:  # noqa: BLE001 - the forked child reports any failure to the parent
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


# --------------------------------------------------------------------------------------------
# .gitignore: bad lines, rules from above the root


def test_an_invalid_gitignore_line_is_skipped_not_the_whole_file(tmp_path):
    """git skips a line it cannot parse and applies the rest; a file it ignores stays out."""
    write(tmp_path, ".gitignore", "secret.md\n!\n\\\na\\\n[z-a]\n*.log.md\n")
    write(tmp_path, "public.md")
    write(tmp_path, "secret.md")
    write(tmp_path, "x.log.md")
    write(tmp_path, "sub/.gitignore", "[z-a]\ndraft.md\n")
    write(tmp_path, "sub/draft.md")
    write(tmp_path, "sub/kept.md")
    d = discover(tmp_path, DiscoverSettings())
    assert paths(d) == ["public.md", "sub/kept.md"]
    assert [(p.path, p.reason) for p in d.problems] == [
        (".gitignore", "line 2: invalid pattern '!' skipped (the rest of the file applies)"),
        (".gitignore", "line 3: invalid pattern '\\\\' skipped (the rest of the file applies)"),
        (".gitignore", "line 4: invalid pattern 'a\\\\' skipped (the rest of the file applies)"),
        (".gitignore", "line 5: invalid pattern '[z-a]' skipped (the rest of the file applies)"),
        ("sub/.gitignore", "line 1: invalid pattern '[z-a]' skipped (the rest of the file applies)"),
    ]
    assert d.unread == []  # a bad line is no unreadable entry: nothing indexed is kept because of it


def _repository(base: Path) -> Path:
    """A git repository's skeleton at `base` (no git needed): .git/ with an info/exclude."""
    write(base, ".git/HEAD", "ref: refs/heads/main\n")
    write(base, ".git/info/exclude", "# git's own comment lines\nexcluded*.md\n")
    return base


def test_gitignore_files_above_the_root_apply_up_to_the_repository_top(tmp_path):
    repo = _repository(tmp_path / "repo")
    write(repo, ".gitignore", "secret/\n*.tmp.md\n/a/notes/top-only.md\n")
    write(repo, "a/.gitignore", "!keep.tmp.md\n")  # a deeper file re-includes
    root = repo / "a" / "notes"
    write(root, ".gitignore", "!excluded-but-kept.md\n")  # the root's own beats info/exclude
    for rel in ["ok.md", "secret/keys.md", "sub/secret/deep.md", "x.tmp.md", "keep.tmp.md", "top-only.md",
                "sub/top-only.md", "excluded.md", "sub/excluded2.md", "excluded-but-kept.md"]:
        write(root, rel)
    write(tmp_path / "outside", ".gitignore", "*.md\n")  # above the repository: not git's business
    d = discover(root, DiscoverSettings())
    assert paths(d) == ["excluded-but-kept.md", "keep.tmp.md", "ok.md", "sub/top-only.md"]
    assert d.problems == []

    # at the repository's top: its .git/info/exclude applies too
    assert "a/notes/excluded.md" not in paths(discover(repo, DiscoverSettings()))
    assert "a/notes/ok.md" in paths(discover(repo, DiscoverSettings()))


def test_a_root_inside_a_folder_git_ignores_is_indexed_as_asked(tmp_path):
    """A private notes folder ignored by its code repository: git's rules stop where git stops looking."""
    repo = _repository(tmp_path / "repo")
    write(repo, ".gitignore", "private/\n")
    write(repo, "private/notes/n.md")
    assert paths(discover(repo / "private" / "notes", DiscoverSettings())) == ["n.md"]
    assert paths(discover(repo, DiscoverSettings())) == []


def test_a_worktree_or_submodule_git_file_leads_to_its_info_exclude(tmp_path):
    main = _repository(tmp_path / "main")
    write(main, ".git/worktrees/wt/commondir", "../..\n")
    tree = tmp_path / "wt"
    write(tree, ".git", f"gitdir: {main / '.git' / 'worktrees' / 'wt'}\n")
    write(tree, ".gitignore", "build/\n")
    write(tree, "docs/excluded.md")
    write(tree, "docs/build/out.md")
    write(tree, "docs/a.md")
    assert paths(discover(tree / "docs", DiscoverSettings())) == ["a.md"]
    sub = tmp_path / "sub"  # a submodule's gitdir (relative), with no commondir: its own info/exclude
    write(main, ".git/modules/sub/info/exclude", "local-only.md\n")
    write(sub, ".git", f"gitdir: {os.path.relpath(main / '.git' / 'modules' / 'sub', sub)}\n")
    write(sub, "local-only.md")
    write(sub, "shared.md")
    assert paths(discover(sub, DiscoverSettings())) == ["shared.md"]


# --------------------------------------------------------------------------------------------
# mtimes SQLite cannot store, unreadable entries of an index, links forming a DAG, a bad include

_YEAR_2300_NS = 10_413_792_000 * 10**9  # 2300-01-01: past the signed 64-bit nanoseconds of 2262


def _future_file(path: Path, text: str) -> None:
    path.write_text(text)
    os.utime(path, ns=(_YEAR_2300_NS, _YEAR_2300_NS))
    if os.stat(path).st_mtime_ns != _YEAR_2300_NS:
        pytest.skip("this file system cannot store a 2300 mtime")


@pytest.mark.usefixtures("fake_model")
def test_a_file_dated_after_2262_is_indexed_once_and_its_edits_still_seen(tmp_path, capsys):
    from cli_runner import call

    (tmp_path / "ok.md").write_text("# ok\n\nnormal note about walruses.\n")
    _future_file(tmp_path / "future.md", "# future\n\nA note with a bogus clock about seals.\n")
    assert discover(tmp_path).files[0].mtime_ns == 2**63 - 1  # clamped into SQLite's INTEGER
    code, out, err = call(capsys, "index", "--root", str(tmp_path), "--json")
    assert code == 0, err
    assert json.loads(out)["files"] == 2
    code, out, _ = call(capsys, "index", "--root", str(tmp_path), "--json")
    again = json.loads(out)
    assert code == 0 and again["embedded_chunks"] == 0 and again["unchanged"] == 2 and again["changed"] == 0
    # same size, same (clamped) mtime, other words: the clamped mtime cannot tell, the content does
    _future_file(tmp_path / "future.md", "# future\n\nA note with a bogus clock about otter.\n")
    code, out, _ = call(capsys, "index", "--root", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["changed"] == 1


@pytest.mark.usefixtures("fake_model")
def test_an_indexed_file_or_folder_that_turns_unreadable_stays_indexed(tmp_path, capsys, monkeypatch):
    """Permission denied at the OS calls discovery makes (scandir of d/, open of was.md), as a user
    without the rights would meet it; the index keeps both as they were, and reports them."""
    from cli_runner import call

    write(tmp_path, "was.md", "# w\n\nnote about voles\n")
    write(tmp_path, "d/x.md", "# x\n\nnote about moles\n")
    write(tmp_path, "ok.md", "# ok\n\nnote about hares\n")
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    with open(tmp_path / "was.md", "a") as fh:
        fh.write("more\n")
    write(tmp_path, "fresh.md", "# f\n\nnew and locked\n")
    locked = {str(tmp_path / "was.md"), str(tmp_path / "d"), str(tmp_path / "fresh.md")}
    real_scandir, real_open = os.scandir, open

    def scandir(path):
        if os.fspath(path) in locked:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    def denying_open(path, *args, **kwargs):
        if os.fspath(path) in locked:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, *args, **kwargs)

    with monkeypatch.context() as patched:  # os.scandir is the process's own: undone before teardown
        patched.setattr(discover_mod.os, "scandir", scandir)
        patched.setattr(discover_mod, "open", denying_open, raising=False)
        code, out, _ = call(capsys, "status", "--root", str(tmp_path), "--json")
        status = json.loads(out)
        assert status["drift"] == {"new": 0, "changed": 0, "deleted": 0, "unreadable": 3}
        assert [row["path"] for row in status["not_indexed"]["unreadable"]] == ["d", "fresh.md", "was.md"]
        code, out, _ = call(capsys, "index", "--root", str(tmp_path), "--json")
        report = json.loads(out)
        assert code == 0 and report["deleted"] == 0 and report["new"] == 0 and report["files"] == 3
        # a full rebuild would drop what it cannot read: refused, nothing lost
        code, out, err = call(capsys, "index", "--full", "--root", str(tmp_path))
        assert code == 2 and [line for line in err.splitlines() if line.startswith("ragx: error:")] == err.splitlines()[-1:]
        assert "2 indexed file(s) cannot be read now (d/x.md, was.md): `ragx index --full` would drop them" in err
        code, out, _ = call(capsys, "status", "--root", str(tmp_path), "--json")
        assert json.loads(out)["files"] == 3
    code, out, _ = call(capsys, "index", "--root", str(tmp_path), "--json")  # readable again: caught up
    report = json.loads(out)
    assert report["changed"] == 1 and report["new"] == 1 and report["deleted"] == 0 and report["files"] == 4
    (tmp_path / "was.md").unlink()  # really gone: deleted as before
    code, out, _ = call(capsys, "index", "--root", str(tmp_path), "--json")
    assert json.loads(out)["deleted"] == 1


@pytest.mark.usefixtures("fake_model")
def test_an_unreadable_root_keeps_everything_but_a_vanished_folder_does_not(tmp_path, capsys, monkeypatch):
    from cli_runner import call

    write(tmp_path, "a.md", "# a\n\nrivers and boats\n")
    write(tmp_path, "sub/b.md", "# b\n\nmountains\n")
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    real_scandir = os.scandir

    def failing_scandir(error):
        def scandir(path):
            if os.fspath(path) == str(tmp_path):
                raise error
            return real_scandir(path)
        return scandir

    with monkeypatch.context() as patched:
        patched.setattr(discover_mod.os, "scandir", failing_scandir(PermissionError(13, "Permission denied")))
        code, out, _ = call(capsys, "index", "--root", str(tmp_path), "--json")
        assert code == 0 and json.loads(out)["deleted"] == 0 and json.loads(out)["files"] == 2
        assert discover(tmp_path).unread == ["."]
    with monkeypatch.context() as patched:  # vanished while scanning: gone, not unreadable
        patched.setattr(discover_mod.os, "scandir", failing_scandir(FileNotFoundError(2, "No such file")))
        d = discover(tmp_path)
    assert d.unread == [] and reasons(d.problems) == {".": "vanished while scanning"}


def test_links_forming_a_dag_walk_each_real_folder_once(tmp_path):
    """15 folders each linking twice to the next: 32,767 paths for one file before, one now."""
    for i in range(15):
        (tmp_path / f"l{i}").mkdir()
    write(tmp_path, "l14/leaf.md", "# leaf\n\nleaf note about ants.\n")
    for i in range(14):
        os.symlink(f"../l{i + 1}", tmp_path / f"l{i}" / "a")
        os.symlink(f"../l{i + 1}", tmp_path / f"l{i}" / "b")
    d = run_with_timeout(lambda: discover(tmp_path, DiscoverSettings()), seconds=5.0)
    assert paths(d) == ["l14/leaf.md"]
    assert d.problems == []
    assert reasons(d.skipped) == {
        f"l{i}/{name}": f"a link to a folder already indexed as l{i + 1}" for i in range(14) for name in "ab"
    }


def test_which_path_a_linked_folder_gets_is_decided_by_path_order(tmp_path):
    """The real path wins over a link that sorts first; among links to a folder the real walk does
    not reach, the first in path order; a folder inside one is not walked again through another."""
    write(tmp_path, "z_real/r.md")
    os.symlink("z_real", tmp_path / "a_link")
    write(tmp_path, ".hidden/top.md")
    write(tmp_path, ".hidden/sub/s.md")
    os.symlink(".hidden/sub", tmp_path / "m_sub")
    os.symlink(".hidden", tmp_path / "n_all")
    os.symlink(".hidden", tmp_path / "o_again")
    for _ in range(2):  # the same answer every time, whatever order the file system lists entries in
        d = discover(tmp_path, DiscoverSettings())
        assert paths(d) == ["m_sub/s.md", "n_all/top.md", "z_real/r.md"]
        assert reasons(d.skipped) == {
            "a_link": "a link to a folder already indexed as z_real",
            "n_all/sub": "a folder already indexed as m_sub",
            "o_again": "a link to a folder already indexed as n_all",
        }


@pytest.mark.usefixtures("fake_model")
def test_an_include_that_matches_no_file_is_refused_and_loses_nothing(tmp_path, capsys):
    from cli_runner import call

    write(tmp_path, "a.md", "# a\n\nrivers and boats\n")
    write(tmp_path, "b.md", "# b\n\nmountains\n")
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    write(tmp_path, "ragx.toml", '[index]\ninclude = ["*.MD"]\n')
    code, out, err = call(capsys, "index", "--root", str(tmp_path))
    assert code == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("ragx: error:")]
    assert len(errors) == 1 and "index.include ['*.MD'] matches none of the 2 files" in errors[0]
    # status tells the same as a notice of an index that is still whole (exit 0), with no drift to count
    code, out, _ = call(capsys, "status", "--root", str(tmp_path), "--json")
    status = json.loads(out)
    assert code == 0 and status["consistent"] is True and status["files"] == 2 and status["drift"] is None
    assert any("matches none of the 2 files" in notice for notice in status["notices"])
    (tmp_path / "ragx.toml").unlink()
    code, out, _ = call(capsys, "status", "--root", str(tmp_path), "--json")
    status = json.loads(out)
    assert status["files"] == 2 and status["drift"] == {"new": 0, "changed": 0, "deleted": 0, "unreadable": 0}
    # an include that matches something, or a corpus with nothing to match, is no error
    assert discover(tmp_path, DiscoverSettings(include=("a.md",))).include_unmatched == 0
    (tmp_path / "empty").mkdir()
    assert discover(tmp_path / "empty", DiscoverSettings(include=("*.MD",))).include_unmatched == 0
    assert discover(tmp_path, DiscoverSettings(include=("*.MD",))).include_unmatched == 2
