"""Progress of long work on stderr, wherever stderr goes: a rich bar on a terminal, otherwise a plain
line every few seconds (done/total, rate, ETA) that a log file, CI or an agent reading the output sees.

    from ragx.progress import progress

    with progress("embedding", total=len(texts), unit="texts") as advance:
        for batch in batches:
            ...
            advance(len(batch))          # thread-safe; call it from any thread

`total=None` when the amount is not known (the line then shows done and rate, no ETA); `unit=""` for
work that is not counted at all (a heartbeat: "indexing: elapsed 1:05"). The plain line is
written by a timer thread, so it appears every `every` seconds even while one step takes longer than
that, and once more at the end ("done"). `RAGX_PROGRESS=plain|bar|off` overrides the choice (plain in
a terminal, nothing at all); `RAGX_PROGRESS_SECONDS` sets the plain line's interval (default 5).

Beside the floors: imports nothing of ragx, so `lab` and every shell can use it; rich is imported only
when a bar is drawn.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import IO, Any, Callable, Iterator

__all__ = ["Advance", "progress", "plain_line"]

Advance = Callable[..., None]   # advance(n: int = 1)

DEFAULT_SECONDS = 5.0


def _mode(stream: IO[str]) -> str:
    """'bar', 'plain' or 'off': the environment's choice, else a bar only on a real terminal."""
    chosen = os.environ.get("RAGX_PROGRESS", "").strip().lower()
    if chosen in ("bar", "plain", "off"):
        return chosen
    is_tty = getattr(stream, "isatty", lambda: False)()
    return "bar" if is_tty and os.environ.get("TERM") != "dumb" else "plain"


def _interval() -> float:
    try:
        return max(0.1, float(os.environ.get("RAGX_PROGRESS_SECONDS", DEFAULT_SECONDS)))
    except ValueError:
        return DEFAULT_SECONDS


def _clock(seconds: float) -> str:
    """1:05, 1:02:03: elapsed or remaining time as a log reader scans it."""
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def plain_line(label: str, done: int, total: int | None, unit: str, elapsed: float, *, finished: bool = False) -> str:
    """One progress line: "embedding: 640/2,000 texts (32%), 41.3 texts/s, elapsed 0:15, ETA 0:33";
    with no unit (a heartbeat: work that is not counted) only "indexing: elapsed 0:15"."""
    if not unit:
        return f"{label}: {'done, ' if finished else ''}elapsed {_clock(elapsed)}"
    rate = done / elapsed if elapsed > 0 else 0.0
    count = f"{done:,}/{total:,} {unit} ({100 * done / total:.0f}%)" if total else f"{done:,} {unit}"
    parts = [f"{label}: {'done ' if finished else ''}{count}", f"{rate:.1f} {unit}/s", f"elapsed {_clock(elapsed)}"]
    if not finished and total and rate > 0:
        parts.append(f"ETA {_clock((total - done) / rate)}")
    return ", ".join(parts)


class _PlainTicker:
    """Counts what is done and writes `plain_line` every `every` seconds from a daemon thread."""

    def __init__(self, label: str, total: int | None, unit: str, stream: IO[str], every: float, started: float | None = None):
        self.label, self.total, self.unit, self.stream, self.every = label, total, unit, stream, every
        self.done = 0
        self.started = time.monotonic() if started is None else started
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"progress:{label}", daemon=True)

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n

    def _write(self, finished: bool = False) -> None:
        with self._lock:
            done = self.done
        line = plain_line(self.label, done, self.total, self.unit, time.monotonic() - self.started, finished=finished)
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed stderr must not end the work it reports on
            pass

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._write()

    def __enter__(self) -> _PlainTicker:
        self._thread.start()
        return self

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        self._stop.set()
        self._thread.join()
        if exc_type is None and self.unit:  # a heartbeat ends without a line: what follows says what happened
            self._write(finished=True)


@contextmanager
def _bar(label: str, total: int | None, unit: str, console: Any, transient: bool) -> Iterator[Advance]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = ((TextColumn(label), BarColumn(), TimeElapsedColumn()) if not unit else
               (TextColumn(label), BarColumn(), MofNCompleteColumn(), TextColumn(unit), TimeElapsedColumn(), TimeRemainingColumn()))
    if console is None:
        from rich.console import Console

        console = Console(stderr=True, highlight=False)
    with Progress(*columns, console=console, transient=transient) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n=1: bar.advance(task, n)


@contextmanager
def progress(label: str, total: int | None = None, unit: str = "items", *, console: Any = None,
             stream: IO[str] | None = None, transient: bool = False, every: float | None = None,
             started: float | None = None) -> Iterator[Advance]:
    """Report the progress of the work inside the `with` on stderr; yields `advance(n=1)`.

    `console`: the rich Console a bar draws on (the CLI passes its stderr console, so warnings printed
    meanwhile land above the bar); `stream`: where plain lines go (default sys.stderr, read at call time);
    `transient`: the bar disappears when done; `every`: seconds between plain lines; `started`: the
    time.monotonic() the plain line's elapsed time counts from (default: now)."""
    out = stream if stream is not None else sys.stderr
    mode = _mode(out)
    if mode == "off":
        yield lambda n=1: None
    elif mode == "bar":
        with _bar(label, total, unit, console, transient) as advance:
            yield advance
    else:
        with _PlainTicker(label, total, unit, out, every if every is not None else _interval(), started) as ticker:
            yield ticker.advance
