"""`ragx status`'s own work as an index grows: CPU of Corpus.status() after the imports (integrity check
and drift scan) and of the quick integrity check alone, medians over fresh processes, the code of two
source trees interleaved (each run with this interpreter and `-P`, the tree on PYTHONPATH).

    python scripts/bench/bench_status.py <indexed corpus> <new tree> <old tree> [runs]

e.g. a corpus of scripts/bench/bench_scale.py (`--work DIR`: DIR/n100000/corpus) and a `git worktree add` of
an older commit. Also says whether every run found the index consistent and whether numpy was loaded.
Bytecode is cached under /tmp/pyc (PYTHONPYCACHEPREFIX): both trees' modules compile once, not per run.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
from ragx.api import Corpus
from ragx.index.store import Store
from ragx.index.verify import verify_index

corpus = Corpus.open(sys.argv[1])
t0 = time.process_time()
info = corpus.status()
t1 = time.process_time()
store = Store(corpus.layout.db, readonly=True)
with store.snapshot():
    manifest = store.manifest()
    t2 = time.process_time()
    problems = verify_index(corpus.layout, store, manifest, False)
    t3 = time.process_time()
print(json.dumps({"status": t1 - t0, "check": t3 - t2, "consistent": info["consistent"] and not problems,
                  "numpy": "numpy._core" in sys.modules}))
"""


def _run(root: str, tree: str) -> dict:
    env = dict(os.environ, PYTHONPATH=tree, PYTHONPYCACHEPREFIX="/tmp/pyc")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # stale bytecode would be compiled on every run
    done = subprocess.run([sys.executable, "-P", "-c", CHILD, root], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    root, trees = sys.argv[1], {"new": sys.argv[2], "old": sys.argv[3]}
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 7
    rows: dict[str, list[dict]] = {side: [] for side in trees}
    for _ in range(runs):
        for side, tree in trees.items():
            rows[side].append(_run(root, tree))
    for side, got in rows.items():
        status = statistics.median(r["status"] for r in got)
        check = statistics.median(r["check"] for r in got) * 1e3
        state = "consistent" if all(r["consistent"] for r in got) else "INCONSISTENT"
        print(f"{side}: status() CPU median {status:.3f} s, quick check alone {check:.1f} ms; {state}; "
              f"numpy loaded: {got[-1]['numpy']}")


if __name__ == "__main__":
    main()
