#!/usr/bin/env python
"""Benchmark `ragx serve`'s search page: warm searches through HTTP, server time and wall time.

    python scripts/bench/bench_web.py                         # SciFact, where `ragx eval beir` keeps it
    python scripts/bench/bench_web.py --root DIR --queries Q.jsonl --n 200 --warm 10 [--json]

Starts `ragx serve --root DIR --port 0` (this venv's console script; PYTHONPATH passed on), waits for
the URL it prints, sends `--warm` searches (not timed: the first loads the model and arrays), then `--n`
searches one after another (distinct test queries, cycled), each `GET /?q=...` as the search form sends
it. Server time is the page's own `Server-Timing: app;dur=` (request in -> response start: the query, the
explain trace, grouping, highlighting and the template); wall is the client's round trip on loopback.
Read-only: the page never writes to the index.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path


def _scifact() -> Path:
    """Where `ragx eval beir .../scifact` materialised and indexed SciFact in the ragx cache."""
    cache = Path(os.environ.get("RAGX_CACHE_DIR") or Path.home() / ".cache" / "ragx")
    found = sorted(cache.glob("beir/scifact-*/corpus/.ragx"))
    return found[0].parent.parent if found else cache / "beir" / "scifact-(not materialised)"


def load_queries(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line)["query"] for line in fh if line.strip()]


def search(url: str, text: str) -> tuple[float, float]:
    """(server ms, wall ms) of one search page."""
    started = time.perf_counter()
    with urllib.request.urlopen(url + "?" + urllib.parse.urlencode({"q": text}), timeout=120) as response:
        response.read()
        timing = response.headers["Server-Timing"]
    wall = (time.perf_counter() - started) * 1000
    return float(timing.split("dur=")[1]), wall


def percentiles(values: list[float]) -> dict[str, float]:
    q = statistics.quantiles(values, n=100, method="inclusive")
    return {"p50": round(statistics.median(values), 2), "p95": round(q[94], 2), "mean": round(statistics.fmean(values), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=_scifact() / "corpus")
    ap.add_argument("--queries", type=Path, default=_scifact() / "queries" / "test.jsonl")
    ap.add_argument("--n", type=int, default=200, help="timed searches")
    ap.add_argument("--warm", type=int, default=10, help="untimed searches first")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    queries = load_queries(args.queries)
    ragx = Path(sys.executable).with_name("ragx")
    proc = subprocess.Popen([str(ragx), "serve", "--root", str(args.root), "--port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        if not line.startswith("ragx serve: http"):
            sys.exit(f"bench_web: the server did not start: {line.strip()}")
        url = line.split()[2]
        for i in range(args.warm):
            search(url, queries[-1 - i % len(queries)])
        timed = [search(url, queries[i % len(queries)]) for i in range(args.n)]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    out = {"root": str(args.root), "n": args.n, "server_ms": percentiles([s for s, _ in timed]),
           "wall_ms": percentiles([w for _, w in timed]), "load_average": [round(x, 2) for x in os.getloadavg()]}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"ragx serve search page, {args.n} warm searches on {args.root}")
        for key in ("server_ms", "wall_ms"):
            print(f"  {key[:-3]:6} p50 {out[key]['p50']:7.2f} ms  p95 {out[key]['p95']:7.2f} ms  mean {out[key]['mean']:7.2f} ms")
        print(f"  load average {out['load_average']}")


if __name__ == "__main__":
    main()
