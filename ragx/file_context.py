"""What each query result says about its file: its date (and where the date came from), whether the
file changed since it was indexed (`stale`), and the time filters and boosts of `ragx query`.

- date: from the index's `file_dates` (ragx/index/dates.py: frontmatter, else git, else mtime).
- stale: the file's size or mtime differs from the indexed row, or it is gone. No re-hash: a `touch`
  counts as stale too (cheap to check on every query; `ragx index` then only updates the row). Size
  and mtime can also stay while the bytes change (`cp -p`, `touch -r`, `rsync -t`, a tar extraction):
  a file whose inode changed (`st_ctime_ns`, from the same stat) at or after the last index run's scan
  start less 2 s (the manifest's `scan_started_ns`, ragx/index/diff.py) is then read and its hash
  compared with the row's: the rule `ragx index` applies. Calling such a file stale unread would be
  cheaper, but would flag every file written in the seconds before a run, right after it; this costs
  nothing for the other files, and one read of a result's file only in that case (until the next run).
- `--since/--until` keep results whose file date lies in the range; `--recent`/`--oldest` multiply each
  score by 1 + TIME_BOOST x (the file's place between the oldest and newest candidate date, 0..1, or
  its mirror). Both act on the candidate pool of the search (every result it can rank), not on files
  the retrieval pass never reached.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import UsageError
from .index.dates import bare_day, iso, parse_date
from .index.store import written_since

if TYPE_CHECKING:  # pragma: no cover
    from .index.store import Store

TIME_BOOST = 0.5
WIDE_TOP = 1000  # results asked of the search when a time option must see the whole candidate pool
DAY = 86400.0


@dataclass(frozen=True)
class TimeOptions:
    since: float | None = None
    until: float | None = None
    boost: str | None = None  # "recent", "oldest" or None

    @property
    def active(self) -> bool:
        return self.since is not None or self.until is not None or self.boost is not None

    def describe(self) -> dict[str, Any]:
        return {"since": iso(self.since) if self.since is not None else None,
                "until": iso(self.until) if self.until is not None else None, "boost": self.boost}


def time_options(since: str | None, until: str | None, recent: bool, oldest: bool) -> TimeOptions:
    if recent and oldest:
        raise UsageError("--recent and --oldest exclude each other")
    start = _date_arg("--since", since)
    end = _date_arg("--until", until)
    if end is not None and until is not None and bare_day(until) is not None:
        end += DAY - 1e-3  # a bare day means up to the end of that day, however it is written
    if start is not None and end is not None and start > end:
        raise UsageError("--since is after --until")
    return TimeOptions(start, end, "recent" if recent else "oldest" if oldest else None)


def _date_arg(flag: str, text: str | None) -> float | None:
    if text is None:
        return None
    when = parse_date(text)
    if when is None:
        raise UsageError(f"{flag} wants a date like 2024-05-31 or 2024-05-31T12:00:00, got {text!r}")
    return when


def annotate(doc: dict[str, Any], store: "Store", root: Path, opts: TimeOptions | None, top: int) -> dict[str, Any]:
    """Add date, date_source and stale to every result; apply time filters and boosts; keep `top`."""
    results = doc["results"]
    info = store.file_info(sorted({r["file"] for r in results}))
    for r in results:
        size, mtime_ns, when, source = info.get(r["file"], (None, None, None, None))[:4]
        r["date"] = iso(when) if when is not None else None
        r["date_source"] = source
        r["_when"] = when
    if opts is not None and opts.active:
        results = _apply_time(results, opts)
        doc["time"] = opts.describe() | {"candidates": len(doc["results"]), "kept": len(results)}
        if doc["results"] and not results:  # the search found something; the dates ruled it all out
            doc["time"]["reason"] = f"no result's file is dated {_range_words(opts)} - {_found_words(doc['results'], opts)}"
        if isinstance(doc.get("params"), dict):
            doc["params"]["top"] = top  # the search was asked for every candidate; the user asked for `top`
    results = results[:top]
    stale = _stale_files(root, {r["file"] for r in results}, info, written_since(store.scan_started_ns()))
    for rank, r in enumerate(results, 1):
        r["rank"] = rank
        r.pop("_when")
        r["stale"] = stale[r["file"]]
    doc["results"] = results
    return doc


def _range_words(opts: TimeOptions) -> str:
    """--since/--until in words: "between 2024-05-31 and 2024-06-30", "on or after ...", "on or before ...";
    a cut-off within a day keeps its time ("on or after 2024-06-01T09:00:00Z")."""
    since = _cutoff(opts.since, "00:00:00") if opts.since is not None else None
    until = _cutoff(opts.until, "23:59:59") if opts.until is not None else None
    if since and until:
        return f"between {since} and {until}"
    return f"on or after {since}" if since else f"on or before {until}"


def _cutoff(seconds: float, whole_day: str) -> str:
    """The day alone when the cut-off is that day's start (--since) or end (--until), else the moment."""
    moment = iso(seconds)
    return moment[:10] if moment[11:19] == whole_day else moment


