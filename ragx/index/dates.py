"""Each indexed file's date and where it came from, stored at index time for `--since/--until/--recent`.

Sources, first that answers wins:
1. `frontmatter`: `updated:` (else `date:`) in a leading `---` YAML block (read from the file's first
   chunk, which holds it): an ISO date or date-time, or an integer epoch time (Dendron writes
   `updated: 1670254035385`, milliseconds; see EPOCH_MS). A value that reads as neither is skipped;
2. `git`: the last commit touching the file, from ONE `git log` over the corpus (no call per file);
3. `mtime`: the modification time recorded at index time.

Every date read here (frontmatter, git, `--since/--until`) must be one `iso` can print, a UTC time in
the years 1 to 9999 (`printable`): a date outside it is refused where it is read, like any unreadable
date, so that no stored date can make a later query fail.
"""

from __future__ import annotations

import os
import re
import subprocess
from datetime import date, datetime, timezone
from pathlib import Path

FRONTMATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
FRONTMATTER_KEYS = ("updated", "date")  # `updated` says when the content last changed: prefer it
GIT_SECONDS = 30.0
# NUL-separated (-z): names are written verbatim, whatever quotes, tabs or newlines they hold (without
# -z git quotes them and they match no indexed path). Each commit's line is a NUL then its time, so an
# empty field marks a commit (see `parse_git_log`). --no-follow and --no-show-signature undo user
# settings (log.follow, log.showSignature) that would change what is listed or add lines to it.
GIT_LOG = ("log", "--relative", "--no-renames", "--no-follow", "--no-show-signature", "-z",
           "--format=%x00%ct", "--name-only")
# An integer frontmatter date is an epoch time: from EPOCH_MS on milliseconds, from EPOCH_S on seconds.
# Both are 1973-03-03 (10^11 ms = 10^8 s), so the ranges do not overlap (10^11 seconds would be the year
# 5138). A smaller integer (a year such as `date: 2024`, a count) is no epoch time.
EPOCH_MS = 10**11
EPOCH_S = 10**8
FIRST_SECOND = datetime(1, 1, 1, tzinfo=timezone.utc).timestamp()  # the span `iso` can print
LAST_SECOND = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc).timestamp()
# The version of the rules above, kept in the manifest with the dates: raised whenever a file would now
# be dated differently, so that an index dated under older rules re-dates every file once (2: integer
# epoch times; 3: dates `iso` cannot print refused, git names with quotes, tabs or newlines dated; an
# index without the key was dated by 1, ISO dates only).
DATE_RULES = 3


def printable(seconds: float) -> bool:
    """Whether `iso` can print this moment: its UTC time lies in the years 1 to 9999. A frontmatter date
    of 0001-01-01T00:00:00+14:00 is a valid ISO date whose UTC time is in the year 0."""
    return FIRST_SECOND <= seconds < LAST_SECOND + 1


def bare_day(text: str) -> date | None:
    """The day `text` names when it is an ISO date without a time (2024-05-31, 20240531, 2024-W22-5),
    else None: the one test of "a bare day" (its start when parsed, its end for --until)."""
    try:
        return date.fromisoformat(text.strip().strip("'\""))
    except ValueError:
        return None


def parse_date(text: str) -> float | None:
    """Seconds since the epoch (UTC when no zone is given) of an ISO date or date-time, else None (also
    when its UTC time is one `iso` cannot print: see `printable`)."""
    text = text.strip().strip("'\"")
    if not text:
        return None
    day = bare_day(text)
    if day is not None:
        return datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp()  # always printable
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    seconds = (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).timestamp()
    return seconds if printable(seconds) else None


