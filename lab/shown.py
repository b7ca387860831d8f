"""The lab's long steps, shown through ragx's one progress module (ragx/progress.py: a bar on a
terminal, a plain line every few seconds in a log): index runs, pass caching, evaluations."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from typing import Any, Callable

from ragx.progress import progress


class IndexProgress:
    """An index run's reporter (ragx.index.plan.Reporter): its embedding counted on stderr."""

    def embedding(self, total: int) -> AbstractContextManager[Callable[[int], None]]:
        return progress("embedding", total=total, unit="texts")

    def warn(self, message: str) -> None:
        print(f"lab: {message}", file=sys.stderr, flush=True)


def counted(label: str, total: int, unit: str, run: Callable[..., Any]) -> Any:
    """`run(progress=advance)` with its `total` units counted under `label`."""
    with progress(label, total=total, unit=unit) as advance:
        return run(progress=advance)
