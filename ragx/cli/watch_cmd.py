"""`ragx watch`: keep the index current as files change, and let index runs look only at what changed."""

# No `from __future__ import annotations`: typer evaluates parameter annotations (see index_cmd.py).

import signal
import subprocess
import sys
from typing import Annotated, Optional

import typer

from ..api import Corpus
from .app import RootOpt, app, err


class _IndexRuns:
    """`ragx index` in a process of its own, one at a time, so the watcher keeps reading events while
    it runs (a long run would otherwise let the kernel's queue overflow)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.running: Optional[subprocess.Popen] = None

    def start(self) -> bool:
        if self.running is not None:
            code = self.running.poll()
            if code is None:
                return False  # ask again when this one ends
            if code != 0:
                err.print(f"watch: `ragx index` exited {code}; watching on")
        self.running = subprocess.Popen([sys.executable, "-m", "ragx.cli.main", "index", "--root", self.root])
        return True

    def stop(self) -> None:
        if self.running is not None:
            self.running.wait()


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


@app.command("watch")
def watch_command(
    root: RootOpt = None,
    index: Annotated[bool, typer.Option("--index/--no-index", help="Run `ragx index` once changes settle (and once at the start).")] = True,
    settle: Annotated[float, typer.Option("--settle", min=0.0, help="Seconds without a change before that index run.")] = 1.0,
) -> None:
    """Watch the corpus (Linux inotify): index runs then look only at the files that changed."""
    corpus = Corpus.open(root)
    before = signal.signal(signal.SIGTERM, _interrupt)  # `kill` ends it as Ctrl-C does: its feed files are removed
    runs = _IndexRuns(str(corpus.root)) if index else None
    try:
        corpus.watch(lambda line: err.print(f"watch: {line}"), on_quiet=runs.start if runs else None, quiet_seconds=settle)
    except KeyboardInterrupt:
        err.print("watch: stopped")
    finally:
        signal.signal(signal.SIGTERM, before)
        if runs is not None:
            runs.stop()
