#!/usr/bin/env python
"""What the query-time check of chunk-text checksums costs (issue 42: it stays on queries only if it
costs <= 5% of warm latency).

    python scripts/bench/bench_text_sums.py --root CORPUS --queries QUERIES.jsonl [--n 200] [--rounds 5]

The corpus must have been indexed (or re-indexed once) by a ragx that writes the checksums. Query vectors
are embedded once up front (embedding is excluded, as in bench_query.py). Warm searches then run with
the check on and off (the store's `has_text_sums` flag), in alternating rounds over the same queries so
that load drifts hit both sides alike; and the check itself (`check_rows` over the rows a query returns)
is timed alone. Prints the medians, the difference and the check's share of the warm p50.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from ragx.api import Corpus
from ragx.index.store.text_sums import COLUMN, check_rows
from ragx.search.results import QueryOptions


def _warm(corpus: Corpus, queries: list[str]):
    """The searcher, with every query's vector computed before timing starts."""
    searcher, embedder = corpus.searcher, corpus.embedder
    vectors = {q: embedder.embed_query(q) for q in queries}

    class Precomputed:
        name, dim = embedder.name, embedder.dim

        def embed_query(self, text):
            return vectors[text]

    searcher._embedder = Precomputed()
    return searcher


def _round(searcher, queries: list[str], params) -> list[float]:
    times = []
    for q in queries:
        t0 = time.perf_counter()
        searcher.search(q, params, QueryOptions())
        times.append(time.perf_counter() - t0)
    return times


def _check_alone(searcher, queries: list[str], params) -> list[float]:
    """The check's own cost per query: the returned chunks' rows read with their checksums, then hashed."""
    store, times = searcher.store, []
    for q in queries:
        ids = [r["chunk_id"] for r in searcher.search(q, params, QueryOptions())["results"]]
        rows = store.chunks(ids, ("id", "text", COLUMN))
        t0 = time.perf_counter()
        check_rows(rows)
        times.append(time.perf_counter() - t0)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    queries = [json.loads(line)["query"] for line in Path(args.queries).read_text().splitlines() if line.strip()][: args.n]
    corpus = Corpus.open(args.root, need_index=True)
    searcher = _warm(corpus, queries)
    if not searcher.store.has_text_sums:
        print("this index has no chunk checksums yet: run `ragx index` on it once with this ragx", file=sys.stderr)
        return 2
    params = corpus.settings.search
    _round(searcher, queries[:20], params)  # warm caches
    sides: dict[bool, list[float]] = {True: [], False: []}
    for i in range(args.rounds * 2):
        on = i % 2 == 0
        searcher.store.has_text_sums = on
        sides[on] += _round(searcher, queries, params)
    searcher.store.has_text_sums = True
    alone = _check_alone(searcher, queries, params)
    p50 = {k: statistics.median(v) * 1000 for k, v in sides.items()}
    check = statistics.median(alone) * 1000
    print(f"corpus {corpus.root}: {searcher.store.counts()}, top {params.top}, {len(queries)} queries x {args.rounds} rounds a side")
    print(f"warm p50 with the check {p50[True]:.3f} ms, without {p50[False]:.3f} ms: difference {p50[True] - p50[False]:+.3f} ms "
          f"({(p50[True] / p50[False] - 1) * 100:+.1f}%)")
    print(f"the check alone: median {check * 1000:.1f} us per query = {check / p50[False] * 100:.2f}% of the warm p50")
    return 0


if __name__ == "__main__":
    sys.exit(main())
