"""int8 against float16 inside the HNSW index (usearch), with the exact re-scoring ragx does after it.

    RAGX_CACHE_DIR=<cache> python research/2026-12-01-hnsw-int8.py scifact <cache>/beir/scifact-<hash>
    python research/2026-12-01-hnsw-int8.py scale /work/cache/scale/n100000

`scifact`: the index `ragx eval beir ../shared/data/scifact` keeps (its vectors.npy, the embedded model
for the 300 test queries). `scale`: a corpus of scripts/bench/bench_scale.py (its vectors.npy and its 200
topic queries, embedded by the benchmark's hashed bag of words). For each scalar type, an index is
built with ragx's settings (M 16, expansion 128 / 250, 2 threads) from the float16 rows widened to
float32; each query asks it for 100, 150 and 200 candidates, which are re-scored exactly with the
float32 rows and cut to 100 (as ragx/search/retrieve.py does), and compared with the exact top 100.
Prints build time, file size and the mean share of the exact top 100 found.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

TOP, ASKS = 100, (100, 150, 200)


def _latest_vectors(corpus: Path) -> np.ndarray:
    gen = sorted((corpus / ".ragx").glob("gen-*"))[-1]
    return np.asarray(np.load(gen / "vectors.npy", mmap_mode="r"), dtype=np.float32)


def _scifact(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    from ragx.api import Corpus

    searcher = Corpus.open(folder / "corpus").searcher
    with searcher.reading() as snap:
        vectors = np.asarray(snap.vectors[np.arange(len(snap.ids))], dtype=np.float32)
    with open(folder / "queries" / "test.jsonl", encoding="utf-8") as fh:
        texts = [json.loads(line)["query"] for line in fh if line.strip()]
    return vectors, np.stack([searcher.embedder.embed_query(t) for t in texts]).astype(np.float32)


def _scale(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    from bench_scale import HashBowEmbedder

    embedder = HashBowEmbedder()
    texts = json.loads((folder / "queries.json").read_text())
    return _latest_vectors(folder / "corpus"), np.stack([embedder.embed_query(t) for t in texts])


def main() -> None:
    from usearch.index import Index

    kind, folder = sys.argv[1], Path(sys.argv[2])
    vectors, queries = (_scifact if kind == "scifact" else _scale)(folder)
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, :TOP]
    print(f"{kind}: {len(vectors):,} vectors, {len(queries)} queries")
    for scalar in ("f16", "i8"):
        index = Index(ndim=vectors.shape[1], metric="cos", dtype=scalar, connectivity=16, expansion_add=128, expansion_search=250)
        start = time.perf_counter()
        index.add(np.arange(len(vectors)), vectors, threads=2)
        built = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as tmp:
            index.save(f"{tmp}/index")
            size = Path(f"{tmp}/index").stat().st_size / 2**20
        for ask in ASKS:
            keys = index.search(queries, ask, threads=1).keys
            found = []
            for row, query in zip(keys, queries):  # a research script: one query at a time is fine
                cand = row[row >= 0].astype(np.int64)
                kept = cand[np.argsort(-(vectors[cand] @ query))[:TOP]]
                found.append(len(np.intersect1d(kept, exact[len(found)])) / TOP)
            print(f"  {scalar:>3}: build {built:6.1f} s, file {size:6.1f} MiB, ask {ask}: "
                  f"exact top {TOP} found {np.mean(found):.4f} (min {np.min(found):.2f})", flush=True)


if __name__ == "__main__":
    main()
