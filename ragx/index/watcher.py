"""`ragx watch`: listen to a corpus through the kernel (inotify, Linux) and keep the change feed that
index runs read (ragx/index/feed.py says when they trust it).

One inotify instance holds a watch on every folder the walk can enter (dot-folders, node_modules and
__pycache__ aside: the walk never enters them) and on `.ragx/watch/`, where index runs put their
barriers. Its one queue is read in order, so a barrier's record follows every change made before it.

The watcher never guesses: whatever would leave a change unrecorded ends the session, and the next
session starts from scratch (every folder watched again, a new log), which makes the next index run
walk every file once. Such are a kernel queue overflow, a folder that cannot be watched (permissions,
the watch limit) and the root moved away. While a session cannot start, barriers are answered "not
tracking", with the reason, and each one retries.

A new folder is watched when its creation is read, a moment after it appeared: its record is a folder
record, so the next run walks all of it, including what was written there before the watch began.
"""

from __future__ import annotations

import errno
import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..ingest.discover import ALWAYS_SKIPPED_DIRS
from .feed import (
    ANSWER_PREFIX,
    BARRIER,
    BARRIER_PREFIX,
    FILE,
    FOLDER,
    LOCK_FILE,
    LOG_PREFIX,
    WATCHER_FILE,
    answer_path,
    feed_dir,
    log_name,
)

# File systems where changes made by another machine raise no event here: a feed would be blind to them.
_REMOTE = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre", "gpfs",
                     "fuse.sshfs", "fuse.rclone", "fuse.s3fs", "fuse.gcsfuse", "davfs", "fuse.davfs2"})
# A log past this size starts a new session (one walk of every file), so the feed never grows without end.
MAX_LOG_BYTES = 64 * 2**20


class _Lost(Exception):
    """Something that would leave changes unrecorded: the session ends (its reason is shown)."""


