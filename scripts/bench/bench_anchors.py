"""What anchor evidence costs a warm query: the retrieval pass with and without it, interleaved.

    python scripts/bench/bench_anchors.py --root <indexed corpus> --queries <BEIR queries.jsonl> [--rounds 3]

Each query's pass (ragx's Searcher.candidates, warm: one process, the index opened once) is timed with
the anchor signals (ragx/search/anchor_signals.py) and with them replaced by their "no anchors" value,
alternately, so both see the same machine. Prints the medians, their ratio, and how many anchor
documents and anchors a pass read. Times are wall time on a shared machine: read the ratio.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import ragx.search.searcher as searcher_module
from ragx.api import Corpus


def _without(store, query, file_ids, query_vec, known=None):
    return np.full(len(file_ids), np.nan, np.float32), np.zeros(len(file_ids))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    queries = [json.loads(line)["text"] for line in args.queries.read_text(encoding="utf-8").splitlines() if line.strip()]
    corpus = Corpus(args.root)
    params = corpus.settings.search
    searcher = corpus.searcher
    with_anchors = searcher_module.anchor_signals
    for q in queries[:5]:  # warm: pages, the embedder's session
        searcher.candidates(q, params, expand=False)
    on, off, linked = [], [], []
    for _ in range(args.rounds):
        for q in queries:
            searcher_module.anchor_signals = with_anchors
            started = time.perf_counter()
            c = searcher.candidates(q, params, expand=False)
            on.append(time.perf_counter() - started)
            linked.append(float(np.mean(~np.isnan(c.anchor_sim))) if len(c.nodes) else 0.0)
            searcher_module.anchor_signals = _without
            started = time.perf_counter()
            searcher.candidates(q, params, expand=False)
            off.append(time.perf_counter() - started)
    searcher_module.anchor_signals = with_anchors
    docs = corpus.searcher.store.db.execute("SELECT count(*) FROM anchor_docs").fetchone()[0]
    anchors = corpus.searcher.store.db.execute("SELECT count(*) FROM anchors").fetchone()[0]
    print(f"{len(queries)} queries x {args.rounds} rounds on {args.root} ({anchors} anchors, {docs} anchor documents)")
    print(f"warm retrieval pass: with anchor evidence median {1000 * np.median(on):.1f} ms (p95 {1000 * np.percentile(on, 95):.1f}), "
          f"without {1000 * np.median(off):.1f} ms (p95 {1000 * np.percentile(off, 95):.1f}); ratio {np.median(on) / np.median(off):.2f}")
    print(f"candidates whose file has anchors: {100 * np.mean(linked):.0f}% on average")


if __name__ == "__main__":
    main()
