"""Find the files of a corpus: walk the tree under a root, honour the .gitignore files (nested ones,
those above the root up to the top of the enclosing git repository, and its .git/info/exclude) and
the include/exclude globs, skip dot-entries, binaries and oversized files, follow symlinks that stay
inside the root (each real folder walked once, cycles detected), and report what could not be read.

Discovery never decodes file contents; :func:`read_text` does that for the indexer and raises
:class:`NotUTF8Error` (a :class:`UnicodeDecodeError`) for files that are not UTF-8.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ragx.ingest.content_hash import hash_bytes
from ragx.ingest.filetypes import EXTENSION_KINDS, PDF_UNAVAILABLE, is_default_name, is_pdf, pdf_readable

if TYPE_CHECKING:  # pathspec (~11 ms to import) loads only for a .gitignore or include/exclude globs
    from pathspec import GitIgnoreSpec
    from pathspec.util import CheckResult

__all__ = [
    "ALWAYS_SKIPPED_DIRS",
    "BINARY_SNIFF_BYTES",
    "DiscoverSettings",
    "Discovery",
    "FeedUnsafe",
    "FoundFile",
    "NotUTF8Error",
    "Problem",
    "discover",
    "discover_within",
    "hash_bytes",
    "ignore_files_above",
    "mtime_is_clamped",
    "read_text",
]

#: How much of each file is read to decide whether it is binary (a NUL byte in it means binary).
BINARY_SNIFF_BYTES = 8192

#: Directory names never descended into, besides every dot-directory (".git", ".ragx", ...).
ALWAYS_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})
# The corpus's own ragx settings are index machinery, not content.
ROOT_SKIPPED_FILES = frozenset({"ragx.toml"})

_GITIGNORE = ".gitignore"

# The index stores mtime_ns in a SQLite INTEGER, a signed 64-bit number: a file dated after 2262 (or
# before 1677), a bogus clock or a crafted `touch -d`, would otherwise crash the run's insert.
_MTIME_NS_MAX = 2**63 - 1
_MTIME_NS_MIN = -(2**63)


@dataclass(frozen=True)
class DiscoverSettings:
    include: tuple[str, ...] = ()  # gitignore-style globs relative to root; empty = default types
    exclude: tuple[str, ...] = ()  # gitignore-style globs relative to root, applied after include
    max_file_bytes: int = 2_000_000
    follow_symlinks: bool = True


class FoundFile(NamedTuple):  # a tuple: the walk makes one per file, 100,000 at a million chunks
    path: str  # POSIX path relative to root, as the user sees it (through symlinks)
    abspath: str  # absolute path through the same symlinks (open() reaches the target)
    size: int
    mtime_ns: int
    # The inode change time, from the same stat: no user can set it, and any write moves it (so do a
    # chmod, a rename, a new hard link). ragx/index/diff.py compares it with the last run's scan start.
    ctime_ns: int = 0


@dataclass(frozen=True)
class Problem:
    path: str
    reason: str


@dataclass
class Discovery:
    files: list[FoundFile] = field(default_factory=list)  # sorted by path
    problems: list[Problem] = field(default_factory=list)  # worth a warning
    skipped: list[Problem] = field(default_factory=list)  # quietly skipped (binary, too large)
    # Files and folders that are there but could not be read (permission denied, an I/O error), a
    # subset of the problems' paths: what an index holds at or below them is kept, not deleted.
    unread: list[str] = field(default_factory=list)
    # With `include` set and matching no path at all: how many files it left out (else 0); a typo
    # such as "*.MD" is bad input, not a corpus that emptied.
    include_unmatched: int = 0
    # Paths of files found as `unchanged_of` holds them (same size and mtime, inode unchanged since
    # `known_until_ns`), when the caller asked: left out of `files` (unsorted; the diff counts them).
    unchanged: list[str] = field(default_factory=list)
    # Why a change feed (ragx/index/feed.py) cannot stand in for this walk: a followed symbolic link (an
    # edit of its target raises an event under another path), a hard-linked file (an edit through its
    # other name raises none here). None: nothing of the kind was met.
    feed_unsafe: str | None = None


class FeedUnsafe(Exception):
    """A walk limited to the paths a change feed named met what the feed cannot see (FoundFile.feed_unsafe):
    the caller walks every file instead."""


def mtime_is_clamped(mtime_ns: int) -> bool:
    """Whether discovery clamped this mtime into SQLite's range: such a file is compared by content."""
    return mtime_ns == _MTIME_NS_MAX or mtime_ns == _MTIME_NS_MIN


