"""Find the files of a corpus: walk the tree under a root, honour nested .gitignore files and the
include/exclude globs, skip dot-entries, binaries and oversized files, follow symlinks that stay
inside the root (with cycle detection), and report what could not be read.

Discovery never decodes file contents; :func:`read_text` does that for the indexer and raises
:class:`NotUTF8Error` (a :class:`UnicodeDecodeError`) for files that are not UTF-8.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ragx.ingest.filetypes import is_default_name

if TYPE_CHECKING:  # pathspec (~11 ms to import) loads only for a .gitignore or include/exclude globs
    from pathspec import GitIgnoreSpec

__all__ = [
    "ALWAYS_SKIPPED_DIRS",
    "BINARY_SNIFF_BYTES",
    "DiscoverSettings",
    "Discovery",
    "FoundFile",
    "NotUTF8Error",
    "Problem",
    "discover",
    "hash_bytes",
    "read_text",
]

#: How much of each file is read to decide whether it is binary (a NUL byte in it means binary).
BINARY_SNIFF_BYTES = 8192

#: Directory names never descended into, besides every dot-directory (".git", ".ragx", ...).
ALWAYS_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})
# The corpus's own ragx settings are index machinery, not content.
ROOT_SKIPPED_FILES = frozenset({"ragx.toml"})

_GITIGNORE = ".gitignore"


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


@dataclass(frozen=True)
class Problem:
    path: str
    reason: str


@dataclass
class Discovery:
    files: list[FoundFile] = field(default_factory=list)  # sorted by path
    problems: list[Problem] = field(default_factory=list)  # worth a warning
    skipped: list[Problem] = field(default_factory=list)  # quietly skipped (binary, too large)


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


def hash_bytes(data: bytes) -> str:
    """Content hash used to detect changed files: xxh3-128, as 32 hex digits."""
    import xxhash  # a drift check with no changed file never hashes

    return xxhash.xxh3_128_hexdigest(data)


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


_Levels = tuple[tuple[str, "GitIgnoreSpec"], ...]  # (directory prefix "a/b/" or "", its .gitignore)


def _spec(lines) -> GitIgnoreSpec:
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines(lines)


def _ignored(rel: str, levels: _Levels) -> bool:
    """Nested .gitignore semantics: the deepest .gitignore with a matching pattern decides, and
    within one file the last matching pattern wins (negations re-include)."""
    for base, spec in reversed(levels):
        result = spec.check_file(rel[len(base) :])
        if result.include is not None:
            return bool(result.include)
    return False


def _inside(real: str, root_real: str, root_prefix: str) -> bool:
    return real == root_real or real.startswith(root_prefix)


class _Walker:
    def __init__(self, root: str, settings: DiscoverSettings, known: Mapping[str, tuple[int, int]] | None = None):
        self.settings = settings
        self.known = known or {}
        self.root_abs = os.path.abspath(root)
        self.root_real = os.path.realpath(root)
        self.root_prefix = self.root_real.rstrip(os.sep) + os.sep
        self.include = _spec(settings.include) if settings.include else None
        self.exclude = _spec(settings.exclude) if settings.exclude else None
        self.out = Discovery()

    def problem(self, path: str, reason: str) -> None:
        self.out.problems.append(Problem(path, reason))

    def skip(self, path: str, reason: str) -> None:
        self.out.skipped.append(Problem(path, reason))

    def run(self) -> Discovery:
        if not os.path.isdir(self.root_abs):
            if not os.path.exists(self.root_abs):
                raise FileNotFoundError(errno.ENOENT, "corpus root does not exist", self.root_abs)
            raise NotADirectoryError(errno.ENOTDIR, "corpus root is not a directory", self.root_abs)
        # stack of (dir path as walked, its real path, rel prefix "a/b/", .gitignore levels,
        # real paths of the directories above it)
        stack: list[tuple[str, str, str, _Levels, frozenset[str]]] = [
            (self.root_abs, self.root_real, "", (), frozenset((self.root_real,)))
        ]
        while stack:
            self.walk_dir(*stack.pop(), stack)
        self.out.files.sort(key=lambda f: f.path)
        self.out.problems.sort(key=lambda p: p.path)
        self.out.skipped.sort(key=lambda p: p.path)
        return self.out

    def load_gitignore(self, path: str, rel_prefix: str, levels: _Levels) -> _Levels:
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            self.problem(rel_prefix + _GITIGNORE, _reason(exc))
            return levels
        lines = raw.decode("utf-8", errors="replace").splitlines()
        try:
            spec = _spec(lines)
        except Exception as exc:  # a malformed pattern must not stop the walk
            self.problem(rel_prefix + _GITIGNORE, f"unusable .gitignore: {exc}")
            return levels
        return levels + ((rel_prefix, spec),)

    def walk_dir(self, dir_abs, dir_real, rel_prefix, levels, ancestors, stack) -> None:
        settings = self.settings
        try:
            with os.scandir(dir_abs) as it:
                entries = list(it)
        except OSError as exc:
            self.problem(rel_prefix.rstrip("/") or ".", _reason(exc))
            return
        for entry in entries:
            if entry.name == _GITIGNORE:
                try:
                    if entry.is_file():
                        levels = self.load_gitignore(entry.path, rel_prefix, levels)
                except OSError as exc:
                    self.problem(rel_prefix + _GITIGNORE, _reason(exc))
                break
        for entry in entries:
            name = entry.name
            if name[0] == ".":
                continue  # dot-files and dot-directories (.git, .venv, .ragx, .gitignore...)
            if not name.isascii():  # an ASCII name is valid UTF-8: the common case skips the encode
                try:
                    name.encode("utf-8")
                except UnicodeEncodeError:
                    self.problem(rel_prefix + name.encode("utf-8", "surrogateescape").decode(
                        "utf-8", "replace"), "file name is not valid UTF-8")
                    continue
            rel = rel_prefix + name
            is_link = False
            try:
                is_link = entry.is_symlink()
                if is_link:
                    if not settings.follow_symlinks:
                        continue
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
                    self.problem(rel, _reason(exc))
                continue

            if is_dir:
                self.visit_dir(entry, dir_real, name, rel, levels, ancestors, stack, is_link)
            else:
                self.visit_file(entry, name, rel, levels, is_link, st)

    def visit_dir(self, entry, dir_real, name, rel, levels, ancestors, stack, is_link) -> None:
        """Queue a subdirectory (or a followed link to one) unless it is skipped, ignored or a cycle."""
        if name in ALWAYS_SKIPPED_DIRS:
            return
        rel_dir = rel + "/"
        if levels and _ignored(rel_dir, levels):
            return
        if self.exclude is not None and self.exclude.match_file(rel_dir):
            return
        if is_link:
            real = self.link_target(entry.path, rel)
            if real is None:
                return
        else:
            real = os.path.join(dir_real, name)
        if real in ancestors:
            self.problem(rel, "symlink cycle")
            return
        stack.append((entry.path, real, rel_dir, levels, ancestors | {real}))

    def visit_file(self, entry, name, rel, levels, is_link, st) -> None:
        """Record a candidate file (or a broken link, a fifo, a socket, a device), or say why not."""
        settings = self.settings
        if not self.candidate_file(rel, name, levels):
            return
        if is_link:
            if self.link_target(entry.path, rel) is None:
                return
            if st is None:
                self.problem(rel, "broken symlink")
                return
        else:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                self.problem(rel, _reason(exc))
                return
        if not stat_mod.S_ISREG(st.st_mode):
            self.skip(rel, "not a regular file")
            return
        if st.st_size > settings.max_file_bytes:
            self.skip(rel, f"larger than {settings.max_file_bytes} bytes")
            return
        if self.known.get(rel) == (st.st_size, st.st_mtime_ns):  # read when indexed, unchanged since
            self.out.files.append(FoundFile(rel, entry.path, st.st_size, st.st_mtime_ns))
            return
        try:
            with open(entry.path, "rb") as fh:
                head = fh.read(BINARY_SNIFF_BYTES)
        except OSError as exc:
            self.problem(rel, _reason(exc))
            return
        if b"\0" in head and not rel.lower().endswith(".pdf"):  # PDFs: text comes from ragx/ingest/pdf.py
            self.skip(rel, "binary")
            return
        self.out.files.append(FoundFile(rel, entry.path, st.st_size, st.st_mtime_ns))

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
                return False
        elif not is_default_name(name):
            return False
        if self.exclude is not None and self.exclude.match_file(rel):
            return False
        return True


def discover(root: str | Path, settings: DiscoverSettings | None = None,
             known: Mapping[str, tuple[int, int]] | None = None) -> Discovery:
    """Walk `root` and return the files to index (sorted by path) and what was left out.

    `known`: {path: (size, mtime_ns)} of files already read as text; one with the same size and mtime
    is not opened again to sniff for binary content (the rule that calls such a file unchanged), so
    an incremental run or a drift check opens only new and changed files."""
    return _Walker(os.fspath(root), settings or DiscoverSettings(), known).run()