def remote_filesystem(path: str) -> str | None:
    """The type of the network file system holding `path`, if it is one (from /proc/self/mountinfo)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    best, kind = "", None
    for line in lines:
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) < 5 or not rest:
            continue
        mount = parts[4].replace("\\040", " ")
        if (path == mount or path.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best):
            best, kind = mount, rest.split()[0]
    return kind if kind in _REMOTE else None


class Watcher:
    """The feed of one corpus. `say`: one line for the user per event worth telling (sessions, losses)."""

    def __init__(self, root: Path, index_dir: Path, say: Callable[[str], None] = lambda line: None):
        try:
            import inotify_simple
        except ImportError:
            raise UsageError("`ragx watch` needs inotify (Linux) and the inotify_simple package") from None
        self._in = inotify_simple
        self.root_real = os.path.realpath(root)
        if not os.path.isdir(self.root_real):
            raise UsageError(f"{root} is not a folder")
        remote = remote_filesystem(self.root_real)
        if remote is not None:
            raise UsageError(f"{root} is on a network file system ({remote}): changes made by other machines raise no "
                             "event here, so `ragx watch` cannot keep a feed of them (index runs walk every file)")
        self.folder = feed_dir(index_dir)
        self.say = say
        flags = inotify_simple.flags
        self.mask = (flags.MODIFY | flags.ATTRIB | flags.CREATE | flags.DELETE | flags.MOVED_FROM | flags.MOVED_TO
                     | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR | flags.DONT_FOLLOW)
        self.inotify: Any = None  # an inotify_simple.INotify while a session runs
        self.paths: dict[int, str] = {}   # watch descriptor -> folder relative to the root ("" = the root)
        self.control = -1                 # the watch descriptor of .ragx/watch
        self.session = ""
        self.log_name = ""
        self.log_fd = -1
        self.offset = 0
        self.untracked: str | None = None  # why the session cannot be trusted (None: it can)
        self.lock_fd = -1

    # ---- life

    def claim(self) -> None:
        """Take the feed's lock for this process's life; UsageError if another watcher has it."""
        import fcntl

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise UsageError(f"`ragx watch` cannot write {self.folder} ({(exc.strerror or str(exc)).lower()})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UsageError(f"another `ragx watch` is already watching {self.root_real}") from None
        self.lock_fd = fd
        for stale in self.folder.iterdir():  # left by a watcher that was killed: no run can trust them now
            if stale.name.startswith((LOG_PREFIX, ANSWER_PREFIX)):
                stale.unlink(missing_ok=True)

    def start(self) -> None:
        """A new session: a fresh inotify instance, every folder watched, a new log."""
        self._close_inotify()
        self.inotify = self._in.INotify()
        flags = self._in.flags
        self.control = self.inotify.add_watch(self.folder, flags.CREATE | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR)
        self.paths = {}
        try:
            self._watch_tree(self.root_real, "")
            self.untracked = None
        except _Lost as exc:
            for wd in list(self.paths):
                self._unwatch(wd)
            self.untracked = str(exc)
        self._new_log()  # and the barriers waiting (made before this session began): their runs walk every file
        self._answer([name[len(BARRIER_PREFIX):] for name in os.listdir(self.folder) if name.startswith(BARRIER_PREFIX)], [])

    def close(self) -> None:
        self._close_inotify()
        for name in (WATCHER_FILE, self.log_name):
            if name:
                try:
                    (self.folder / name).unlink()
                except OSError:
                    pass
        if self.log_fd >= 0:
            os.close(self.log_fd)
            self.log_fd = -1
        if self.lock_fd >= 0:
            os.close(self.lock_fd)
            self.lock_fd = -1

    def _close_inotify(self) -> None:
        if self.inotify is not None:
            self.inotify.close()
            self.inotify = None

    def _new_log(self) -> None:
        old = self.log_name
        self.session = uuid.uuid4().hex
        self.log_name = log_name(self.session)
        if self.log_fd >= 0:
            os.close(self.log_fd)
        self.log_fd = os.open(self.folder / self.log_name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.offset = 0
        _write_json(self.folder / WATCHER_FILE, {"session": self.session, "pid": os.getpid(), "log": self.log_name})
        if old:
            try:
                (self.folder / old).unlink()
            except OSError:
                pass

    # ---- watches

    def _watch_tree(self, top: str, rel: str) -> None:
        """Watch `top` and every folder below it the walk may enter; each folder is watched before it is
        listed, so an entry made meanwhile is either listed or heard."""
        stack = [(top, rel)]
        while stack:
            path, rel_path = stack.pop()
            try:
                wd = self.inotify.add_watch(path, self.mask)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ENOTDIR) and rel_path:
                    continue  # gone already: the record of a folder above it makes the next run walk there
                if exc.errno == errno.ENOSPC:
                    raise _Lost("the inotify watch limit is reached (raise it: `sudo sysctl fs.inotify.max_user_watches=1048576`)") from None
                raise _Lost(f"cannot watch {rel_path or '.'}: {(exc.strerror or str(exc)).lower()}") from None
            self.paths[wd] = rel_path
            try:
                with os.scandir(path) as it:
                    entries = list(it)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise _Lost(f"cannot list {rel_path or '.'}: {(exc.strerror or str(exc)).lower()}") from None
            for entry in entries:
                name = entry.name
                if name[0] == "." or name in ALWAYS_SKIPPED_DIRS:
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, f"{rel_path}/{name}" if rel_path else name))
                except OSError:
                    continue

    def _unwatch(self, wd: int) -> None:
        self.paths.pop(wd, None)
        try:
            self.inotify.rm_watch(wd)
        except OSError:
            pass

    def _unwatch_tree(self, rel: str) -> None:
        """A folder moved away: its watches (and those below it) would name paths it no longer has."""
        below = rel + "/"
        for wd in [wd for wd, path in self.paths.items() if path == rel or path.startswith(below)]:
            self._unwatch(wd)

    # ---- events

    def read(self, timeout_ms: int) -> bool:
        """Read what the queue holds (waiting up to `timeout_ms`), record it, answer barriers. True when
        a path was recorded."""
        events = self.inotify.read(timeout=timeout_ms)
        if not events:
            return False
        try:
            return self._handle(events)
        except _Lost as exc:
            self.say(f"restarting the feed: {exc}; the next index run walks every file once")
            if not (self.folder / LOCK_FILE).exists():  # .ragx was removed: take the lock of the new folder
                os.close(self.lock_fd)
                self.lock_fd = -1
                self.claim()
            self.start()
            return True

    def _handle(self, events) -> bool:
        flags = self._in.flags
        records: dict[bytes, None] = {}  # in order, each once
        barriers: list[str] = []
        for ev in events:
            mask = ev.mask
            if mask & flags.Q_OVERFLOW:
                raise _Lost("the kernel's event queue overflowed")
            if ev.wd == self.control:
                if mask & (flags.DELETE_SELF | flags.MOVE_SELF | flags.IGNORED):
                    raise _Lost("the index folder was removed")
                if mask & flags.CREATE and ev.name.startswith(BARRIER_PREFIX):
                    barriers.append(ev.name[len(BARRIER_PREFIX):])
                continue
            base = self.paths.get(ev.wd)
            if base is None:
                continue  # a watch removed already
            if mask & flags.IGNORED:
                self.paths.pop(ev.wd, None)
                continue
            if mask & (flags.DELETE_SELF | flags.MOVE_SELF):
                if base == "":
                    raise _Lost("the root folder was moved or deleted")
                continue  # its parent's event recorded it
            name = ev.name
            if base == "" and name == self.folder.parent.name and mask & (flags.DELETE | flags.MOVED_FROM):
                raise _Lost("the index folder was removed")  # (no DELETE_SELF comes while the log is open)
            if not name or (name[0] == "." and name != ".gitignore"):
                continue
            rel = f"{base}/{name}" if base else name
            if mask & flags.ISDIR:
                if name[0] == "." or name in ALWAYS_SKIPPED_DIRS:
                    continue
                records[FOLDER + os.fsencode(rel) + b"\0"] = None
                if mask & flags.MOVED_FROM:
                    self._unwatch_tree(rel)
                elif mask & (flags.CREATE | flags.MOVED_TO) or (mask & flags.ATTRIB and rel not in self.paths.values()):
                    if not self.untracked:
                        self._watch_tree(os.path.join(self.root_real, rel), rel)
            else:
                records[FILE + os.fsencode(rel) + b"\0"] = None
        if self.untracked and barriers:
            self.start()  # try again (it answers the waiting barriers): the runs that ask walk every file in any case
            return bool(records)
        self._answer(barriers, list(records))
        if self.offset > MAX_LOG_BYTES:
            self.say("the feed's log is full: starting a new one; the next index run walks every file once")
            self.start()
        return bool(records)

    def _answer(self, barriers: list[str], records: list[bytes]) -> None:
        """Write the records, then each barrier's record, in one write; then answer each barrier with the
        offset just past its record."""
        ends = []
        data = b"".join(records)
        for nonce in barriers:
            data += BARRIER + nonce.encode() + b"\0"
            ends.append(self.offset + len(data))
        if data:
            written = os.write(self.log_fd, data)
            if written != len(data):
                raise OSError(errno.EIO, "short write to the feed's log")
            self.offset += written
        for nonce, end in zip(barriers, ends):
            answer = {"session": self.session, "offset": end, "log": self.log_name}
            if self.untracked:
                answer["untracked"] = self.untracked
            _write_json(answer_path(self.folder, nonce), answer)


def _write_json(path: Path, value: dict) -> None:
    """Whole or not at all: a reader never sees half of it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)


def watch(root: Path, index_dir: Path, say: Callable[[str], None], on_quiet: Callable[[], bool] | None = None,
          quiet_seconds: float = 1.0, stop: Callable[[], bool] = lambda: False) -> None:
    """Run until `stop()` or an interrupt. `on_quiet`: called when recorded changes have settled (no
    new one for `quiet_seconds`), e.g. to start an index run; False: not now, ask again."""
    watcher = Watcher(root, index_dir, say)
    watcher.claim()
    try:
        watcher.start()
        if watcher.untracked:
            say(f"not tracking yet: {watcher.untracked}; index runs walk every file until it can")
        say(f"watching {len(watcher.paths)} folder(s) under {watcher.root_real}")
        # With on_quiet, the first run comes at once: it brings the index up to date and records the cursor.
        pending, last = on_quiet is not None, time.monotonic() - quiet_seconds
        while not stop():
            if watcher.read(200):
                pending, last = True, time.monotonic()
            elif pending and on_quiet is not None and time.monotonic() - last >= quiet_seconds:
                pending = not on_quiet()
    finally:
        watcher.close()
