"""Warnings on stderr, one format: ``<program>: warning: <message>``.

Every floor warns through here (config, models, search, the shells), so the format lives in one place
and `warn_once` needs no import of a room above the one warning (models and search both use it).
"""

from __future__ import annotations

import sys
import threading

from .redact import redact

__all__ = ["reset_warnings", "warn", "warn_once"]

_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn(message: str, program: str = "ragx") -> None:
    """Print ``<program>: warning: <message>`` on stderr now."""
    print(f"{program}: warning: {redact(message)}", file=sys.stderr, flush=True)


def warn_once(key: str, message: str) -> bool:
    """`warn(message)` the first time `key` is seen in this process (degraded providers: a reranker that
    cannot load, an expansion call that failed); True when it printed."""
    with _warned_lock:
        if key in _warned:
            return False
        _warned.add(key)
    warn(message)
    return True


def reset_warnings() -> None:
    """Forget which warnings were printed (tests)."""
    with _warned_lock:
        _warned.clear()
