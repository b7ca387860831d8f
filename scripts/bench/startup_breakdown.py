"""Where a cold `ragx status` / `ragx query` spends its CPU: imports and phases, timed one by one.

    python scripts/bench/startup_breakdown.py [--root <indexed corpus>] [--runs 7]

Each run is a fresh interpreter that imports and calls the pieces a cold command uses, in the order the
command uses them, and times each with the process's CPU clock (time.process_time: time spent waiting
for a core on a shared machine is not counted, so the figures hold up under load far better than wall
time). Prints the minimum and the median over the runs, and which part of the code owns each piece.
scripts/bench/bench_startup.py times the whole commands (wall and CPU); this says what to cut next.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path  # the child imports nothing else before its clock starts: ragx needs these anyway

# piece -> the code that owns it
OWNER = {
    "interpreter start (site, editable finder)": "python",
    "import typer": "library",
    "import ragx.config": "ragx/config.py",
    "import ragx.index.store (numpy bound lazily)": "ragx/index",
    "import ragx.api": "ragx/api.py",
    "import ragx.index.diff (the corpus walk)": "ragx/index + ragx/ingest",
    "Corpus.open (settings)": "ragx/config.py",
    "Store.counts (status)": "ragx/index/store.py",
    "Store.files (status drift)": "ragx/index/store.py",
    "diff_corpus (status drift walk)": "ragx/ingest/discover.py + ragx/index/diff.py",
    "quick integrity check (status)": "ragx/index/verify.py",
    "  of which the store's fingerprint": "ragx/index/store.py",
    "import numpy (query)": "library (first used by ragx/index/store.py, lazy.py)",
    "import ragx.index.snapshot (query)": "ragx/index",
    "Snapshot.load with HNSW (query)": "ragx/index",
    "tokenizer.json load (query)": "library (tokenizers)",
}


def _child(root: Path) -> None:
    at_start = time.process_time()
    seen: dict[str, float] = {"interpreter start (site, editable finder)": at_start * 1e3}

    def timed(label, call):
        t = time.process_time()
        value = call()
        seen[label] = (time.process_time() - t) * 1e3
        return value

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the CLI sets it for status and query
    import importlib

    timed("import typer", lambda: importlib.import_module("typer"))
    timed("import ragx.config", lambda: importlib.import_module("ragx.config"))
    timed("import ragx.index.store (numpy bound lazily)", lambda: importlib.import_module("ragx.index.store"))
    api = timed("import ragx.api", lambda: importlib.import_module("ragx.api"))
    diff = timed("import ragx.index.diff (the corpus walk)", lambda: importlib.import_module("ragx.index.diff"))
    corpus = timed("Corpus.open (settings)", lambda: api.Corpus.open(root))
    store = importlib.import_module("ragx.index.store").Store(corpus.layout.db, readonly=True)
    with store.snapshot():
        manifest = store.manifest()
        timed("Store.counts (status)", store.counts)
        files = timed("Store.files (status drift)", store.files)
        timed("diff_corpus (status drift walk)", lambda: diff.diff_corpus(corpus.root, corpus.settings, files, store.undecodable()))
        timed("quick integrity check (status)", lambda: importlib.import_module("ragx.index.verify").verify_index(corpus.layout, store, manifest, False))
        timed("  of which the store's fingerprint", store.live_fingerprint)
        timed("import numpy (query)", lambda: importlib.import_module("numpy").ndarray)  # loads the lazy module
        snapshot = timed("import ragx.index.snapshot (query)", lambda: importlib.import_module("ragx.index.snapshot"))
        folder = corpus.layout.gen(int(manifest["generation"]))
        timed("Snapshot.load with HNSW (query)", lambda: snapshot.Snapshot.load(folder, with_ann=True))
    embedder = corpus.embedder
    if hasattr(embedder, "_get_tokenizer"):
        timed("tokenizer.json load (query)", embedder._get_tokenizer)
    import json

    print(json.dumps(seen))


def _default_root() -> Path | None:
    cache = Path(os.environ.get("RAGX_CACHE_DIR") or Path.home() / ".cache" / "ragx")
    found = sorted((cache / "beir").glob("scifact-*/corpus"))
    return found[0] if found else None


def main() -> None:
    import argparse
    import json
    import statistics
    import subprocess

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=None, help="an indexed corpus (default: the cached SciFact)")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    root = args.root or _default_root()
    if root is None or not (root / ".ragx").is_dir():
        raise SystemExit("no indexed corpus: pass --root (e.g. the SciFact corpus `ragx eval beir` built)")
    runs = []
    for _ in range(args.runs):
        done = subprocess.run([sys.executable, __file__, "--child", "--root", str(root)], capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"corpus {root}: CPU milliseconds over {args.runs} fresh processes (load average {os.getloadavg()[0]:.1f})")
    print(f"{'piece':<44} {'min':>7} {'median':>7}  owner")
    for label in runs[0]:
        values = sorted(r[label] for r in runs)
        print(f"{label:<44} {values[0]:>7.1f} {statistics.median(values):>7.1f}  {OWNER.get(label, '')}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:  # before argparse is imported: it is not part of any command's start-up
        _child(Path(sys.argv[3]))
    else:
        main()
