#!/usr/bin/env python
"""How well the "nothing relevant" rule (ragx/search/evidence.py) separates real queries from
queries about something else, on the shared BEIR collections.

Every collection's queries are run against every collection's corpus (the index `ragx eval beir`
keeps under RAGX_CACHE_DIR). A query against its own corpus is REAL: it must keep its results
(target: at most 1% lose them all). A query against another corpus is FOREIGN: it should come back
empty (target: at least 80%). Printed per (queries, corpus) pair, for the thresholds in
ragx/defaults.toml or --min-dense/--min-lexical/--min-share.

    --calibrate  picks the thresholds from TRAIN splits only (scifact train, dendron-vault train:
                 their real queries, and the same queries against the other corpora as foreign
                 ones): the three thresholds that reject the most foreign queries while real
                 train queries lose at most --max-loss (default 0.5%, half the target, as a margin).
                 The share's grid starts at 1 (that signal off: the two-signal rule), so it is
                 chosen only where it rejects more.

    .venv/bin/python scripts/bench/bench_no_match.py --split test          # the final report
    .venv/bin/python scripts/bench/bench_no_match.py --split test --lost   # + where the emptied real queries'
                                                                     #   answers rank with the check off
    .venv/bin/python scripts/bench/bench_no_match.py --split train --calibrate
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragx.api import Corpus  # noqa: E402
from ragx.eval.beir import cache_dir_for, materialise, splits_of  # noqa: E402
from ragx.scoring.bm25 import VARIANTS  # noqa: E402
from ragx.search.evidence import decide, signals  # noqa: E402
from ragx.search.retrieve import retrieval_pass  # noqa: E402

DATA = ROOT.parent / "shared" / "data"  # ../shared/data beside the checkout; --data overrides
COLLECTIONS = ("scifact", "cranfield", "musique-small", "dendron-vault")


def _labelled(data_dir: Path, split: str) -> list[dict]:
    """The judged queries of `split` (or of the only split there is, for collections without it):
    `query` and `relevance` ({file: grade}) each."""
    splits = splits_of(data_dir)
    use = split if split in splits else splits[0]
    made = materialise(data_dir, cache_dir_for(data_dir), [use])
    with open(made.queries[use], encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _queries(data_dir: Path, split: str) -> list[str]:
    return [q["query"] for q in _labelled(data_dir, split)]


_VECTORS: dict[str, np.ndarray] = {}  # query -> vector: one embedding per query, reused on every corpus


def pass_rows(corpus_dir: Path, query_sets: dict[str, list[str]], row: Callable, bm25_variant: str | None = None) -> dict[str, np.ndarray]:
    """Per query set, an (n, k) array: `row(pass, corpus, query, vector)` for each query, from the same
    retrieval pass `ragx query` makes under the default caps against one corpus (inside the read
    snapshot, so `row` may read the corpus's store too); `bm25_variant` replaces the settings' formula."""
    corpus = Corpus.open(corpus_dir)
    corpus.index()  # a no-op when `ragx eval beir` indexed it already
    s, p = corpus.searcher, corpus.settings.search
    s.refresh()
    caps = p.caps() if bm25_variant is None else replace(p.caps(), bm25_variant=bm25_variant)
    out = {}
    for name, queries in query_sets.items():
        rows = []
        for q in queries:
            if q not in _VECTORS:
                _VECTORS[q] = s.embedder.embed_query(q)
            with s.reading() as snap:
                c = retrieval_pass(q, _VECTORS[q][None, :], [q], snap, s.store, caps)
                rows.append(row(c, corpus, q, _VECTORS[q]))
        out[name] = np.array(rows, dtype=np.float64).reshape(len(rows), -1) if rows else np.empty((0, 3))
    s.close()
    return out


def collect(query_names: list[str], corpus_names: list[str], split: str, data: Path,
            row: Callable = lambda c, corpus, q, vector: signals(c), bm25_variant: str | None = None) -> dict[tuple[str, str], np.ndarray]:
    """(queries collection, corpus collection) -> `pass_rows` array (default: the rule's (dense,
    lexical) evidence)."""
    query_sets = {n: _queries(data / n, split) for n in query_names}
    table = {}
    for corpus_name in corpus_names:
        d = data / corpus_name
        corpus_dir = materialise(d, cache_dir_for(d), []).corpus_dir
        for q_name, arr in pass_rows(corpus_dir, query_sets, row, bm25_variant).items():
            table[(q_name, corpus_name)] = arr
    return table


def cached_tables(split: str, data: Path, cache: Path, row: Callable) -> dict[tuple[str, str], np.ndarray]:
    """`collect` over every collection (queries of `split`; on train, only the collections that have
    one), kept in the .npz file `cache` so that a study's later steps reuse it."""
    if cache.exists():
        z = np.load(cache)
        return {tuple(k.split("|")): z[k] for k in z.files}  # type: ignore[misc]
    corpora = list(COLLECTIONS)
    queries = [n for n in corpora if split in splits_of(data / n)] if split == "train" else corpora
    table = collect(queries, corpora, split, data, row)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, **{"|".join(k): v for k, v in table.items()})
    return table


Thresholds = tuple[float, float, float]  # min dense, min lexical, min share (evidence.decide's order)