class NotUTF8Error(UnicodeDecodeError):
    """A file that is not valid UTF-8. ``str(err)`` names the file and the first bad byte."""

    def __init__(self, path: str, cause: UnicodeDecodeError):
        super().__init__(cause.encoding, cause.object, cause.start, cause.end, cause.reason)
        self.path = path

    def __str__(self) -> str:
        return f"{self.path}: not valid UTF-8 (byte {self.start}: {self.reason})"

    def __reduce__(self):  # keep it picklable despite the custom __init__
        cause = UnicodeDecodeError(self.encoding, self.object, self.start, self.end, self.reason)
        return (type(self), (self.path, cause))


def read_text(abspath: str | os.PathLike[str]) -> tuple[bytes, str]:
    """Read a file: its raw bytes and their UTF-8 decoding (a BOM stays part of the text; newlines
    are not normalised). Raises NotUTF8Error for undecodable files, OSError if unreadable."""
    with open(abspath, "rb") as fh:
        data = fh.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotUTF8Error(os.fspath(abspath), exc) from None
    return data, text


# --------------------------------------------------------------------------------------------
# the walk


def _reason(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied"
    if exc.errno == errno.ELOOP:
        return "symlink cycle"
    if isinstance(exc, FileNotFoundError):
        return "vanished while scanning"
    return (exc.strerror or type(exc).__name__).lower()


def _still_there(exc: OSError) -> bool:
    """Whether an entry that could not be read still exists (denied, an I/O error), unlike one the
    error says is gone (vanished, replaced by a file, a symlink loop)."""
    return not isinstance(exc, (FileNotFoundError, NotADirectoryError)) and exc.errno != errno.ELOOP


def _storable_mtime(mtime_ns: int) -> int:  # see _MTIME_NS_MAX
    return _MTIME_NS_MAX if mtime_ns > _MTIME_NS_MAX else _MTIME_NS_MIN if mtime_ns < _MTIME_NS_MIN else mtime_ns


def _spec(lines) -> GitIgnoreSpec:
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines(lines)


def _spec_of_valid_lines(lines: list[str]) -> tuple[GitIgnoreSpec, list[tuple[int, str]]]:
    """The rules of a .gitignore's lines and the (line number, line) of each invalid one, left out:
    git skips a bad line and applies the rest of the file, and so does this."""
    try:
        return _spec(lines), []  # the common case: one compile, no line checked on its own
    except Exception:  # noqa: BLE001 - pathspec raises its own error, or re.error for "[z-a]"
        pass
    bad: list[tuple[int, str]] = []
    for number, line in enumerate(lines, 1):
        try:
            _spec([line])
        except Exception:  # noqa: BLE001 - as above
            bad.append((number, line))
    bad_numbers = {number for number, _ in bad}
    return _spec([line for number, line in enumerate(lines, 1) if number not in bad_numbers]), bad


class _Reanchored:
    """The rules of a .gitignore (or .git/info/exclude) above the root. Its patterns are relative to
    its own folder, so a path under the root is matched with the root's place there in front."""

    __slots__ = ("spec", "root_from_here")

    def __init__(self, spec: GitIgnoreSpec, root_from_here: str):
        self.spec = spec
        self.root_from_here = root_from_here  # "notes/" for a root at <this folder>/notes, "" for here

    def check_file(self, rel: str) -> CheckResult[str]:
        return self.spec.check_file(self.root_from_here + rel)


# (directory prefix "a/b/" or "", the rules of a .gitignore there); rules from above the root have
# the prefix "" and come first, so that the deepest file is asked first, as git asks.
_Levels = tuple[tuple[str, "GitIgnoreSpec | _Reanchored"], ...]


def _ignored(rel: str, levels: _Levels) -> bool:
    """Nested .gitignore semantics: the deepest .gitignore with a matching pattern decides, and
    within one file the last matching pattern wins (negations re-include)."""
    for base, spec in reversed(levels):
        result = spec.check_file(rel[len(base) :])
        if result.include is not None:
            return bool(result.include)
    return False


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _plain_type(name: str) -> bool:
    """A default type: a default extension (one set lookup; 0.4 s of a profiled 2.3 s walk of 100,000
    files went to is_default_name), else whatever is_default_name says."""
    dot = name.rfind(".")
    return (dot > 0 and name[dot + 1 :] in EXTENSION_KINDS) or is_default_name(name)


def _inside(real: str, root_real: str, root_prefix: str) -> bool:
    return real == root_real or real.startswith(root_prefix)


def _posix_rel(path: str, start: str) -> str:
    """`path` relative to `start` as a folder prefix: "a/b/", or "" for `start` itself."""
    rel = os.path.relpath(path, start)
    return "" if rel == os.curdir else rel.replace(os.sep, "/") + "/"


def _ignored_above(folder: str, found: list[tuple[str, GitIgnoreSpec]]) -> bool:
    """Whether rules from above the root, (their folder, rules) top first, ignore `folder`."""
    for base, spec in reversed(found):
        result = spec.check_file(_posix_rel(folder, base))
        if result.include is not None:
            return bool(result.include)
    return False


# --------------------------------------------------------------------------------------------
# the enclosing git repository: its rules from above the root, found without running git


def _enclosing_repository(root_real: str) -> tuple[str, str | None] | None:
    """(top folder, git dir or None) of the git repository holding `root_real`, found as git finds
    it: the nearest folder upwards with a `.git` entry, a folder or a file "gitdir: <path>" (a
    worktree, a submodule), not crossing into another file system. Two stats a level: cheap."""
    folder = root_real
    try:
        device = os.stat(folder).st_dev
    except OSError:
        return None
    while True:
        dot_git = os.path.join(folder, ".git")
        try:
            st = os.stat(dot_git)
        except OSError:
            st = None
        if st is not None:
            if stat_mod.S_ISDIR(st.st_mode):
                return folder, dot_git
            return folder, _gitdir_of_file(dot_git)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        try:
            if os.stat(parent).st_dev != device:
                return None
        except OSError:
            return None
        folder = parent


def _gitdir_of_file(dot_git: str) -> str | None:
    """The git dir a `.git` file names ("gitdir: ../.git/worktrees/x"), relative to its folder."""
    try:
        with open(dot_git, "rb") as fh:
            first = fh.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    return os.path.join(os.path.dirname(dot_git), first[len("gitdir:") :].strip())


def _info_exclude(gitdir: str) -> str:
    """info/exclude of a git dir; a worktree's is its main repository's (the `commondir` file)."""
    try:
        with open(os.path.join(gitdir, "commondir"), "rb") as fh:
            common = fh.read(4096).decode("utf-8", "replace").strip()
    except OSError:
        common = ""
    return os.path.join(gitdir, common, "info", "exclude") if common else os.path.join(gitdir, "info", "exclude")


def _ignore_files_above(root_real: str) -> list[tuple[str, str, str | None]]:
    """(the folder its patterns are relative to, path, the folder below it towards the root) of each
    ignore file above the root, top first: the enclosing repository's info/exclude (None: judged with
    the top's .gitignore), then each .gitignore from its top to the root's parent. Empty outside a
    repository."""
    repository = _enclosing_repository(root_real)
    if repository is None:
        return []
    top, gitdir = repository
    files: list[tuple[str, str, str | None]] = [(top, _info_exclude(gitdir), None)] if gitdir is not None else []
    folder = top
    for name in _posix_rel(root_real, top).split("/")[:-1]:
        below = os.path.join(folder, name)
        files.append((folder, os.path.join(folder, _GITIGNORE), below))
        folder = below
    return files


# --------------------------------------------------------------------------------------------
# the walk


class _Queued(NamedTuple):
    """A folder to walk."""

    path: str  # as walked (through links)
    real: str  # its real path
    rel_prefix: str  # its path relative to the root with a trailing "/" ("" for the root)
    levels: _Levels  # the .gitignore rules that apply in it
    ancestors: frozenset[str]  # the real paths of the folders above it, itself included (cycles)


class _Walker:
    def __init__(self, root: str, settings: DiscoverSettings, known: Mapping[str, tuple[int, int]] | None = None,
                 known_until_ns: int | None = None, unchanged_of: Mapping[str, tuple[int, int]] | None = None):
        self.settings = settings
        self.known = known or {}
        self.known_until_ns = known_until_ns
        self.unchanged_of = unchanged_of
        self.root_abs = os.path.abspath(root)
        self.root_real = os.path.realpath(root)
        self.root_prefix = self.root_real.rstrip(os.sep) + os.sep
        self.include = _spec(settings.include) if settings.include else None
        self.exclude = _spec(settings.exclude) if settings.exclude else None
        self.include_matched = self.include_unmatched = 0
        # Each real folder is walked once: real path -> the path it is indexed under ("" = the root).
        self.walked: dict[str, str] = {self.root_real: ""}
        self.links: list[_Queued] = []  # folder links met, followed once the real tree is walked
        self.file_links: dict[str, str] = {}  # path of a link to a file -> the file's real path
        self.out = Discovery()

    def problem(self, path: str, reason: str) -> None:
        self.out.problems.append(Problem(path, reason))

    def unreadable(self, path: str, exc: OSError) -> None:
        self.problem(path, _reason(exc))
        if _still_there(exc):
            self.out.unread.append(path)

    def skip(self, path: str, reason: str) -> None:
        self.out.skipped.append(Problem(path, reason))

    def run(self) -> Discovery:
        if not os.path.isdir(self.root_abs):
            if not os.path.exists(self.root_abs):
                raise FileNotFoundError(errno.ENOENT, "corpus root does not exist", self.root_abs)
            raise NotADirectoryError(errno.ENOTDIR, "corpus root is not a directory", self.root_abs)
        self.walk_tree(_Queued(self.root_abs, self.root_real, "", self.repository_levels(), frozenset((self.root_real,))))
        while self.links:
            self.follow_links()
        if self.file_links:
            self.drop_links_to_indexed_files()
        if self.include is not None and not self.include_matched:
            self.out.include_unmatched = self.include_unmatched
        return self.sorted_out()

    def sorted_out(self) -> Discovery:
        self.out.files.sort(key=lambda f: f.path)
        self.out.problems.sort(key=lambda p: p.path)
        self.out.skipped.sort(key=lambda p: p.path)
        self.out.unread.sort()
        return self.out

    def repository_levels(self) -> _Levels:
        """The rules that reach the root from above: the enclosing repository's .git/info/exclude,
        then each .gitignore from its top down to the root's parent (the root's own is walked), each
        re-anchored at the root. None at all when the root lies in a folder those rules ignore: git
        looks no further there, so its rules say nothing about the folder the user asked for."""
        found: list[tuple[str, GitIgnoreSpec]] = []  # (the folder its patterns are relative to, rules)
        for base, path, below in _ignore_files_above(self.root_real):
            self.add_rules(found, base, path)
            if below is not None and _ignored_above(below, found):
                return ()
        return tuple(("", _Reanchored(spec, _posix_rel(self.root_real, base))) for base, spec in found)

    def add_rules(self, found: list[tuple[str, GitIgnoreSpec]], base: str, path: str) -> None:
        """Append the rules of the ignore file at `path` (above the root) if there is one."""
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return
        except OSError as exc:
            self.problem(_posix_rel(path, self.root_real).rstrip("/"), _reason(exc))
            return
        spec = self.rules_of(raw, _posix_rel(path, self.root_real).rstrip("/"))
        if spec is not None:
            found.append((base, spec))

    def rules_of(self, raw: bytes, shown_as: str) -> GitIgnoreSpec | None:
        """The rules of an ignore file's bytes; each invalid line is reported and left out."""
        spec, bad = _spec_of_valid_lines(raw.decode("utf-8", errors="replace").splitlines())
        for number, line in bad:
            self.problem(shown_as, f"line {number}: invalid pattern {line!r} skipped (the rest of the file applies)")
        # Comments only (git's own info/exclude of every new repository): no rules to ask per path.
        return spec if any(pattern.include is not None for pattern in spec.patterns) else None

    def load_gitignore(self, path: str, rel_prefix: str, levels: _Levels) -> _Levels:
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            self.problem(rel_prefix + _GITIGNORE, _reason(exc))
            return levels
        spec = self.rules_of(raw, rel_prefix + _GITIGNORE)
        return levels + ((rel_prefix, spec),) if spec is not None else levels

    def walk_dir(self, queued: _Queued, stack: list[_Queued]) -> None:
        dir_abs, dir_real, rel_prefix, levels, ancestors = queued
        settings = self.settings
        try:
            with os.scandir(dir_abs) as it:
                entries = list(it)
        except OSError as exc:
            self.unreadable(rel_prefix.rstrip("/") or ".", exc)
            return
        for entry in entries:
            if entry.name == _GITIGNORE:
                try:
                    if entry.is_file():
                        levels = self.load_gitignore(entry.path, rel_prefix, levels)
                except OSError as exc:
                    self.problem(rel_prefix + _GITIGNORE, _reason(exc))
                break
        if not levels and self.include is None and self.exclude is None and self.unchanged_of is not None:
            entries = self.plain_unchanged(entries, rel_prefix)
        for entry in entries:
            name = entry.name
            if name[0] == ".":
                continue  # dot-files and dot-directories (.git, .venv, .ragx, .gitignore...)
            if not name.isascii() and not _utf8(name):  # an ASCII name is valid UTF-8: the common case skips the encode
                self.problem(rel_prefix + name.encode("utf-8", "surrogateescape").decode("utf-8", "replace"),
                             "file name is not valid UTF-8")
                continue
            rel = rel_prefix + name
            is_link = False
            try:
                is_link = entry.is_symlink()
                if is_link:
                    if not settings.follow_symlinks:
                        continue
                    self.out.feed_unsafe = "symbolic links are followed"
                    try:
                        st = os.stat(entry.path)
                    except FileNotFoundError:
                        st = None
                    is_dir = st is not None and stat_mod.S_ISDIR(st.st_mode)
                else:
                    st = None
                    is_dir = entry.is_dir(follow_symlinks=False)
            except OSError as exc:
                if is_link and exc.errno == errno.ELOOP:
                    if self.candidate_file(rel, name, levels):
                        self.problem(rel, "symlink cycle")
                else:
                    self.unreadable(rel, exc)
                continue

            if is_dir:
                self.visit_dir(entry, dir_real, rel, levels, ancestors, is_link, stack)
            else:
                self.visit_file(entry, name, rel, levels, is_link, st)

    def plain_unchanged(self, entries: list[os.DirEntry[str]], rel_prefix: str) -> list[os.DirEntry[str]]:
        """The common case of a drift check, a folder at a time before the general rules (no ignore rules
        or globs in force): its regular files (not links) of a default type that `unchanged_of` holds as
        found (same size and mtime, inode unchanged since known_until_ns) are recorded by path alone.
        Returns the entries left to the general rules (visit_file makes the same test, and every other
        one). A few comprehensions per folder, not a method call and a dozen tests per file: at 100,000
        files the walk's Python work had cost more than its stat calls."""
        try:  # lstat, kept by each DirEntry: visit_file does not stat again
            stats = [entry.stat(follow_symlinks=False) for entry in entries]
        except OSError:  # vanished or unreadable: the general rules say what, entry by entry
            return entries
        assert self.unchanged_of is not None
        stored, keys = self.unchanged_of.get, [rel_prefix + entry.name for entry in entries]
        until = _MTIME_NS_MAX if self.known_until_ns is None else self.known_until_ns
        limit = self.settings.max_file_bytes
        # (a hard-linked file takes the general rules, which note it: Discovery.feed_unsafe)
        same = [stored(key) == (st.st_size, st.st_mtime_ns) and st.st_ctime_ns < until and st.st_size <= limit
                and stat_mod.S_ISREG(st.st_mode) and st.st_nlink == 1 for key, st in zip(keys, stats)]
        known = None if self.known is self.unchanged_of else self.known.get
        for i in [i for i, hit in enumerate(same) if hit]:  # the few names each such file is checked for
            name, key = entries[i].name, keys[i]
            if not (name[0] != "." and _plain_type(name) and (rel_prefix or key not in ROOT_SKIPPED_FILES)
                    and _MTIME_NS_MIN < stats[i].st_mtime_ns < _MTIME_NS_MAX
                    and (known is None or known(key) == (stats[i].st_size, stats[i].st_mtime_ns))):
                same[i] = False
        self.out.unchanged.extend(key for key, hit in zip(keys, same) if hit)
        return [entry for entry, hit in zip(entries, same) if not hit]

    def left_out(self, name: str, rel_dir: str, levels: _Levels) -> bool:
        """Whether the walk leaves out the folder `name` at `rel_dir` ("a/b/") by its path alone."""
        return (name in ALWAYS_SKIPPED_DIRS or bool(levels and _ignored(rel_dir, levels))
                or (self.exclude is not None and self.exclude.match_file(rel_dir)))

    def visit_dir(self, entry, dir_real, rel, levels, ancestors, is_link, stack) -> None:
        """Queue a subdirectory, or set aside a link to one (see follow_links), unless it is skipped,
        ignored, a cycle or a folder walked already."""
        rel_dir = rel + "/"
        if self.left_out(entry.name, rel_dir, levels):
            return
        if is_link:
            real = self.followed(entry, rel, lambda real: "symlink cycle" if real in ancestors else None)
            if real is not None:
                self.links.append(_Queued(entry.path, real, rel_dir, levels, ancestors))
            return
        real = os.path.join(dir_real, entry.name)
        if real in self.walked:  # a real folder inside a linked one, reached by an earlier link already
            self.skip(rel, f"a folder already indexed as {self.walked[real] or '.'}")
            return
        self.walked[real] = rel
        stack.append(_Queued(entry.path, real, rel_dir, levels, ancestors | {real}))

    def walk_tree(self, top: _Queued) -> None:
        stack = [top]
        while stack:
            self.walk_dir(stack.pop(), stack)

    def follow_links(self) -> None:
        """The folder links met so far, in path order, each walked in full before the next is judged.
        Every real folder is walked once: a DAG of links would otherwise multiply its files (15 folders
        linking twice to the next: 32,767 paths for one file). The real tree is walked first, so a
        folder is indexed under its own path; one the real walk does not reach (a dot-folder, an
        ignored one) under the first link to it in path order. Links met on the way wait their turn."""
        links, self.links = sorted(self.links, key=lambda q: q.rel_prefix), []
        for link in links:
            rel = link.rel_prefix[:-1]
            if link.real in self.walked:
                self.skip(rel, f"a link to a folder already indexed as {self.walked[link.real] or '.'}")
                continue
            self.walked[link.real] = rel
            self.walk_tree(link._replace(ancestors=link.ancestors | {link.real}))

    def drop_links_to_indexed_files(self) -> None:
        """A link to a file that the walk found under its own path is not a second file: the same text
        would be indexed, and come back in results, twice. (A link to a file the walk does not index,
        in a dot-folder or an ignored one, stays: it is how that file is meant to be searched.)"""
        found = {f.path for f in self.out.files} | set(self.out.unchanged)
        indexed_as: dict[str, str] = {}
        for rel, real in self.file_links.items():
            folder = self.walked.get(os.path.dirname(real))
            own = None if folder is None else os.path.join(folder, os.path.basename(real))  # "" (the root): the name alone
            if own is not None and own != rel and own in found and own not in self.file_links:
                indexed_as[rel] = own
        if indexed_as:
            self.out.files = [f for f in self.out.files if f.path not in indexed_as]
            for rel, own in indexed_as.items():
                self.skip(rel, f"a link to a file already indexed as {own}")

    def followed(self, entry, rel: str, fault: Callable[[str], str | None]) -> str | None:
        """A link's real target, or None when it is not followed: link_target said why, or `fault(real)`
        names a problem (a cycle, a broken link), said here."""
        real = self.link_target(entry.path, rel)
        if real is None:
            return None
        problem = fault(real)
        if problem is not None:
            self.problem(rel, problem)
            return None
        return real

    def visit_file(self, entry, name, rel, levels, is_link, st) -> None:
        """Record a candidate file (or a broken link, a fifo, a socket, a device), or say why not."""
        settings = self.settings
        if not self.candidate_file(rel, name, levels):
            return
        if is_link:
            real = self.followed(entry, rel, lambda _real: "broken symlink" if st is None else None)
            if real is None:
                return
            self.file_links[rel] = real
        else:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                self.unreadable(rel, exc)
                return
            if st.st_nlink > 1 and stat_mod.S_ISREG(st.st_mode):
                self.out.feed_unsafe = "some files are hard-linked"
        if not stat_mod.S_ISREG(st.st_mode):
            self.skip(rel, "not a regular file")
            return
        if st.st_size > settings.max_file_bytes:
            self.skip(rel, f"larger than {settings.max_file_bytes} bytes")
            return
        mtime_ns, ctime_ns = st.st_mtime_ns, st.st_ctime_ns
        if _MTIME_NS_MIN < mtime_ns < _MTIME_NS_MAX:
            if self.known.get(rel) == (st.st_size, mtime_ns) and (  # read when indexed, unchanged since
                self.known_until_ns is None or ctime_ns < self.known_until_ns  # (its inode too, see discover)
            ):
                if not is_link and self.unchanged_of is not None and self.unchanged_of.get(rel) == (st.st_size, mtime_ns):
                    self.out.unchanged.append(rel)
                    return
                self.out.files.append(FoundFile(rel, entry.path, st.st_size, mtime_ns, ctime_ns))
                return
        else:  # a clamped mtime no longer tells a change: sniffed again here, hashed again by the diff
            mtime_ns = _storable_mtime(mtime_ns)
        if is_pdf(rel) and rel not in self.known and not pdf_readable():
            self.skip(rel, PDF_UNAVAILABLE)  # a skipped file, not drift: indexing again would not change it
            return
        try:
            with open(entry.path, "rb") as fh:
                head = fh.read(BINARY_SNIFF_BYTES)
        except OSError as exc:
            self.unreadable(rel, exc)
            return
        if b"\0" in head and not is_pdf(rel):  # PDFs: text comes from ragx/ingest/pdf.py
            self.skip(rel, "binary")
            return
        self.out.files.append(FoundFile(rel, entry.path, st.st_size, mtime_ns, ctime_ns))

    # ---- a walk limited to the folders a change feed named (ragx/index/feed.py)

    def run_within(self, deep: tuple[str, ...], shallow: tuple[str, ...]) -> Discovery:
        """Walk the folders of `deep` whole and list those of `shallow` (their own entries), each under
        the rules the full walk would apply there. FeedUnsafe when that cannot stand in for the full walk."""
        self.inner: dict[str, _Levels | None] = {}
        for rel in deep:
            queued = self.queued_for(rel)
            if queued is not None:
                self.walk_tree(queued)
        for rel in shallow:
            queued = self.queued_for(rel)
            if queued is not None:
                self.walk_dir(queued, [])  # its subfolders: those a feed named are in `deep`
        if self.out.feed_unsafe is not None or self.links or self.file_links:
            raise FeedUnsafe(self.out.feed_unsafe or "symbolic links are followed")
        return self.sorted_out()

    def queued_for(self, rel: str) -> _Queued | None:
        """The folder `rel` ("" = the root) as the full walk would queue it; None when the walk does not
        enter it (gone, not a folder, a dot-folder, skipped, ignored, excluded)."""
        if not rel:
            return _Queued(self.root_abs, self.root_real, "", self.repository_levels(), frozenset((self.root_real,)))
        parent, _, name = rel.rpartition("/")
        levels = self.inner_levels(parent)
        if levels is None or not self.enters(rel, name, levels):
            return None
        real = os.path.join(self.root_real, rel)
        return _Queued(os.path.join(self.root_abs, rel), real, rel + "/", levels, frozenset((real,)))

    def inner_levels(self, rel: str) -> _Levels | None:
        """The rules in force for the entries of folder `rel` (its own .gitignore included); None when
        the walk does not enter it. Each folder's once."""
        if rel in self.inner:
            return self.inner[rel]
        if not rel:
            levels: _Levels | None = self.own_rules(self.root_abs, "", self.repository_levels())
        else:
            parent, _, name = rel.rpartition("/")
            outer = self.inner_levels(parent)
            levels = None
            if outer is not None and self.enters(rel, name, outer):
                levels = self.own_rules(os.path.join(self.root_abs, rel), rel + "/", outer)
        self.inner[rel] = levels
        return levels

    def own_rules(self, folder: str, rel_prefix: str, levels: _Levels) -> _Levels:
        path = os.path.join(folder, _GITIGNORE)
        return self.load_gitignore(path, rel_prefix, levels) if os.path.isfile(path) else levels

    def enters(self, rel: str, name: str, levels: _Levels) -> bool:
        """Whether the walk, listing the folder above, would enter the folder `rel`."""
        if name[0] == "." or not (name.isascii() or _utf8(name)):
            return False
        try:
            st = os.lstat(os.path.join(self.root_abs, rel))
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as exc:  # the full walk says what cannot be read, and keeps what is indexed there
            raise FeedUnsafe(f"{rel}: {_reason(exc)}") from None
        if stat_mod.S_ISLNK(st.st_mode):
            if self.settings.follow_symlinks:
                raise FeedUnsafe("symbolic links are followed")
            return False
        return stat_mod.S_ISDIR(st.st_mode) and not self.left_out(name, rel + "/", levels)

    def link_target(self, path: str, rel: str) -> str | None:
        """The real path a symlink points to, or None (reported) when it leaves the root."""
        real = os.path.realpath(path)
        if not _inside(real, self.root_real, self.root_prefix):
            self.problem(rel, "symlink leaves the root")
            return None
        return real

    def candidate_file(self, rel: str, name: str, levels: _Levels) -> bool:
        """Would a file at `rel` be indexed, judging by its path alone?"""
        if rel in ROOT_SKIPPED_FILES:
            return False
        if levels and _ignored(rel, levels):
            return False
        if self.include is not None:
            if not self.include.match_file(rel):
                self.include_unmatched += 1
                return False
            self.include_matched += 1
        elif not is_default_name(name):
            return False
        if self.exclude is not None and self.exclude.match_file(rel):
            return False
        return True


def discover(root: str | Path, settings: DiscoverSettings | None = None,
             known: Mapping[str, tuple[int, int]] | None = None, known_until_ns: int | None = None,
             unchanged_of: Mapping[str, tuple[int, int]] | None = None) -> Discovery:
    """Walk `root` and return the files to index (sorted by path) and what was left out.

    `known`: {path: (size, mtime_ns)} of files already read as text; one with the same size and mtime
    is not opened again to sniff for binary content (the rule that calls such a file unchanged), so
    an incremental run or a drift check opens only new and changed files. `known_until_ns`: the ctime
    from which a write may postdate their reading (the last index run's scan start less a margin,
    ragx/index/diff.py); a file whose inode changed at or after it (`st_ctime_ns`) may hold other bytes
    under the same size and mtime, and is sniffed again. None: size and mtime alone (an index from
    before scan starts were recorded). `unchanged_of`: {path: (size, mtime_ns)} of the indexed files; a
    file (not a link) that `known` and it both hold as found, unchanged since known_until_ns, is listed
    in `Discovery.unchanged` by path alone instead of `files` (a drift check of 100,000 files then makes
    no tuple, sorts nothing and compares nothing again for them)."""
    return _Walker(os.fspath(root), settings or DiscoverSettings(), known, known_until_ns, unchanged_of).run()


def discover_within(root: str | Path, settings: DiscoverSettings, deep: tuple[str, ...], shallow: tuple[str, ...],
                    known: Mapping[str, tuple[int, int]] | None = None, known_until_ns: int | None = None,
                    unchanged_of: Mapping[str, tuple[int, int]] | None = None) -> Discovery:
    """`discover` limited to the folders a change feed named: `deep` walked whole, `shallow` listed
    (their own entries), under the rules the full walk applies there. Raises FeedUnsafe when it cannot
    stand in for the full walk (a followed link or a hard-linked file met, a folder above one of them
    unreadable); `include_unmatched` is not judged (no run sees every path)."""
    walker = _Walker(os.fspath(root), settings, known, known_until_ns, unchanged_of)
    if not os.path.isdir(walker.root_abs):
        raise FeedUnsafe("the root is not a folder")
    return walker.run_within(deep, shallow)


def ignore_files_above(root: str | Path) -> list[tuple[str, int, int, int]]:
    """(path, size, mtime_ns, ctime_ns; -1s when absent) of every ignore file above the root the walk may
    read (the enclosing repository's info/exclude, each .gitignore from its top to the root's parent):
    edits of them raise no event inside the root, so a change feed compares these instead."""
    out = []
    for _, path, _ in _ignore_files_above(os.path.realpath(root)):
        try:
            st = os.stat(path)
            out.append((path, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        except OSError:
            out.append((path, -1, -1, -1))
    return out
