"""What each manifest value must look like, checked where the manifest is read (Store.manifest).

A value ragx did not write (a hand edit, a restored backup of another version, a damaged row) used to
surface as `internal error: ValueError` from whichever command first did arithmetic on it. Now every
read names the key and the repair; a full index run (which rebuilds everything the manifest
describes) starts from the values that pass and drops the others. Keys not listed here are kept
as they are: they belong to features that check their own.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from ..errors import FULL_RUN, CorruptIndexError

REPAIR = FULL_RUN


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _positive(v: Any) -> bool:
    return _count(v) and v > 0


# Chunk ids stay below this: the chunk table's fingerprint sums them exactly in int64 (store/integrity.py)
# up to 100 million chunks, and a million-chunk index can be rebuilt in full 68,000 times before it.
MAX_CHUNK_ID = 2**36


def _chunk_id(v: Any) -> bool:
    return _positive(v) and v <= MAX_CHUNK_ID


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _table(v: Any) -> bool:
    return isinstance(v, dict)


def _checksums(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and isinstance(c, str) for k, c in v.items())


def _ints(v: Any) -> bool:
    return isinstance(v, list) and all(_count(n) for n in v)


CHECKS: dict[str, Callable[[Any], bool]] = {
    "schema_version": _positive,
    "generation": _count,
    "next_chunk_id": _chunk_id,
    "dim": _positive,
    "embedder": _text,
    "chunking": _table,
    "graph": _table,
    "checksums": _checksums,
    "chunker": _count,
    "vectors": _text,
    "updated_at": _text,
    "ragx_version": _text,
    "counts": _table,
    "scan_started_ns": _count,
    "chunk_fingerprint": _ints,
    "date_rules": _count,
}


def parsed(rows: list[tuple[str, str]]) -> tuple[dict[str, Any], list[str]]:
    """(the values that parse and pass their check, a problem line per value that does not)."""
    values: dict[str, Any] = {}
    problems = []
    for key, text in rows:
        try:
            value = json.loads(text)
        except (ValueError, TypeError):
            problems.append(f"the index manifest's {key} is not JSON ({str(text)[:40]!r})")
            continue
        check = CHECKS.get(key)
        if check is not None and not check(value):
            problems.append(f"the index manifest's {key} = {json.dumps(value)[:40]} is not a value ragx writes")
            continue
        values[key] = value
    return values, problems


def checked(rows: list[tuple[str, str]]) -> dict[str, Any]:
    """The manifest, or CorruptIndexError naming the first bad value and the repair."""
    values, problems = parsed(rows)
    if problems:
        raise CorruptIndexError(f"{problems[0]}: {REPAIR}")
    return values
