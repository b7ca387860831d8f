"""Temp tables of ids or paths to join against, and SQLite's comma-joined integers as arrays: the set-based
reads every part of the store uses (one statement per set, never one per row)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
else:  # `ragx status` reads the store without numpy (lazy.py)
    from ...lazy import lazy_module

    np = lazy_module("numpy")


def fill_temp(db: sqlite3.Connection, name: str, ids) -> None:
    """A temp table of ids to join against. Joins write `temp.x t CROSS JOIN table`: SQLite has no
    statistics for a temp table and otherwise may scan the whole big table as the outer loop (27 s
    instead of 0.03 s for the kNN rows of 2,000 chunks at a million chunks)."""
    db.execute(f"CREATE TEMP TABLE IF NOT EXISTS {name}(id INTEGER PRIMARY KEY)")
    db.execute(f"DELETE FROM temp.{name}")
    db.executemany(f"INSERT OR IGNORE INTO temp.{name}(id) VALUES (?)", ((int(i),) for i in ids))


def fill_temp_text(db: sqlite3.Connection, name: str, values: Sequence[str]) -> None:
    db.execute(f"CREATE TEMP TABLE IF NOT EXISTS {name}(path TEXT PRIMARY KEY)")
    db.execute(f"DELETE FROM temp.{name}")
    db.executemany(f"INSERT OR IGNORE INTO temp.{name}(path) VALUES (?)", ((v,) for v in values))


def int_list(joined: str | None) -> np.ndarray:
    """The integers of SQLite's group_concat (None when there were no rows), int64."""
    return np.fromstring(joined, dtype=np.int64, sep=",") if joined else np.empty(0, np.int64)
