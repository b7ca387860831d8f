"""hnswlib against usearch (memory-mapped "view") on the scale benchmark's vectors, side by side.

    nice -n 5 python scripts/bench/bench_ann.py --n 100000 --work /work/cache/ann3/bench
    nice -n 5 python scripts/bench/bench_ann.py --n 1000000 --work /work/cache/ann3/bench --vectors <gen>/vectors.npy

Data: the first N float16 rows of a ragx vectors.npy written by scripts/bench/bench_scale.py (--vectors), or
N sections generated afresh by bench_scale's generator and embedded by its hashed bag-of-words
embedder, rounded to float16 as ragx stores them. Queries: 1,000 topic queries written the way
bench_scale writes its 200 (4 words of one topic, Zipf-weighted), from the same vocabulary and topics
(seed 7), embedded the same way; plus 1,000 stored rows used as queries (the graph build's kNN lists).
Exact neighbours by blocked numpy products over the float16 values widened to float32.

Each step runs in a fresh process: build (wall, peak RSS, file size), then per backend and setting
"open" (import + open time, first query, RSS anon/file after open, after the first query and after
100 single queries, warm p50/p95 of those 100, recall@10/@100 of the 1,000 topic queries at top 100
and recall@10 of the stored-row queries at the graph's setting). `--evict` drops the index file from
the page cache first (posix_fadvise DONTNEED: no root needed), so open and first query are cold.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from importlib import import_module
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
DIM = 384
N_QUERIES = 1000
TOP = 100
HNSW_M, HNSW_EF_CONSTRUCTION, HNSW_EF = 16, 200, 200  # ragx/index/vectors.py
GRAPH_K, GRAPH_EF = 10, 64                             # knn_batch: graph lists ask ~k=9 at ef 64


def _status_mb(kind: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{kind}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _rss() -> dict:
    return {"anon_mb": round(_status_mb("RssAnon"), 1), "file_mb": round(_status_mb("RssFile"), 1)}


# ---- data ------------------------------------------------------------------------------------------

def _topic_queries(n_chunks: int, count: int) -> list[str]:
    """Queries as bench_scale.generate writes them, from its vocabulary and topics (same rng draws)."""
    from bench_scale import _vocabulary, _zipf

    rng = np.random.default_rng(7)
    vocab = _vocabulary(rng, 20_000)
    n_topics = max(20, n_chunks // 200)
    topic_words = np.stack([rng.choice(len(vocab), 300, replace=False) for _ in range(n_topics)])
    qrng, tz = np.random.default_rng(99), _zipf(300)
    return [" ".join(vocab[topic_words[t, qrng.choice(300, 4, p=tz)]]) for t in qrng.integers(0, n_topics, count)]


def _generated_vectors(n: int, work: Path) -> np.ndarray:
    import shutil

    from bench_scale import HashBowEmbedder, generate

    root = work / "corpus-tmp"
    generate(root, n)
    sections = [sec for p in sorted(root.rglob("*.md")) for sec in p.read_text().split("\n## ")[1:]]
    shutil.rmtree(root, ignore_errors=True)
    return HashBowEmbedder().embed_documents(sections).astype(np.float16)


def _exact_top(queries: np.ndarray, base: np.ndarray, k: int, block: int = 50_000) -> np.ndarray:
    """Row numbers of the exact k best cosines of each query, best first (blocked products)."""
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    best_ids = np.empty((len(q), 0), np.int64)
    best_sims = np.empty((len(q), 0), np.float32)
    for start in range(0, len(base), block):
        rows = base[start : start + block].astype(np.float32)
        rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        sims = q @ rows.T
        part = np.argpartition(-sims, min(k, sims.shape[1] - 1), axis=1)[:, :k]
        best_ids = np.concatenate([best_ids, part + start], axis=1)
        best_sims = np.concatenate([best_sims, np.take_along_axis(sims, part, axis=1)], axis=1)
        keep = np.argsort(-best_sims, axis=1, kind="stable")[:, :k]
        best_ids, best_sims = np.take_along_axis(best_ids, keep, axis=1), np.take_along_axis(best_sims, keep, axis=1)
    return best_ids


def step_prepare(n: int, work: Path, source: str | None) -> dict:
    from bench_scale import HashBowEmbedder

    t0 = time.perf_counter()
    if source:
        base = np.ascontiguousarray(np.load(source, mmap_mode="r")[:n])
    else:
        base = _generated_vectors(n, work)
    n = len(base)
    np.save(work / "base.npy", base)
    queries = HashBowEmbedder().embed_documents(_topic_queries(n, N_QUERIES)).astype(np.float16).astype(np.float32)
    rows = np.sort(np.random.default_rng(0).choice(n, N_QUERIES, replace=False))
    gq = base[rows].astype(np.float32)
    truth = _exact_top(np.concatenate([queries, gq]), base, TOP)
    np.savez(work / "queries.npz", topic=queries, graph=gq, graph_rows=rows,
             truth_topic=truth[:N_QUERIES], truth_graph=truth[N_QUERIES:, : GRAPH_K + 1])
    return {"n": n, "prepare_s": time.perf_counter() - t0}


# ---- backends --------------------------------------------------------------------------------------

def _file(work: Path, backend: str) -> Path:
    return work / {"hnswlib": "index.hnsw", "usearch-f16": "index-f16.usearch", "usearch-i8": "index-i8.usearch"}[backend]


def step_build(work: Path, backend: str) -> dict:
    base = np.load(work / "base.npy").astype(np.float32)  # the float16 values, as ragx hands them over
    labels = np.arange(len(base), dtype=np.int64)
    threads = os.cpu_count() or 1
    t0 = time.perf_counter()
    if backend == "hnswlib":
        import hnswlib

        index = hnswlib.Index(space="cosine", dim=DIM)
        index.init_index(max_elements=len(base), ef_construction=HNSW_EF_CONSTRUCTION, M=HNSW_M)
        index.set_num_threads(threads)
        index.add_items(base, labels)
        built = time.perf_counter() - t0
        index.save_index(str(_file(work, backend)))
    else:
        from usearch.index import Index

        index = Index(ndim=DIM, metric="cos", dtype=backend.split("-")[1], connectivity=HNSW_M, expansion_add=HNSW_EF_CONSTRUCTION)
        index.add(labels, base, threads=threads)
        built = time.perf_counter() - t0
        index.save(str(_file(work, backend)))
    return {"build_s": built, "save_s": time.perf_counter() - t0 - built, "threads": threads,
            "file_mb": _file(work, backend).stat().st_size / 2**20,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _evict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


class _Hnsw:
    def __init__(self, path: Path, ef: int, view: bool):
        import hnswlib

        self.index = hnswlib.Index(space="cosine", dim=DIM)
        self.index.load_index(str(path), max_elements=0)
        self.index.set_num_threads(os.cpu_count() or 1)
        self.ef = ef

    def search(self, rows: np.ndarray, k: int, ef: int | None = None) -> np.ndarray:
        self.index.set_ef(max(ef or self.ef, k))
        return self.index.knn_query(rows, k=k)[0].astype(np.int64)


class _Usearch:
    def __init__(self, path: Path, ef: int, view: bool):
        from usearch.index import Index

        self.index = Index.restore(str(path), view=view)
        self.ef = ef

    def search(self, rows: np.ndarray, k: int, ef: int | None = None) -> np.ndarray:
        self.index.expansion_search = max(ef or self.ef, k)
        found = self.index.search(rows, k, threads=os.cpu_count() or 1)
        return np.asarray(found.keys, dtype=np.int64).reshape(len(rows), -1)


def _recall(found: np.ndarray, truth: np.ndarray, k: int) -> float:
    hits = sum(len(np.intersect1d(f[:k], t[:k])) for f, t in zip(found, truth))
    return hits / (len(truth) * k)


def step_open(work: Path, backend: str, ef: int, view: bool, evict: bool, graph_ef: int) -> dict:
    path = _file(work, backend)
    q = np.load(work / "queries.npz")
    if evict:
        _evict(path)
    t0 = time.perf_counter()
    import_module("hnswlib" if backend == "hnswlib" else "usearch.index")
    import_s = time.perf_counter() - t0
    rss0 = _rss()
    t0 = time.perf_counter()
    index = (_Hnsw if backend == "hnswlib" else _Usearch)(path, ef, view)
    open_s = time.perf_counter() - t0
    rss_open = _rss()
    t0 = time.perf_counter()
    index.search(q["topic"][:1], TOP)
    first_ms = (time.perf_counter() - t0) * 1000
    rss_first = _rss()
    times = []
    for row in q["topic"][1:101]:
        t0 = time.perf_counter()
        index.search(row[None, :], TOP)
        times.append((time.perf_counter() - t0) * 1000)
    rss_100 = _rss()
    topic = index.search(q["topic"], TOP)
    t0 = time.perf_counter()
    graph = index.search(q["graph"], GRAPH_K + 1, graph_ef)
    graph_s = time.perf_counter() - t0
    return {"backend": backend, "view": view, "ef": ef, "evicted": evict, "file_mb": round(path.stat().st_size / 2**20, 1),
            "import_s": round(import_s, 4), "open_s": round(open_s, 4), "first_query_ms": round(first_ms, 2),
            "warm_p50_ms": round(float(np.percentile(times, 50)), 3), "warm_p95_ms": round(float(np.percentile(times, 95)), 3),
            "recall@10": round(_recall(topic, q["truth_topic"], 10), 4), "recall@100": round(_recall(topic, q["truth_topic"], 100), 4),
            "graph_ef": graph_ef, "graph_recall@10": round(_recall(graph[:, 1:], q["truth_graph"][:, 1:], GRAPH_K), 4),
            "graph_batch_ms_per_row": round(graph_s * 1000 / len(graph), 3),
            "rss_before": rss0, "rss_open": rss_open, "rss_first": rss_first, "rss_after_100": rss_100}


# ---- driver ----------------------------------------------------------------------------------------

def _child(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(HERE), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"step {args} failed: {done.stderr.strip()[-1500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    """The open steps as a markdown table (cold = the file evicted from the page cache first)."""
    head = ("| backend | mode | ef | cache | open (import) | first query | warm p50/p95 | recall@10/@100 | graph recall@10 (ef 64) | "
            "RSS anon/file after open | after 100 queries |\n|" + "---|" * 11)
    lines = [head]
    for r in rows:
        if "backend" not in r:
            continue
        lines.append(
            f"| {r['backend']} | {'view' if r['view'] else 'load'} | {r['ef']} | {'cold' if r['evicted'] else 'warm'} "
            f"| {r['open_s'] * 1000:.0f} ms ({r['import_s'] * 1000:.0f} ms) | {r['first_query_ms']:.1f} ms "
            f"| {r['warm_p50_ms']:.2f} / {r['warm_p95_ms']:.2f} ms | {r['recall@10']:.4f} / {r['recall@100']:.4f} "
            f"| {r['graph_recall@10']:.4f} | {r['rss_open']['anon_mb']:.0f} / {r['rss_open']['file_mb']:.0f} MB "
            f"| {r['rss_after_100']['anon_mb']:.0f} / {r['rss_after_100']['file_mb']:.0f} MB |")
    builds = [f"{r['build']}: build {r['build_s']:.1f} s, file {r['file_mb']:.0f} MB, peak RSS {r['peak_rss_mb']:.0f} MB"
              for r in rows if "build" in r]
    return "\n".join(lines + [""] + builds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--work", type=Path, default=Path("/tmp/ragx-bench-ann"))
    ap.add_argument("--vectors", help="a ragx vectors.npy to take the first N rows of (else generate)")
    ap.add_argument("--backends", nargs="+", default=["hnswlib", "usearch-f16"])
    ap.add_argument("--usearch-ef", type=int, nargs="+", default=[100, 200, 300])
    ap.add_argument("--skip-build", action="store_true", help="reuse the data and index files of an earlier run")
    ap.add_argument("--keep-data", action="store_true", help="reuse the data of an earlier run, build again")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--table", type=Path, help="print the markdown table of a saved --out file and stop")
    ap.add_argument("--step", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text())))
        return
    if args.step:
        kind, rest = args.step[0], args.step[1:]
        if kind == "prepare":
            out = step_prepare(int(rest[0]), Path(rest[1]), rest[2] if len(rest) > 2 else None)
        elif kind == "build":
            out = step_build(Path(rest[0]), rest[1])
        else:
            out = step_open(Path(rest[0]), rest[1], int(rest[2]), rest[3] == "view", rest[4] == "evict", int(rest[5]))
        print(json.dumps(out))
        return
    work = args.work / f"n{args.n}"
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    if not args.skip_build:
        if not (args.keep_data and (work / "queries.npz").exists()):
            rows.append(_child("--step", "prepare", str(args.n), str(work), *([args.vectors] if args.vectors else [])))
            print(json.dumps(rows[-1]), flush=True)
        for backend in args.backends:
            rows.append({"build": backend} | _child("--step", "build", str(work), backend))
            print(json.dumps(rows[-1]), flush=True)
    plans = []
    for backend in args.backends:
        if backend == "hnswlib":
            plans += [(backend, HNSW_EF, "load", GRAPH_EF)]
        else:
            plans += [(backend, ef, "view", GRAPH_EF) for ef in args.usearch_ef] + [(backend, args.usearch_ef[0], "load", GRAPH_EF)]
    for backend, ef, mode, gef in plans:
        for evict in ("evict", "cached"):
            rows.append(_child("--step", "open", str(work), backend, str(ef), mode, evict, str(gef)))
            print(json.dumps(rows[-1]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    print(table(rows))


if __name__ == "__main__":
    main()