def epoch_date(value: int) -> float | None:
    """Seconds since the epoch of an integer epoch time: milliseconds from EPOCH_MS on, seconds from
    EPOCH_S on; None when smaller, after 9999-12-31 or not an int (a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    value = min(value, 10**20)  # far past 9999 either way; a larger int would overflow the division
    seconds = value / 1000 if value >= EPOCH_MS else float(value) if value >= EPOCH_S else None
    return seconds if seconds is not None and printable(seconds) else None


def frontmatter_value(value: str | int) -> float | None:
    """Seconds since the epoch of a frontmatter date (its text, or the int YAML makes of it): 9 digits
    or more are an epoch time (`epoch_date`), anything else an ISO date or date-time (`parse_date`,
    which also reads YYYYMMDD); None when neither. Digits never go to `parse_date`: it would read some
    13-digit millisecond values as a basic-format date-time (2022120512345 -> 2022-12-05T23:45)."""
    if not isinstance(value, str):
        return epoch_date(value)
    text = value.strip().strip("'\"")
    if text.isascii() and text.isdigit() and len(text) >= 9:
        return epoch_date(int(text)) if len(text) <= 20 else None  # 20 digits are far past 9999 either way
    return parse_date(text)


def frontmatter_date(text: str) -> float | None:
    m = FRONTMATTER.match(text)
    if not m:
        return None
    fields = dict(re.findall(r"^([A-Za-z_]+)[ \t]*:[ \t]*(.*?)[ \t]*$", m.group(1), flags=re.M))
    for key in FRONTMATTER_KEYS:
        if key in fields and (when := frontmatter_value(fields[key])) is not None:
            return when
    return None


def git_dates(root: Path) -> dict[str, float]:
    """Path (relative to `root`) -> commit time of the last commit touching it; {} outside git and
    whenever git fails in any way: its files then fall back to their mtime, the run goes on."""
    cmd = ["git", "-C", str(root), *GIT_LOG, "--", "."]
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=GIT_SECONDS, check=False)
    except (OSError, ValueError, subprocess.SubprocessError):  # no git, a timeout, a NUL in the root
        return {}
    if done.returncode != 0:
        return {}
    # Names are bytes; os.fsdecode turns them into the str os.scandir gives discovery for the same
    # bytes, so a git path equals the indexed path. A name that is not UTF-8 keeps its bytes as
    # surrogates: discovery refuses such files, so it matches no indexed path and is merely unused.
    try:
        return parse_git_log(os.fsdecode(done.stdout))
    except ValueError:  # not the shape asked for (a git setting or version that writes more): no dates
        return {}


def parse_git_log(text: str) -> dict[str, float]:
    """Path -> time of the newest commit naming it, from `git log` run with GIT_LOG's options.

    Each commit is written as NUL, its time, NUL, then, when it names files (a merge names none), a
    newline and each name followed by NUL. A name is never empty, so a double NUL only ever comes
    before a commit: split on it, the text gives one block per commit, whatever the names hold.
    Raises ValueError on text of another shape."""
    if not text:
        return {}  # no commit touches the root
    if not (text.startswith("\0") and text.endswith("\0")):
        raise ValueError("git log output does not start and end with NUL")
    out: dict[str, float] = {}
    for block in reversed(text[1:-1].split("\0\0")):  # oldest first: a newer commit's time overwrites
        when, *names = block.split("\0")
        seconds = float(int(when))  # int(): the field holds digits, never "nan" or "1e9"
        if not names or not printable(seconds):  # a merge; a forged commit time past 9999
            continue
        if not names[0].startswith("\n"):
            raise ValueError("git log output: no newline before a commit's names")
        names[0] = names[0][1:]
        out.update(dict.fromkeys(names, seconds))
    return out


def leading_text(path: Path, end: int, cap: int = 65536) -> str:
    """The text of a file before byte `end` (its frontmatter block, which no chunk holds); "" if unreadable."""
    try:
        with open(path, "rb") as fh:
            return fh.read(min(end, cap)).decode("utf-8", errors="replace")
    except OSError:
        return ""


def date_rows(files: list[tuple[int, str, int]], heads: dict[int, str], from_git: dict[str, float]) -> list[tuple[str, float, str]]:
    """(path, date, source) of every indexed file: `files` are (id, path, mtime_ns) rows, `heads` each
    file's first chunk text by file id, `from_git` the output of `git_dates` (the SQL is Store's)."""
    rows = []
    for file_id, path, mtime_ns in files:
        head = heads.get(file_id)
        when = frontmatter_date(head) if head and head.startswith(("---", "\ufeff---")) else None
        if when is not None:
            rows.append((path, when, "frontmatter"))
        elif path in from_git:
            rows.append((path, from_git[path], "git"))
        else:
            rows.append((path, mtime_ns / 1e9, "mtime"))
    return rows


def iso(seconds: float) -> str:
    """ISO 8601 in UTC to the second; the year always has four digits (strftime's %Y drops the zeros
    of years before 1000 on glibc)."""
    # Dates are refused outside that span where they are read (printable); an index dated before that
    # rule may still hold one until its next run re-dates it: shown at the edge, never a crash.
    t = datetime.fromtimestamp(min(max(seconds, FIRST_SECOND), LAST_SECOND), tz=timezone.utc)
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}Z"
