"""Where graph repair through the ANN index gets cheaper than the exact route: one-file edits at several
sizes, the two routes interleaved on the same index, the graph stage timed.

    nice -n 10 python scripts/bench/bench_repair_route.py --sizes 1000 2000 5000 10000 20000 --edits 6 [--work DIR]

Per size: a bench_scale corpus (its hashed bag-of-words embedder, so embedding costs nothing), indexed
in full, then `--edits` one-file edits, each indexed in this process with the route forced
(repair.EXACT_MAX_CHUNKS set above or below the size), exact and ANN alternating. Prints per size the
median graph stage and the median run of each route (seconds, in-process), and the load average.
The exact route compares every new chunk with every stored vector (the repaired lists equal a full
rebuild's); the ANN route asks the HNSW index (ragx/index/repair.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))

from bench_scale import _corpus, _edit_one_file, register  # noqa: E402  (the script's own folder)


def one_size(n: int, work: Path, edits: int) -> dict:
    from ragx.api import Corpus
    from ragx.index import repair

    root = _corpus(n, work / f"n{n}", keep=False)
    Corpus.open(root).index()
    routes: dict[str, list[dict]] = {"exact": [], "ann": []}
    for i in range(edits):
        route = ("exact", "ann")[i % 2]
        repair.EXACT_MAX_CHUNKS = 10**12 if route == "exact" else 0
        _edit_one_file(root, 1 + i)
        t0 = time.perf_counter()
        report = Corpus.open(root).index()
        routes[route].append({"run_s": time.perf_counter() - t0, "graph_s": report.stage_seconds["graph"]})
    out: dict = {"chunks": report.chunks, "load": os.getloadavg()}
    for route, runs in routes.items():
        out[route] = {"graph_s_median": statistics.median(r["graph_s"] for r in runs),
                      "run_s_median": statistics.median(r["run_s"] for r in runs),
                      "graph_s": [round(r["graph_s"], 4) for r in runs]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000, 10000, 20000])
    ap.add_argument("--edits", type=int, default=6, help="one-file edits per size, the routes alternating")
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "bench-repair-route")
    args = ap.parse_args()
    register()
    rows = []
    for n in args.sizes:
        rows.append(one_size(n, args.work, args.edits))
        print(json.dumps(rows[-1]), flush=True)
    print("| chunks | graph stage exact | graph stage ANN | run exact | run ANN | load (1 min) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        e, a = r["exact"], r["ann"]
        print(f"| {r['chunks']:,} | {e['graph_s_median'] * 1000:.0f} ms | {a['graph_s_median'] * 1000:.0f} ms "
              f"| {e['run_s_median']:.2f} s | {a['run_s_median']:.2f} s | {r['load'][0]:.2f} |")


if __name__ == "__main__":
    main()
