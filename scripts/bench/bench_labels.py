"""Cost of community labels and file dates in an incremental index run (one edited file).

Runs `ragx index` in-process on a copy of an indexed corpus, alternating runs with the label and date
steps on and off (off = both replaced by no-ops), and prints the median CPU and wall seconds of each.

    python scripts/bench/bench_labels.py <indexed corpus copy> [--reps 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from ragx.api import Corpus
from ragx.index.store import Store


def one_run(corpus: Corpus, victim: Path, n: int, hooks: bool) -> tuple[float, float]:
    victim.write_text(victim.read_text(encoding="utf-8") + f"\nEdited for the benchmark, run {n}.\n", encoding="utf-8")
    saved = Store._write_labels, Store._write_dates
    if not hooks:
        Store._write_labels, Store._write_dates = (lambda self, cache=None: 0), (lambda self, from_git: None)
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        corpus.index()
        return time.process_time() - cpu, time.perf_counter() - wall
    finally:
        Store._write_labels, Store._write_dates = saved


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    corpus = Corpus.open(args.root, need_index=True)
    victim = sorted(p for p in args.root.iterdir() if p.suffix == ".md")[0]
    corpus.index()  # warm: model loaded, labels and dates present
    results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for n in range(args.reps):
        for hooks in (False, True):
            results[hooks].append(one_run(corpus, victim, n * 2 + hooks, hooks))
    for hooks, runs in results.items():
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        print(f"{'with labels+dates' if hooks else 'without         '}: median CPU {cpu:.2f} s, wall {wall:.2f} s over {len(runs)} runs")
    off, on = (statistics.median(r[0] for r in results[h]) for h in (False, True))
    print(f"CPU ratio with/without: {on / off:.2f}")


if __name__ == "__main__":
    main()
