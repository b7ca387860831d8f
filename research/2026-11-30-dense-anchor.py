"""Dense-only on SciFact test two ways: ragx's chunks (a file scored by its best chunk) and the first
chunk of each file only (close to the published setup, which truncates each abstract at 256 word
pieces). Exact cosine over all chunk vectors; metrics through ragx.eval.metrics.

    python research/2026-11-30-dense-anchor.py [CORPUS] [QUERIES]
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import numpy as np

from ragx.api import Corpus
from ragx.eval.metrics import evaluate
from ragx.eval.queries import load_queries
from ragx.index.snapshot import Snapshot

root = Path(sys.argv[1] if len(sys.argv) > 1 else Path.home() / ".cache/ragx/beir/scifact-c5dc6a72/corpus")
qfile = Path(sys.argv[2] if len(sys.argv) > 2 else root.parent / "queries" / "test.jsonl")
corpus = Corpus.open(root, need_index=True)
corpus.searcher.refresh()
snap: Snapshot = corpus.searcher.snapshot
db = sqlite3.connect(corpus.layout.db)
ordinal = dict(db.execute("SELECT id, ordinal FROM chunks"))
paths = dict(db.execute("SELECT id, path FROM files"))
first = np.array([ordinal[int(i)] == 0 for i in snap.ids])
queries = load_queries(qfile)
qrels = {q.id: q.files for q in queries}
qvecs = np.stack([corpus.embedder.embed_query(q.text) for q in queries])
sims = qvecs @ np.asarray(snap.vectors).T

for label, mask in (("all chunks, best per file", np.ones(len(snap.ids), bool)), ("first chunk of each file", first)):
    run = {}
    for q, row in zip(queries, sims):
        s = np.where(mask, row, -np.inf)
        best: dict[str, float] = {}
        for i in np.argsort(-s)[:400]:
            if not np.isfinite(s[i]):
                break
            best.setdefault(paths[int(snap.file_ids[i])], float(s[i]))
        run[q.id] = dict(list(best.items())[:100])
    means, _ = evaluate(qrels, run)
    print(f"| {label} | {means['nDCG@10']:.4f} | {means['R@100']:.4f} |")