def rates(table, t: Thresholds) -> dict[tuple[str, str], float]:
    """Share of each pair's queries that come back empty."""
    return {k: float(np.mean(~passes(a, t))) for k, a in table.items()}


def passes(a: np.ndarray, t: Thresholds) -> np.ndarray:
    """Per row of an evidence table (dense, lexical, share): whether the rule keeps its results."""
    return decide(a[:, 0], a[:, 1], a[:, 2], *t)


def _grid(values: np.ndarray, top: float, n: int) -> np.ndarray:
    """Thresholds to try: the real queries' own values at n quantiles from 0 to `top`."""
    return np.unique(np.round(np.quantile(values, np.linspace(0, top, n)), 4))


def calibrate(table, max_loss: float) -> Thresholds:
    real = np.vstack([a for (q, c), a in table.items() if q == c])
    foreign = np.vstack([a for (q, c), a in table.items() if q != c])
    best: tuple[float, Thresholds] = (-1.0, (0.0, 0.0, 0.0))
    for ts in (1.0, *_grid(real[:, 2], 0.3, 31).tolist()):
        for td in _grid(real[:, 0], 0.3, 61).tolist():
            for tl in _grid(real[:, 1], 0.6, 61).tolist():
                t = (td, tl, ts)
                if np.mean(~passes(real, t)) <= max_loss:
                    rejected = float(np.mean(~passes(foreign, t)))
                    if rejected > best[0]:
                        best = (rejected, t)
    return best[1]


def report(table, t: Thresholds) -> None:
    r = rates(table, t)
    print(f"thresholds: min_dense_evidence = {t[0]}, min_lexical_evidence = {t[1]}, min_lexical_share = {t[2]}")
    print(f"{'queries':<15} {'corpus':<15} {'n':>5} {'empty':>7}  kind")
    for (q, c), share in sorted(r.items()):
        kind = "REAL (lost, target <= 1%)" if q == c else "FOREIGN (empty, target >= 80%)"
        print(f"{q:<15} {c:<15} {len(table[(q, c)]):>5} {share:>7.1%}  {kind}")
    real = [v for (q, c), v in r.items() if q == c]
    foreign = [v for (q, c), v in r.items() if q != c]
    summary = f"worst real loss {max(real):.1%}" if real else "no real pairs"
    if foreign:  # none when one collection is run alone (--collections X)
        summary += f"; foreign empty: min {min(foreign):.1%}, mean {np.mean(foreign):.1%}"
    print(summary)


def lost(table, t: Thresholds, split: str, data: Path) -> None:
    """For each real query the rule empties: the rank of its first relevant file among the top 10 that
    `ragx query --files-only --no-evidence-check` returns (what a user who overrides the rule sees)."""
    for (q_name, c_name), arr in sorted(table.items()):
        if q_name != c_name:
            continue
        emptied = np.flatnonzero(~passes(arr, t))
        if not len(emptied):
            continue
        d = data / c_name
        labelled = _labelled(d, split)
        corpus = Corpus.open(materialise(d, cache_dir_for(d), []).corpus_dir)
        for i in emptied.tolist():
            item = labelled[i]
            doc = corpus.query(item["query"], files_only=True, evidence_check=False)
            files = [r["file"] for r in doc["results"]]
            ranks = [n for n, f in enumerate(files, 1) if item["relevance"].get(f, 0) > 0]
            where = f"first relevant file at rank {ranks[0]}" if ranks else "no relevant file in the top 10"
            print(f"lost on {c_name}: {item['query']!r}: {where}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="test", help="queries of this split (collections without it: their only split)")
    ap.add_argument("--collections", nargs="*", default=list(COLLECTIONS))
    ap.add_argument("--calibrate", action="store_true", help="pick thresholds on these (train) queries")
    ap.add_argument("--max-loss", type=float, default=0.005)
    ap.add_argument("--min-dense", type=float, default=None)
    ap.add_argument("--min-lexical", type=float, default=None)
    ap.add_argument("--min-share", type=float, default=None)
    ap.add_argument("--lost", action="store_true", help="also rank each emptied real query with the check off")
    ap.add_argument("--data", type=Path, default=DATA, help="the folder holding the collections (default ../shared/data)")
    ap.add_argument("--bm25-variant", choices=VARIANTS, default=None, help="score BM25 with this formula (default: the settings')")
    args = ap.parse_args()
    corpora = args.collections
    queries = [n for n in corpora if args.split in splits_of(args.data / n)] if args.split == "train" else corpora
    if args.calibrate and args.split != "train":
        sys.exit("--calibrate works on --split train only (never tune on test)")
    table = collect(queries, corpora, args.split, args.data.resolve(), bm25_variant=args.bm25_variant)
    if args.calibrate:
        t = calibrate(table, args.max_loss)
        print(f"calibrated on train: min_dense_evidence = {t[0]}, min_lexical_evidence = {t[1]}, min_lexical_share = {t[2]}")
        report(table, t)
        return
    from ragx.config import load_settings

    p = load_settings(None, warn=False).search
    t = (p.min_dense_evidence if args.min_dense is None else args.min_dense,
         p.min_lexical_evidence if args.min_lexical is None else args.min_lexical,
         p.min_lexical_share if args.min_share is None else args.min_share)
    report(table, t)
    if args.lost:
        lost(table, t, args.split, args.data.resolve())


if __name__ == "__main__":
    main()
