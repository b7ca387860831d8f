"""A real kernel queue overflow under `ragx watch` (root only: it lowers fs.inotify.max_queued_events).

    sudo python scripts/check/check_watch_overflow.py [--files 600]

Lowers the queue limit to 64 events for the watcher's inotify instance only (the limit is read when an
instance is made; it is put back at once), stops the watcher (SIGSTOP), writes --files new files, lets
it go on (SIGCONT). The kernel has dropped events by then and queued IN_Q_OVERFLOW. Then the watcher
must start a new session and say why, the next `ragx index` must walk every file (and say why) and index
the whole burst, the one after must read the feed again, and `ragx status` must find no drift. Uses the
embedded model. Prints each check; exits 1 on a failed one.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIMIT = Path("/proc/sys/fs/inotify/max_queued_events")
RAGX = [sys.executable, "-m", "ragx.cli.main"]


def index(root: Path) -> dict:
    out = subprocess.run([*RAGX, "index", "--json", "--root", str(root)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=600)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ragx-overflow-")) / "corpus"
    (root / "notes").mkdir(parents=True)
    for i in range(20):
        (root / "notes" / f"n{i}.md").write_text(f"# note {i}\n\nwords {i}\n")
    index(root)
    old = LIMIT.read_text().strip()
    LIMIT.write_text("64\n")
    try:
        watcher = subprocess.Popen([*RAGX, "watch", "--no-index", "--root", str(root)], stderr=subprocess.PIPE, text=True)
        ready = root / ".ragx" / "watch" / "watcher.json"
        while not ready.exists():
            time.sleep(0.02)
    finally:
        LIMIT.write_text(old + "\n")
    first = json.loads(ready.read_text())["session"]
    print(f"watcher up, session {first[:8]}; queue limit back at {LIMIT.read_text().strip()}")
    ok = True

    def check(name: str, passed: bool, detail: str) -> None:
        nonlocal ok
        ok &= passed
        print(f"{'PASS' if passed else 'FAIL'} {name}: {detail}", flush=True)

    run = index(root)
    check("the session's first run walks", run["scan_kind"] == "walk", str(run["scan_note"]))
    os.kill(watcher.pid, signal.SIGSTOP)
    for i in range(args.files):
        (root / "notes" / f"burst{i}.md").write_text(f"# burst {i}\n\nmore words {i}\n")
    os.kill(watcher.pid, signal.SIGCONT)
    deadline = time.monotonic() + 30
    while json.loads(ready.read_text())["session"] == first and time.monotonic() < deadline:
        time.sleep(0.05)
    second = json.loads(ready.read_text())["session"]
    check("a new session after the overflow", second != first, f"{first[:8]} -> {second[:8]}")
    run = index(root)
    check("the next run walks every file", run["scan_kind"] == "walk" and run["new"] == args.files,
          f"{run['scan_kind']}, {run['new']} new; {run['scan_note']}")
    (root / "notes" / "after.md").write_text("# after\n\nwritten once the new session ran\n")
    run = index(root)
    check("the run after reads the feed", run["scan_kind"] == "feed" and run["new"] == 1, f"{run['scan_kind']}, {run['new']} new")
    status = json.loads(subprocess.run([*RAGX, "status", "--json", "--root", str(root)], capture_output=True, text=True).stdout)
    drift = status.get("drift") or {}
    check("no drift", not any(drift.get(k) for k in ("new", "changed", "deleted")), json.dumps(drift)[:200])
    watcher.send_signal(signal.SIGINT)
    _, err = watcher.communicate(timeout=30)
    said = [line for line in err.splitlines() if "overflowed" in line]
    check("the watcher said why", bool(said), said[0] if said else err.strip()[-200:])
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main())
