"""What changed in a corpus since its last index run: new, changed, deleted and unchanged files.

A file whose size and mtime match the stored row is unchanged without being read; otherwise it is
hashed, and only a different hash makes it changed (a `touch` is not a change). So is a file whose
mtime discovery had to clamp (dated after 2262): its stored mtime cannot tell a change.

Size and mtime alone miss an edit that keeps both: `cp -p` of a same-size file, `touch -r`, `rsync
-t`, a tar extraction, editors and sync tools that restore the mtime. The inode change time cannot be
set by a user and moves on every write (and on a chmod, a rename, a new hard link), so each index run
records in its manifest when its scan began (`scan_started_ns`, the wall clock before the walk). The
rule: a file whose size and mtime match its row but whose ctime is at or after that start, less
store.SCAN_MARGIN_NS (2 s: coarse file-system timestamps, small clock steps), is compared by content;
a different hash is a change, the same hash is not (its row is not even touched). Why that is enough:
the run that recorded the start read or confirmed every file it kept, after the start, so a file whose
ctime is older than that has not been written since. It costs no syscall (the walk's one stat gives
ctime too) and no SQL, and only the files written or chmod-ed since the last run are read: right after
a run, those written in the seconds before it too, once (a run that reads such files records its own
start, even with nothing to index). An index with no recorded start (from before this rule) is
judged by size and mtime alone by `status` and queries; the first index run over it that will record a
start compares every file by content first (`CONFIRM_ALL`), since that start promises every file was
read or confirmed after it. So does `ragx import`: the exporter's start is another machine's clock and
another copy of the files, no promise about this one's. A start is recorded only by a run that saw every
indexed file (`CorpusDiff.complete`): one limited to a path (`ragx index PATH`), or that could not read
some indexed file or folder, keeps the older start, which stays true for every file.

A file remembered as not UTF-8 (or a damaged PDF) has no hash to compare: it is looked at again when
its ctime is at or after the start itself, without the margin, else every such file written in the
seconds before a run would count as new and be parsed again. A text file is decoded there and then:
still not UTF-8 (a chmod, or another undecodable edit), it stays skipped; a PDF is parsed again by the
run, as new. A write that the coarse clock dates before the start is possible only within a tick of
the walk reading that very file. (Windows reports the creation time as st_ctime: there, such edits are
missed as before.)

What is indexed but cannot be read now (permission denied, an I/O error: a file, or a folder and all
below it) stays indexed as it was, reported as unreadable, not deleted; its results may be stale.
An `index.include` matching no file of a non-empty corpus is a typo, not a corpus that emptied: a
UsageError, before anything is deleted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Settings
from ..errors import UsageError
from ..ingest.discover import (
    DiscoverSettings,
    Discovery,
    FoundFile,
    NotUTF8Error,
    Problem,
    discover,
    discover_within,
    hash_bytes,
    mtime_is_clamped,
    read_text,
)
from ..ingest.filetypes import is_pdf
from .feed import in_scope
from .store import FileRow, StoredFiles, written_since

# A scan start before any file's ctime: every file whose size and mtime match its row is compared by
# content (an index with no recorded start, an import; see the module docstring).
CONFIRM_ALL = 0


def scan_start_ns() -> int:
    """What an index run records as its scan start (store.SCAN_STARTED), taken before its walk begins."""
    return time.time_ns()


@dataclass
class CorpusDiff:
    new: list[FoundFile] = field(default_factory=list)
    changed: list[FoundFile] = field(default_factory=list)
    touched: list[tuple[FoundFile, FileRow]] = field(default_factory=list)  # new stat, same content
    deleted: list[FileRow] = field(default_factory=list)
    unchanged: int = 0
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    # Files found again unchanged since a run could not decode them (not UTF-8): skipped, not new.
    undecodable: list[FoundFile] = field(default_factory=list)
    # Paths there but unreadable now (permissions, I/O errors): what the index holds at or below them stays.
    unread: list[str] = field(default_factory=list)
    # Files read only because their inode changed since the last run's scan start (same size and mtime).
    rehashed: int = 0
    # Whether every indexed file was seen and, where needed, read: only then may a run record its own
    # scan start (see the module docstring). Not so after an unreadable path, or for a part of the corpus.
    complete: bool = True
    # Why a change feed cannot stand in for the full walk in this corpus (Discovery.feed_unsafe).
    feed_unsafe: str | None = None

    def unreadable_of(self, paths) -> list[str]:
        """Those of `paths` (stored files the walk did not return) that are unreadable, not gone."""
        missing = set(paths)
        return sorted(missing - _still_there(missing, self.unread))

    @property
    def has_changes(self) -> bool:
        return bool(self.new or self.changed or self.deleted)

    def restricted_to(self, prefix: str) -> "CorpusDiff":
        """Only the changes at `prefix` (a file) or below it (a folder); the rest count as unchanged."""
        prefix = prefix.strip("/")
        inside = lambda path: not prefix or prefix == "." or path == prefix or path.startswith(prefix + "/")  # noqa: E731
        out = CorpusDiff(
            new=[f for f in self.new if inside(f.path)],
            changed=[f for f in self.changed if inside(f.path)],
            touched=[(f, r) for f, r in self.touched if inside(f.path)],
            deleted=[r for r in self.deleted if inside(r.path)],
            problems=[p for p in self.problems if inside(p.path)],
            skipped=[p for p in self.skipped if inside(p.path)],
            undecodable=self.undecodable,  # all of them: they stay remembered whatever the prefix
            rehashed=self.rehashed,
            complete=self.complete and (not prefix or prefix == "."),  # the files outside were not updated
        )
        out.unchanged = self.unchanged + (len(self.changed) - len(out.changed)) + (len(self.deleted) - len(out.deleted))
        return out

    def counts(self) -> dict[str, int]:
        return {"new": len(self.new), "changed": len(self.changed), "deleted": len(self.deleted), "unchanged": self.unchanged}


def discover_settings(settings: Settings) -> DiscoverSettings:
    s = settings.index
    return DiscoverSettings(
        include=tuple(s.include), exclude=tuple(s.exclude), max_file_bytes=s.max_file_bytes, follow_symlinks=s.follow_symlinks
    )


@dataclass(frozen=True)
class Within:
    """A diff limited to the folders a change feed named (ragx/index/feed.py): `stored` holds the indexed
    files in their scope (Store.files_within), `total` counts every indexed file."""

    deep: tuple[str, ...]
    shallow: tuple[str, ...]
    stored: StoredFiles
    total: int


def diff_corpus(
    root: Path, settings: Settings, stored: StoredFiles | None = None, undecodable: dict[str, tuple[int, int]] | None = None,
    scan_started_ns: int | None = None, within: Within | None = None,
) -> CorpusDiff:
    """`stored`: the index's files (None: none, every file is new); `undecodable`: {path: (size, mtime_ns)}
    of files known not to be UTF-8 (Store.undecodable); `scan_started_ns`: the scan start the last run
    recorded (`store.scan_started(manifest)`; None: size and mtime alone decide, as before it was recorded).
    `within`: look only there (every other indexed file is unchanged); raises FeedUnsafe when that
    cannot stand in for the full walk."""
    if within is not None:
        stored = within.stored
    stored = stored if stored is not None else StoredFiles()
    undecodable = undecodable or {}
    stats = stored.stats
    since = written_since(scan_started_ns)
    known = stats | undecodable if undecodable else stats
    if within is None:
        found: Discovery = discover(root, discover_settings(settings), known, since,
                                    unchanged_of=stats)  # unchanged files come back by path alone (found.unchanged)
    else:
        found = discover_within(root, discover_settings(settings), within.deep, within.shallow, known, since, unchanged_of=stats)
    if found.include_unmatched:
        raise IncludeMatchesNothing(_include_matches_nothing(settings, found.include_unmatched))
    out = CorpusDiff(problems=list(found.problems), skipped=list(found.skipped), unread=list(found.unread),
                     complete=not found.unread, unchanged=len(found.unchanged), feed_unsafe=found.feed_unsafe)
    stored.prefetch(f.path for f in found.files)  # the rows the loop may compare with, in one read
    for f in found.files:
        stat = stats.get(f.path)
        written = since is not None and f.ctime_ns >= since  # its inode changed since the last run began
        if stat is None:
            if undecodable.get(f.path) != (f.size, f.mtime_ns):
                out.new.append(f)
            elif scan_started_ns is not None and f.ctime_ns >= scan_started_ns and _may_decode_now(f, out):
                out.new.append(f)  # remembered as not UTF-8 (or a damaged PDF), written since: read again
            else:
                out.undecodable.append(f)
                out.skipped.append(Problem(f.path, "unreadable PDF" if is_pdf(f.path) else "not valid UTF-8"))
        elif stat == (f.size, f.mtime_ns) and not mtime_is_clamped(f.mtime_ns):
            if written:
                out.rehashed += 1
                _compare_content(f, stored[f.path], out)
            else:
                out.unchanged += 1
        else:
            _compare_content(f, stored[f.path], out)
    out.deleted = _deleted(stored, found)
    if within is not None:
        out.unchanged += within.total - len(stored)  # outside the scope: no change was heard there
        _keep_undecodable_outside(out, undecodable, within)
    return out


def _keep_undecodable_outside(out: CorpusDiff, undecodable: dict[str, tuple[int, int]], within: Within) -> None:
    """The files remembered as undecodable outside the scope stay remembered (the run rewrites the list
    from what its diff found)."""
    for path, (size, mtime_ns) in undecodable.items():
        if not in_scope(path, within.deep, within.shallow):
            out.undecodable.append(FoundFile(path, "", size, mtime_ns))


def _deleted(stored: StoredFiles, found: Discovery) -> list[FileRow]:
    """The stored files the walk did not find (and that are not merely unreadable now)."""
    seen = [f.path for f in found.files if f.path in stored]
    if len(seen) + len(found.unchanged) == len(stored):  # each found once: every stored file was found
        return []
    gone = stored.stats.keys() - set(seen) - set(found.unchanged)  # set differences, not a loop over the rows
    deleted = sorted(_still_there(gone, found.unread))
    stored.prefetch(deleted)
    return [stored[path] for path in deleted]


def _may_decode_now(f: FoundFile, out: CorpusDiff) -> bool:
    """A file remembered as undecodable, written since the last run began (no hash to compare: see the
    module docstring). A text file is decoded now: still not UTF-8 (a chmod, say), it stays skipped. A PDF
    (parsing is the run's work) or a file that cannot be read now goes to the run, which says what it is."""
    out.rehashed += 1
    if is_pdf(f.path):
        return True
    try:
        read_text(f.abspath)
    except NotUTF8Error:
        return False
    except OSError:
        pass  # the run reads it and says why it cannot
    return True


def _compare_content(f: FoundFile, row: FileRow, out: CorpusDiff) -> None:
    """A file whose stat differs from its row (or whose mtime was clamped, or whose inode changed since
    the last run began): changed only if its bytes are."""
    try:
        with open(f.abspath, "rb") as fh:
            digest = hash_bytes(fh.read())
    except OSError as exc:  # kept as indexed, like an unreadable file discovery reports
        out.problems.append(Problem(f.path, exc.strerror or str(exc)))
        out.complete = False  # its row was neither confirmed nor replaced
        return
    if digest != row.hash:
        out.changed.append(f)
        return
    out.unchanged += 1
    if (row.size, row.mtime_ns) != (f.size, f.mtime_ns):  # a clamped mtime already stored: no row to rewrite
        out.touched.append((f, row))


def _still_there(gone: set[str], unread: list[str]) -> set[str]:
    """The paths of `gone` that are really gone: not an unreadable file, nor below an unreadable folder
    ("." when the root itself could not be listed). Only the few paths not found are looked at."""
    if not unread or not gone:
        return gone
    if "." in unread:
        return set()
    unread_set, unread_folders = set(unread), tuple(path + "/" for path in unread)
    return {path for path in gone if path not in unread_set and not path.startswith(unread_folders)}


class IncludeMatchesNothing(UsageError):
    """index.include leaves out every file: an index run refuses (it would delete everything), while
    `ragx status` reports it as a notice of an index that is still whole."""


def _include_matches_nothing(settings: Settings, left_out: int) -> str:
    globs = ", ".join(repr(glob) for glob in settings.index.include)
    files = "1 file" if left_out == 1 else f"{left_out} files"
    return (f"index.include [{globs}] matches none of the {files} in the corpus: nothing was indexed or deleted "
            "(globs are gitignore-style and case-sensitive, e.g. '*.md'; see `ragx config get index.include`)")
