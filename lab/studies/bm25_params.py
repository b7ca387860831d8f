"""Issue 13 item 4 (the sweep): BM25's k1, b and variant, settings of ragx's own postings since they
replaced FTS5's bm25() (which fixes k1 = 1.2, b = 0.75 and its formula), swept per collection with the
studies' protocol. The variants are ragx/scoring/bm25.py's (FTS5's, Lucene's, ATIRE's, BM25L, BM25+).

Each configuration is the BM25 leg alone at file level (a file scores its best chunk, as the `bm25`
preset ranks), over the collection's index as `ragx eval beir` builds it. (variant, k1, b) is chosen on the
train split, or under 5-fold cross-validation over the queries of a collection without one; the
held-out values are compared, paired, with FTS5's constants and with the reference BM25 (bm25s,
Lucene, k1 = 0.9, b = 0.4, on whole files: `bm25-ref` of `ragx eval`).

    python -m lab.studies.bm25_params [collection ...]   -> reports/research/bm25-params.{md,json}
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from ragx.api import Corpus
from ragx.eval.queries import LabelledQuery
from ragx.scoring.bm25 import DEFAULT_VARIANT, VARIANTS
from ragx.search.lexical import bm25_matches

from . import data
from .evaluate import DEPTH, per_query
from .lexical_study import bm25_run
from .protocol import COLLECTIONS, choose
from .stats import holm, paired

OUT = Path(__file__).resolve().parents[2] / "reports" / "research"
K1S = (0.5, 0.9, 1.2, 1.5, 2.0)
BS = (0.3, 0.5, 0.75, 0.9, 1.0)
DEFAULT = (DEFAULT_VARIANT, 1.2, 0.75)


def _files_run(corpus: Corpus, queries: list[LabelledQuery], variant: str, k1: float, b: float) -> dict[str, dict[str, float]]:
    """qid -> {path: score} of the DEPTH best files, a file scoring its best chunk."""
    searcher = corpus.searcher
    run = {}
    with searcher.reading() as snap:
        paths = {row.id: path for path, row in searcher.store.files().items()}
        for q in queries:
            ids, scores = bm25_matches(snap, searcher.store, q.text, k1, b, variant)
            files = snap.file_ids[snap.positions(ids)]
            _, first = np.unique(files, return_index=True)  # best first: a file's first hit is its best chunk
            first = np.sort(first)[:DEPTH]
            run[q.id] = {paths[int(f)]: float(s) for f, s in zip(files[first], scores[first])}
    return run


def _grid(corpus: Corpus, queries: list[LabelledQuery]) -> dict[tuple[str, float, float], dict[str, np.ndarray]]:
    qrels = {q.id: q.files for q in queries}
    qids = [q.id for q in queries]
    return {(v, k1, b): per_query(qrels, _files_run(corpus, queries, v, k1, b), qids) for v in VARIANTS for k1 in K1S for b in BS}


def _reference(corpus: Corpus, queries: list[LabelledQuery]) -> dict[str, np.ndarray]:
    files = sorted(corpus.searcher.store.files())
    texts = [(corpus.root / p).read_text(encoding="utf-8", errors="replace") for p in files]
    run = bm25_run(texts, files, {q.id: q.text for q in queries})
    return per_query({q.id: q.files for q in queries}, run, [q.id for q in queries])


def study(collection: str) -> dict:
    splits = data.SPLITS[collection]
    from ..builds import prepare

    corpus, test_q = prepare({"data_dir": str(data.DATA / collection), "cache": None}, "test")
    test = _grid(corpus, test_q)
    train = None
    if "train" in splits:
        train_corpus, train_q = prepare({"data_dir": str(data.DATA / collection), "cache": None}, "train")
        train = _grid(train_corpus, train_q)
    folds = None if train else np.array([data.fold_of(q.id) for q in test_q])
    picked = choose(train, test, folds)
    held, chosen, train_mean = picked.values, picked.chosen, picked.train_mean
    ref = _reference(corpus, test_q)
    comparisons = holm([paired(held["nDCG@10"], test[DEFAULT]["nDCG@10"]), paired(held["nDCG@10"], ref["nDCG@10"]),
                        paired(test[DEFAULT]["nDCG@10"], ref["nDCG@10"])])
    return {
        "queries": len(test_q), "chosen": [list(c) for c in chosen], "train_ndcg10_of_chosen": train_mean,
        "heldout": {m: float(v.mean()) for m, v in held.items()},
        "fts5_constants": {m: float(v.mean()) for m, v in test[DEFAULT].items()},
        "bm25_ref": {m: float(v.mean()) for m, v in ref.items()},
        "grid_test_ndcg10": {f"{variant} {k1}/{b}": float(v["nDCG@10"].mean()) for (variant, k1, b), v in test.items()},
        "vs_fts5_constants": vars(comparisons[0]), "vs_bm25_ref": vars(comparisons[1]), "fts5_constants_vs_bm25_ref": vars(comparisons[2]),
    }


def _markdown(results: dict) -> str:
    lines = ["# BM25 variant, k1 and b, chosen on train (or 5-fold CV), held-out nDCG@10", "",
             "| collection | queries | chosen (variant k1/b) | train | held-out | FTS5's 1.2/0.75 | bm25-ref | vs FTS5's (p Holm) | vs bm25-ref (p Holm) |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for coll, r in results.items():
        chosen = ", ".join(f"{variant} {k1}/{b}" for variant, k1, b in r["chosen"])
        a, c = r["vs_fts5_constants"], r["vs_bm25_ref"]
        lines.append(f"| {coll} | {r['queries']} | {chosen} | {r['train_ndcg10_of_chosen']:.4f} | {r['heldout']['nDCG@10']:.4f} | "
                     f"{r['fts5_constants']['nDCG@10']:.4f} | {r['bm25_ref']['nDCG@10']:.4f} | {a['delta']:+.4f} ({a['p_holm']:.3f}) | "
                     f"{c['delta']:+.4f} ({c['p_holm']:.3f}) |")
    return "\n".join(lines) + "\n"


def run(collections=COLLECTIONS) -> dict:
    results = {}
    for coll in collections:
        results[coll] = study(coll)
        print(coll, json.dumps({k: results[coll][k] for k in ("chosen", "heldout")}), file=sys.stderr, flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bm25-params.md").write_text(_markdown(results), encoding="utf-8")
    (OUT / "bm25-params.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    return results


if __name__ == "__main__":
    run(tuple(sys.argv[1:]) or COLLECTIONS)
