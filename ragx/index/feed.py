"""The change feed: what `ragx watch` (ragx/index/watcher.py) heard changing, as an index run reads it.

A one-file edit in a corpus of 100,000 files used to cost an `lstat` of every file (0.2 s of syscalls
alone at a million chunks). A watcher that listened all along can say which paths may have changed, and
then only those are looked at. The hard part is knowing that it did listen all along, so the feed is
trusted only under this rule:

- The watcher writes, under `.ragx/watch/`, one log per session (a process start, or a restart after it
  lost track: a kernel queue overflow, a folder it could not watch). A log is NUL-separated records:
  `f<path>` (a file or other entry changed, appeared or went), `d<path>` (a folder did: its whole
  subtree is walked), `b<nonce>` (a barrier, below). Paths are relative to the root's real path.
- An index run first creates `.ragx/watch/barrier-<nonce>`. The watcher reads its one kernel queue in
  order, so once it has written the barrier's record, every change made before the run began is in the
  log before that record. It answers with `answer-<nonce>` ({session, offset}), and the run walks or
  stats after that answer. A run that saw every indexed file records its cursor (session, offset, and
  a fingerprint of the walk's rules) in the manifest, with its commit.
- The next run trusts the log only when the watcher answering it is in the same session as the
  recorded cursor, and the rules are the same (settings, ignore files above the root, this module's
  version). It then looks only at the paths recorded between the two barriers: whatever changed after
  the first barrier is recorded after it, and whatever changed before it, the previous run saw.
- Anything else walks every file, as without a watcher: no watcher, no answer within ANSWER_SECONDS,
  another session, other rules, a corpus with followed symlinks or hard-linked files (an edit through
  another name raises no event here), or a path the recorded changes cannot place.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

FEED_DIR = "watch"              # under the index folder (.ragx/watch)
WATCHER_FILE = "watcher.json"   # the live session: {"session", "pid", "log"}; rewritten on each restart
LOCK_FILE = "lock"              # held (flock) by the watcher for its whole life
CURSOR_KEY = "watch_cursor"     # the manifest key an index run records
# Raise when the rules below change: a cursor recorded under others makes the next run walk every file.
FEED_VERSION = 1
# How long a run waits for the watcher to answer its barrier before walking every file (an answer
# takes milliseconds: one pass of the watcher's loop).
ANSWER_SECONDS = 2.0

FILE, FOLDER, BARRIER = b"f", b"d", b"b"
# The files of .ragx/watch/ besides the two above: a run's barrier and the watcher's answer to it (a
# nonce each), and a session's log.
BARRIER_PREFIX, ANSWER_PREFIX, LOG_PREFIX = "barrier-", "answer-", "feed-"


def feed_dir(index_dir: Path) -> Path:
    return index_dir / FEED_DIR


def answer_path(folder: Path, nonce: str) -> Path:
    return folder / f"{ANSWER_PREFIX}{nonce}"


def log_name(session: str) -> str:
    return f"{LOG_PREFIX}{session}.log"


@dataclass(frozen=True)
class Answer:
    """The watcher's answer to a barrier: its session, and the log offset just past the barrier's record."""

    session: str
    offset: int
    log: Path
    untracked: str | None = None  # the watcher could not keep a feed (why): walk every file


@dataclass(frozen=True)
class Focus:
    """Where an index run looks when the feed is trusted: folders to walk whole (`deep`), and folders
    whose own entries only are listed (`shallow`); "" is the root."""

    deep: tuple[str, ...]
    shallow: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.deep and not self.shallow


@dataclass(frozen=True)
class Heard:
    """What the feed offers an index run: the watcher's answer, the focus when the recorded cursor is
    trusted (None: walk every file), why not, for the report, and the walk's rules as this run saw them
    (what its cursor records; "" without an answer)."""

    answer: Answer | None
    focus: Focus | None
    why_not: str | None
    rules: str = ""


def _watcher_alive(folder: Path) -> bool:
    """Whether a watcher holds the feed's lock (the OS releases it when the process dies)."""
    import fcntl

    try:
        fd = os.open(folder / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def ask(index_dir: Path, timeout: float = ANSWER_SECONDS) -> Answer | None:
    """Put a barrier in the watcher's queue and wait for its answer; None without an answer in time
    (the run then walks every file)."""
    folder = feed_dir(index_dir)
    nonce = uuid.uuid4().hex
    barrier, answer = folder / f"{BARRIER_PREFIX}{nonce}", answer_path(folder, nonce)
    try:
        os.close(os.open(barrier, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except OSError:
        return None
    deadline, pause = time.monotonic() + timeout, 0.0002
    try:
        while True:
            try:
                data = json.loads(answer.read_bytes())
                untracked = data.get("untracked")
                return Answer(str(data["session"]), int(data["offset"]), folder / str(data["log"]),
                              None if untracked is None else str(untracked))
            except FileNotFoundError:
                pass
            except (OSError, ValueError, KeyError, TypeError):
                return None
            if time.monotonic() > deadline:
                return None
            time.sleep(pause)
            pause = min(pause * 2, 0.005)
    finally:
        for path in (barrier, answer):
            try:
                path.unlink()
            except OSError:
                pass


def rules_fingerprint(settings_key: str, files_above: list[tuple[str, int, int, int]]) -> str:
    """The walk's rules as a run sees them: the discovery settings, the ignore files above the root
    (path, size, mtime, ctime: none of their edits raises an event in the watched tree) and FEED_VERSION."""
    text = json.dumps([FEED_VERSION, settings_key, files_above], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def recorded_cursor(manifest: dict) -> dict | None:
    cursor = manifest.get(CURSOR_KEY)
    if (isinstance(cursor, dict) and isinstance(cursor.get("session"), str) and isinstance(cursor.get("rules"), str)
            and isinstance(cursor.get("offset"), int) and cursor["offset"] >= 0):
        return cursor
    return None


def cursor_of(answer: Answer, rules: str, unsafe: str | None = None) -> dict:
    """`unsafe`: why the feed cannot stand in for a walk of this corpus (Discovery.feed_unsafe), if so."""
    return {"session": answer.session, "offset": answer.offset, "rules": rules} | ({"unsafe": unsafe} if unsafe else {})


def hear(index_dir: Path, manifest: dict, rules_now: Callable[[], str]) -> Heard:
    """Ask the watcher, then decide whether the recorded cursor lets this run look at the changes alone.
    `rules_now`: the walk's rules fingerprint (rules_fingerprint), worked out only when a watcher answers."""
    if not _watcher_alive(feed_dir(index_dir)):
        return Heard(None, None, None)  # no watcher: the plain walk, nothing to say
    answer = ask(index_dir)
    if answer is None:
        return Heard(None, None, f"`ragx watch` did not answer within {ANSWER_SECONDS:g} s: every file is walked")
    if answer.untracked is not None:
        return Heard(None, None, f"`ragx watch` is not tracking ({answer.untracked}): every file is walked")
    rules = rules_now()
    cursor = recorded_cursor(manifest)
    if cursor is None:
        why = "the watcher's first run: every file is walked once"
    elif cursor["session"] != answer.session:
        why = "the watcher restarted since the last run: every file is walked once"
    elif isinstance(cursor.get("unsafe"), str):
        why = f"every file is walked: {cursor['unsafe']} (an edit there may raise no event under the indexed path)"
    elif cursor["rules"] != rules:
        why = "the walk's rules changed (settings, or an ignore file above the root): every file is walked"
    elif cursor["offset"] > answer.offset:
        why = "the recorded cursor is past the watcher's log"
    else:
        try:
            return Heard(answer, focus_of(read_records(answer.log, cursor["offset"], answer.offset)), None, rules)
        except (OSError, ValueError) as exc:
            why = f"the watcher's log cannot be read ({exc})"
    return Heard(answer, None, why, rules)


def read_records(log: Path, start: int, end: int) -> list[tuple[bytes, str]]:
    """The (kind, path) records of `log` between two barrier offsets."""
    with open(log, "rb") as fh:
        fh.seek(start)
        data = fh.read(end - start)
    if len(data) != end - start:
        raise ValueError("the log is shorter than its recorded offsets")
    records = []
    for record in data.split(b"\0")[:-1]:
        kind, path = record[:1], record[1:]
        if kind in (FILE, FOLDER):
            records.append((kind, os.fsdecode(path)))
    return records


def focus_of(records: list[tuple[bytes, str]]) -> Focus:
    """Folders to walk whole (a folder's own record; a .gitignore's folder, its rules changed) and
    folders whose entries are listed (each file record's folder), none inside a folder walked whole."""
    deep: set[str] = set()
    shallow: set[str] = set()
    for kind, path in records:
        parent = path.rpartition("/")[0]
        if kind == FOLDER:
            deep.add(path)
            shallow.add(parent)  # the folder's own entry in its parent (appeared, went)
        elif path.rpartition("/")[2] == ".gitignore":
            deep.add(parent)
        else:
            shallow.add(parent)
    if "" in deep:
        return Focus(("",), ())
    outer: set[str] = set()
    for path in sorted(deep, key=lambda p: p.count("/")):  # shallower first: a folder before those below it
        if not _under_any(path, outer):
            outer.add(path)
    return Focus(tuple(sorted(outer)), tuple(sorted(f for f in shallow if not _under_any(f, outer))))


def _under_any(path: str, folders: set[str]) -> bool:
    """Whether `path` is one of `folders` or below one (a look-up per ancestor, not a scan of folders)."""
    while True:
        if path in folders:
            return True
        if not path:
            return False
        path = path.rpartition("/")[0]


def in_scope(path: str, deep: tuple[str, ...], shallow: tuple[str, ...]) -> bool:
    """Whether a diff limited to these folders looks at `path` (below a deep folder, or in a shallow one)."""
    parent = path.rpartition("/")[0]
    return parent in shallow or _under_any(parent, set(deep))