def _found_words(results: list[dict[str, Any]], opts: TimeOptions) -> str:
    """Where the results the dates ruled out lie: "3 found before it" (--since), "after it" (--until),
    "outside it" (both); files without a date are counted apart ("1 undated")."""
    undated = sum(r["_when"] is None for r in results)
    side = "outside" if opts.since is not None and opts.until is not None else "before" if opts.since is not None else "after"
    words = [f"{len(results) - undated} found {side} it"] if undated < len(results) else []
    return ", ".join(words + ([f"{undated} undated"] if undated else []))


def _apply_time(results: list[dict[str, Any]], opts: TimeOptions) -> list[dict[str, Any]]:
    when = np.array([r["_when"] if r["_when"] is not None else np.nan for r in results], dtype=np.float64)
    keep = np.ones(len(results), dtype=bool)
    if opts.since is not None:
        keep &= when >= opts.since
    if opts.until is not None:
        keep &= when <= opts.until
    kept = [r for r, k in zip(results, keep.tolist()) if k]
    when = when[keep]
    if opts.boost is None or not kept:
        return kept
    known = ~np.isnan(when)
    place = np.zeros(len(kept))  # a file without a date gets no boost
    if known.any():
        lo, hi = np.nanmin(when), np.nanmax(when)
        place[known] = (when[known] - lo) / (hi - lo) if hi > lo else 1.0
        if opts.boost == "oldest":
            place[known] = 1.0 - place[known]
    scores = np.array([r["score"] for r in kept]) * (1.0 + TIME_BOOST * place)
    for r, s, p in zip(kept, scores.tolist(), place.tolist()):
        r["score"] = s
        r["time_boost"] = round(TIME_BOOST * p, 6)
    order = np.lexsort((np.arange(len(kept)), -scores))  # ties keep the search's order
    return [kept[i] for i in order.tolist()]


def mark_stale(doc: dict[str, Any], store: "Store", root: Path) -> dict[str, Any]:
    """`stale` on every located entry of an inspect document (the document itself when it names a
    `file`, and the entries of its `chunks` / `neighbors` lists): the same test as a search result's,
    against the file rows of the caller's read transaction."""
    entries = [doc] if "file" in doc else []
    for key in ("chunks", "neighbors"):
        entries += [e for e in doc.get(key, ()) if isinstance(e, dict) and "file" in e]
    info = store.file_info(sorted({e["file"] for e in entries}))
    stale = _stale_files(root, {e["file"] for e in entries}, info, written_since(store.scan_started_ns()))
    for e in entries:
        e["stale"] = stale[e["file"]]
    return doc


def _stale_files(root: Path, paths: set[str], info: dict[str, tuple], since: int | None) -> dict[str, bool]:
    """path -> stale, each file judged once; `info`: Store.file_info; `since`: store.written_since."""
    out = {}
    for path in paths:
        row = info.get(path)
        out[path] = True if row is None else _stale(root / path, row[0], row[1], row[4], since)
    return out


def _stale(path: Path, size: int, mtime_ns: int, digest: str, since: int | None) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return True  # deleted or unreadable since it was indexed
    if st.st_size != size or st.st_mtime_ns != mtime_ns:
        return True
    if since is None or st.st_ctime_ns < since:
        return False  # not written since the last index run began (see the module docstring)
    from .ingest.content_hash import hash_bytes

    try:
        with open(path, "rb") as fh:
            return hash_bytes(fh.read()) != digest
    except OSError:
        return True
