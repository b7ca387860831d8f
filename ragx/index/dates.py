"""Each indexed file's date and where it came from, stored at index time for `--since/--until/--recent`.

Sources, first that answers wins:
1. `frontmatter`: `updated:` (else `date:`) in a leading `---` YAML block (read from the file's first
   chunk, which holds it);
2. `git`: the last commit touching the file, from ONE `git log` over the corpus (no call per file);
3. `mtime`: the modification time recorded at index time.
"""

from __future__ import annotations

import re
import subprocess
from datetime import date, datetime, timezone
from pathlib import Path

FRONTMATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
FRONTMATTER_KEYS = ("updated", "date")  # `updated` says when the content last changed: prefer it
GIT_SECONDS = 30.0
MARK = "\x01"  # starts each commit's line in the git log output; never in a path


def parse_date(text: str) -> float | None:
    """Seconds since the epoch (UTC when no zone is given) of an ISO date or date-time, else None."""
    text = text.strip().strip("'\"")
    if not text:
        return None
    try:
        if len(text) == 10:
            d = date.fromisoformat(text)
            return datetime(d.year, d.month, d.day, tzinfo=timezone.utc).timestamp()
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).timestamp()


def frontmatter_date(text: str) -> float | None:
    m = FRONTMATTER.match(text)
    if not m:
        return None
    fields = dict(re.findall(r"^([A-Za-z_]+)[ \t]*:[ \t]*(.*?)[ \t]*$", m.group(1), flags=re.M))
    for key in FRONTMATTER_KEYS:
        if key in fields and (when := parse_date(fields[key])) is not None:
            return when
    return None


def git_dates(root: Path) -> dict[str, float]:
    """Path (relative to `root`) -> commit time of the last commit touching it; {} outside git."""
    cmd = ["git", "-c", "core.quotePath=false", "-C", str(root), "log", "--relative", "--no-renames",
           f"--format={MARK}%ct", "--name-only", "--", "."]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=GIT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0:
        return {}
    out: dict[str, float] = {}
    when = 0.0
    for line in done.stdout.splitlines():  # newest commit first: keep each path's first sighting
        if line.startswith(MARK):
            when = float(line[1:])
        elif line and line not in out:
            out[line] = when
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
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
