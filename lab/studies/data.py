"""Pass caches for the study collections, built once with generous caps, plus the per-collection
side tables the graph families need (chunk order within files, chunk texts).

Every family in the studies ranks exactly the nodes of a cached pass (seeds of both legs at 100 each,
plus every chunk within 2 hops of a seed on the kNN graph whose cosine to the query reaches 0.2): the
same candidate set, the same count, for every configuration of one query.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ragx.index.layout import Layout
from ragx.index.store import Store
from ragx.scoring.candidates import Candidates, PassCaps

from ..builds import prepare
from ..passes import build_cache, load_cache

DATA = Path(os.environ.get("RAGX_DATA", "/work/shared/data"))
CAPS = PassCaps(dense_n=100, lexical_n=100, hops=2, query_floor=0.2)
# (collection, split) pairs cached; collections with no train split are cross-validated over queries.
SPLITS = {"scifact": ("train", "test"), "dendron-vault": ("train", "test"), "cranfield": ("test",), "musique-small": ("test",)}
CV_FOLDS = 5


def cache_root() -> Path:
    base = os.environ.get("RAGX_CACHE_DIR") or str(Path.home() / ".cache" / "ragx")
    return Path(base) / "lab" / "study-passes"


@dataclass
class Split:
    name: str                      # "scifact-test"
    collection: str
    split: str
    passes: list[Candidates]
    qrels: dict[str, dict[str, int]]
    paths: dict[int, str]          # file id -> path
    corpus_root: Path              # the indexed folder (the one holding .ragx/)
    query_types: dict[str, str] = field(default_factory=dict)

    @property
    def qids(self) -> list[str]:
        return [c.qid for c in self.passes]


def build(collection: str, split: str, force: bool = False) -> Path:
    corpus, queries = prepare({"data_dir": str(DATA / collection), "cache": None}, split)
    folder = cache_root() / f"{collection}-{split}"
    if force or not (folder / "passes.parquet").exists():
        build_cache(corpus, queries, CAPS, folder)
    return folder


def _query_types(collection: str) -> dict[str, str]:
    import json

    out = {}
    with open(DATA / collection / "queries.jsonl", encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            t = (q.get("metadata") or {}).get("type")
            if t:
                out[str(q["_id"])] = t
    return out


def load(collection: str, split: str) -> Split:
    folder = cache_root() / f"{collection}-{split}"
    passes, meta = load_cache(folder)
    return Split(f"{collection}-{split}", collection, split, passes, meta["labels"], meta["paths"], Path(meta["corpus"]),
                 _query_types(collection))


def fold_of(qid: str, folds: int = CV_FOLDS) -> int:
    """A query's cross-validation fold: a stable hash of its id, the same on every machine."""
    return int(hashlib.sha256(qid.encode()).hexdigest()[:8], 16) % folds


def subset(s: Split, keep) -> Split:
    passes = [c for c in s.passes if keep(c.qid)]
    qids = {c.qid for c in passes}
    return Split(s.name, s.collection, s.split, passes, {q: r for q, r in s.qrels.items() if q in qids}, s.paths, s.corpus_root, s.query_types)


@dataclass
class ChunkTable:
    """Every chunk of the index: id (sorted), file id, ordinal within its file, text."""

    ids: np.ndarray
    file_ids: np.ndarray
    ordinal: np.ndarray
    texts: list[str]

    def rows(self, chunk_ids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.ids, chunk_ids)


def chunk_table(s: Split) -> ChunkTable:
    store = Store(Layout(s.corpus_root).db, readonly=True)
    try:
        return ChunkTable(*store.every_chunk())
    finally:
        store.close()


if __name__ == "__main__":
    import sys
    import time

    for name in sys.argv[1:]:
        coll, _, sp = name.rpartition("-")
        t = time.perf_counter()
        print(name, build(coll, sp), f"{time.perf_counter() - t:.1f}s", flush=True)
