#!/usr/bin/env python
"""Query latency: warm in-process p50/p95 with and without the graph (query embedding excluded), and
cold one-shot `ragx query --json` wall time.

    python scripts/bench/bench_query.py --root CORPUS --queries QUERIES.jsonl [--n 200] [--cold 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ragx.api import Corpus
from ragx.search.results import QueryOptions


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.array(xs) * 1000, p))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--cold", type=int, default=10)
    args = ap.parse_args()
    queries = [json.loads(line)["query"] for line in Path(args.queries).read_text().splitlines() if line.strip()][: args.n]
    corpus = Corpus.open(args.root, need_index=True)
    searcher = corpus.searcher
    embedder = corpus.embedder
    vectors = {q: embedder.embed_query(q) for q in queries}  # embedding is timed separately, below

    class Precomputed:
        name, dim = embedder.name, embedder.dim

        def embed_query(self, text):
            return vectors[text]

    searcher._embedder = Precomputed()
    base = corpus.settings.search
    print(f"corpus {corpus.root}: {searcher.store.counts()}")
    for label, params in (("graph", base), ("no graph", base.switched(graph=False))):
        for q in queries[:20]:  # warm caches
            searcher.search(q, params, QueryOptions())
        times, cands = [], []
        for q in queries:
            t0 = time.perf_counter()
            doc = searcher.search(q, params, QueryOptions())
            times.append(time.perf_counter() - t0)
            cands.append(doc["candidates"])
        print(f"warm, {label:8s}: p50 {pct(times, 50):6.2f} ms  p95 {pct(times, 95):6.2f} ms  "
              f"(n={len(times)}, median candidates {statistics.median(cands):.0f}; embedding excluded)")
    t = []
    for q in queries[:50]:
        t0 = time.perf_counter()
        embedder.embed_query(q)
        t.append(time.perf_counter() - t0)
    print(f"query embedding alone: p50 {pct(t, 50):.2f} ms  p95 {pct(t, 95):.2f} ms")
    walls = []
    for q in queries[: args.cold]:
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "ragx.cli.main", "query", q, "--json", "--root", str(corpus.root)], capture_output=True)
        walls.append(time.perf_counter() - t0)
        if done.returncode not in (0, 1):
            print(done.stderr.decode(), file=sys.stderr)
            return 2
    print(f"cold one-shot `ragx query --json`: median {statistics.median(walls):.3f} s  max {max(walls):.3f} s (n={len(walls)}, "
          "new process each: imports, model session, index load, query)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
