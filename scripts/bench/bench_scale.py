"""How ragx scales with the number of chunks: synthetic corpora of N chunks, indexed and queried.

    nice -n 5 python scripts/bench/bench_scale.py --sizes 10000 100000 [--work DIR] [--recall-sample 3000]
    nice -n 5 python scripts/bench/bench_scale.py --sizes 1000000 --out reports/scale-rows.json --merge --plot reports/scale.png

One-file edit times, the build apart from the timed edits (a 1M build takes ~30 min and may run under
load; only the edits need a quiet machine):

    nice -n 10 python scripts/bench/bench_scale.py --sizes 10000 100000 1000000 --work DIR --build-only
    python scripts/bench/bench_scale.py --sizes 10000 100000 1000000 --work DIR --incremental-edits 5
    python scripts/bench/bench_scale.py --sizes 10000 100000 1000000 --work DIR --incremental-edits 5 --watch

--build-only generates each corpus (or reuses DIR's with --keep-corpus) and runs the full index, nothing
else; --incremental-edits then edits one more file per run and times each run in a fresh process
(medians of the runs, the load average before and after). Each call edits other files than the last.
--watch runs `ragx watch --no-index` on the corpus meanwhile, so each run looks only at what changed
(ragx/index/feed.py); its first run walks every file and is not counted.

Corpus: markdown files of 10 sections, one section ~ one chunk, written from a Zipf vocabulary of
20,000 pseudo-words plus real English function words, with topic structure (each file draws most of
its words from one of N/200 topics, each topic a Zipf distribution over its own 300 words). The
embedder is registered by this script only ("bench-hash"): a bag of words (function words dropped)
hashed into 16,384 buckets and sent through one fixed random projection to 384 dimensions, so that
neighbour structure follows shared words and embedding costs almost nothing; its time is measured
and subtracted from the index wall time anyway.

Per size, each step in a fresh process (peak RSS is that process's): full index (wall excluding
embedding, peak RSS, disk of .ragx/), warm in-process queries p50/p95 with and without the graph
(200 topic queries), BM25 for common-word queries, cold one-shot `ragx query --json` (median of 5 after one uncounted, bytecode cached),
an incremental run after editing one file, and the kNN-list recall of the stored graph against
exact lists for a random sample of chunks (exact below graph.EXACT_MAX_PAIRS, so recall is 1 there).
The query step also records its resident memory before and after the HNSW file is loaded (hnswlib
holds a float32 copy of every vector; the float16 vector file is only memory-mapped).

Memory and disk figures are MiB (2^20 bytes; the JSON keys say _mb). Every child is watched: when the machine's available memory falls under --min-free-gb, the child is
killed and the benchmark stops (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
SECTIONS_PER_FILE = 10
FUNCTION_WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from at which "
                  "but have an they you were had her all she there been one their we can has its more when will "
                  "would who so no if out these may into than then only other such some what about over").split()
_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


# ---- the benchmark's embedder ---------------------------------------------------------------------

class _Counter:
    """Token counter of the bench embedder: words and punctuation marks."""

    max_content_tokens = 254

    def token_offsets(self, text: str) -> np.ndarray:
        return np.array([(m.start(), m.end()) for m in _WORD.finditer(text)], dtype=np.int64).reshape(-1, 2)

    def count(self, texts: list[str]) -> np.ndarray:
        return np.array([len(_WORD.findall(t)) for t in texts], dtype=np.int64)


class HashBowEmbedder:
    """Hashed bag of words (function words dropped) through a fixed Gaussian projection; unit vectors."""

    dim, name, max_tokens, buckets = 384, "bench:hash-bow-384", 256, 1 << 14

    def __init__(self) -> None:
        self._proj = np.random.default_rng(1234).normal(size=(self.buckets, self.dim)).astype(np.float32)
        self._bucket: dict[str, int] = {}
        self._skip = set(FUNCTION_WORDS)
        self._counter = _Counter()
        self.seconds = 0.0

    def token_counter(self) -> _Counter:
        return self._counter

    def _buckets(self, text: str) -> list[int]:
        out = []
        for w in re.findall(r"\w+", text.lower()):
            if w in self._skip:
                continue
            b = self._bucket.get(w)
            if b is None:
                b = self._bucket[w] = zlib.crc32(w.encode()) % self.buckets
            out.append(b)
        return out or [0]

    def embed_documents(self, texts, batch_size: int = 32, progress=None) -> np.ndarray:
        t0 = time.perf_counter()
        out = np.zeros((len(texts), self.dim), np.float32)
        for start in range(0, len(texts), 2048):
            part = [self._buckets(t) for t in texts[start : start + 2048]]
            offsets = np.cumsum([0] + [len(p) for p in part[:-1]])
            out[start : start + len(part)] = np.add.reduceat(self._proj[np.concatenate(part)], offsets, axis=0)
            if progress:
                progress(len(part))
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        self.seconds += time.perf_counter() - t0
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


_EMBEDDER: HashBowEmbedder | None = None


def register() -> HashBowEmbedder:
    """Register the "bench-hash" engine in this process (one shared instance, to read its timer)."""
    global _EMBEDDER
    from ragx.models.registry import register_engine

    _EMBEDDER = HashBowEmbedder()
    register_engine("bench-hash", lambda model, **opts: _EMBEDDER)
    return _EMBEDDER


# ---- the synthetic corpus -------------------------------------------------------------------------

def _zipf(n: int, s: float = 1.07) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1) ** s
    return p / p.sum()


def _vocabulary(rng: np.random.Generator, n: int) -> np.ndarray:
    """n distinct pronounceable pseudo-words of 2-4 syllables."""
    syll = np.array([c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")])
    words: dict[str, None] = {}
    while len(words) < n:
        for parts, k in zip(rng.choice(syll, size=(n, 4)), rng.integers(2, 5, size=n)):
            words.setdefault("".join(parts[:k]))
    return np.array(list(words)[:n])


def generate(root: Path, n_chunks: int, seed: int = 7) -> dict:
    """Write ~n_chunks sections (one chunk each) as markdown files under root; returns the topic words."""
    rng = np.random.default_rng(seed)
    vocab = _vocabulary(rng, 20_000)
    n_topics = max(20, n_chunks // 200)
    topic_words = np.stack([rng.choice(len(vocab), 300, replace=False) for _ in range(n_topics)])
    n_files = max(1, n_chunks // SECTIONS_PER_FILE)
    file_topic = rng.integers(0, n_topics, n_files)
    root.mkdir(parents=True, exist_ok=True)
    (root / "ragx.toml").write_text('[embeddings]\nengine = "bench-hash"\nmodel = "bow"\n')
    fw, gz, tz = np.array(FUNCTION_WORDS), _zipf(20_000), _zipf(300)
    words_per_section = 110
    for f in range(n_files):
        n = SECTIONS_PER_FILE * words_per_section
        kind = rng.choice(3, size=n, p=[0.40, 0.45, 0.15])  # function word, topic word, general word
        topic = np.where(rng.random(n) < 0.8, file_topic[f], rng.integers(0, n_topics, n))
        picked = np.where(kind == 0, fw[rng.integers(0, len(fw), n)],
                          np.where(kind == 1, vocab[topic_words[topic, rng.choice(300, n, p=tz)]],
                                   vocab[rng.choice(20_000, n, p=gz)]))
        sections = picked.reshape(SECTIONS_PER_FILE, words_per_section)
        text = "".join(f"## {' '.join(s[:3])} {i}\n\n{' '.join(s[3:])}.\n\n" for i, s in enumerate(sections))
        sub = root / f"d{f // 1000:04d}"
        sub.mkdir(exist_ok=True)
        (sub / f"f{f:07d}.md").write_text(f"# file {f}\n\n{text}")
    queries = [" ".join(vocab[topic_words[t, rng.choice(300, 4, p=tz)]]) for t in rng.integers(0, n_topics, 200)]
    (root.parent / "queries.json").write_text(json.dumps(queries))
    return {"files": n_files, "topics": n_topics}


# ---- steps, each run in a child process -----------------------------------------------------------

def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mb(kind: str = "VmRSS") -> float:
    """This process's resident memory now: VmRSS (all), RssAnon (its own heap) or RssFile (mapped files)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{kind}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _rss_split() -> dict:
    return {"rss_anon_mb": _current_rss_mb("RssAnon"), "rss_file_mb": _current_rss_mb("RssFile")}


def _available_gb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2**20
    return float("inf")


def step_index(root: Path) -> dict:
    emb = register()
    from ragx.api import Corpus

    t0 = time.perf_counter()
    report = Corpus.open(root).index()
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "embed_s": emb.seconds, "index_s_excl_embedding": wall - emb.seconds,
            "chunks": report.chunks, "embedded": report.embedded_chunks, "peak_rss_mb": _rss_mb(),
            "stage_s": report.stage_seconds, "scan": report.scan_kind}


def _percentiles(xs: list[float]) -> dict:
    a = np.array(xs) * 1000
    return {"p50_ms": float(np.percentile(a, 50)), "p95_ms": float(np.percentile(a, 95))}


def step_queries(root: Path) -> dict:
    register()
    from ragx.api import Corpus
    from ragx.search.lexical import bm25_matches

    queries = json.loads((root.parent / "queries.json").read_text())
    corpus = Corpus.open(root, need_index=True)
    rss_open = _current_rss_mb()
    corpus.query(queries[0])  # warm: index files mapped, HNSW loaded
    out: dict = {"rss_opened_mb": rss_open, "rss_after_first_query_mb": _current_rss_mb(),
                 "after_first_query": _rss_split(),
                 "hnsw_file_mb": _du_mb(_newest_gen(root), "vectors.hnsw"), "vectors_file_mb": _du_mb(_newest_gen(root), "vectors.npy")}
    for label, graph in (("with_graph", True), ("no_graph", False)):
        times = []
        for q in queries:
            t0 = time.perf_counter()
            corpus.query(q, graph=graph, rerank=False, expand=False)
            times.append(time.perf_counter() - t0)
        out[label] = _percentiles(times)
    out["after_dense_queries"] = _rss_split() | {"peak_rss_mb": _rss_mb()}
    store = corpus.searcher.store
    common = ["the of and", "which would have been", "it was not the one"]
    times, hits = [], []
    with corpus.searcher.reading() as snap:
        for q in common * 5:
            t0 = time.perf_counter()
            ids, _ = bm25_matches(snap, store, q)
            times.append(time.perf_counter() - t0)
            hits.append(len(ids))
    out["bm25_common_words"] = _percentiles(times) | {"matches_median": int(statistics.median(hits))}
    out["peak_rss_mb"] = _rss_mb()
    out["rss_end_mb"] = _current_rss_mb()
    out["end"] = _rss_split()
    out["bm25_topic"] = _bm25_topic(corpus, queries)  # after the memory figures
    return out


def _bm25_topic(corpus, queries: list[str]) -> dict:
    """BM25 alone (the postings) for each topic query, on one snapshot."""
    from ragx.search.lexical import bm25_matches

    store = corpus.searcher.store
    times = []
    with corpus.searcher.reading() as snap:
        for q in queries:
            t0 = time.perf_counter()
            bm25_matches(snap, store, q)
            times.append(time.perf_counter() - t0)
    return _percentiles(times)


def step_recall(root: Path, sample: int) -> dict:
    from ragx.config import load_settings
    from ragx.index import graph as g
    from ragx.index.layout import Layout
    from ragx.index.snapshot import Snapshot
    from ragx.index.store import Store

    layout = Layout(root)
    store = Store(layout.db, readonly=True)
    manifest = store.manifest()
    snap = Snapshot.load(layout.gen(int(manifest["generation"])))
    ids, vecs = snap.ids, np.asarray(snap.vectors, dtype=np.float32)  # stored float16
    settings = load_settings(root).graph
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(ids, min(sample, len(ids)), replace=False))
    es, ed = g.top_k_lists(rows, vecs[np.searchsorted(ids, rows)], ids, vecs, settings.k, settings.min_sim)  # exact
    src, dst, _ = store.knn_arrays()
    mine = np.isin(src, rows)
    exact = set(zip(es.tolist(), ed.tolist()))
    stored = set(zip(src[mine].tolist(), dst[mine].tolist()))
    approximate = len(ids) * len(ids) > g.EXACT_MAX_PAIRS  # how the full build made its lists
    return {"sample_rows": int(len(rows)), "exact_edges": len(exact), "recall": len(exact & stored) / max(1, len(exact)),
            "built_approximately": bool(approximate)}


def graph_only(n: int, sample: int) -> dict:
    """The graph step alone at n chunks (no files, no SQLite): HNSW build, approximate lists for every
    chunk, and their recall against exact lists of a random sample; exact time measured on the sample
    and scaled to n rows."""
    from ragx.index import graph as g
    from ragx.index.vectors import VectorIndex

    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"ragx-graph-only-{n}"
    generate(work / "corpus", n)
    texts = [p.read_text() for p in sorted((work / "corpus").rglob("*.md"))]
    sections = [sec for t in texts for sec in t.split("\n## ")[1:]]
    shutil.rmtree(work, ignore_errors=True)
    vecs = HashBowEmbedder().embed_documents(sections)
    ids = np.arange(1, len(vecs) + 1, dtype=np.int64)
    t0 = time.perf_counter()
    index = VectorIndex.build(ids, vecs)
    hnsw_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    src, dst = g.approximate_top_k_lists(ids, vecs, ids, vecs, 8, 0.55, index)
    approx_s = time.perf_counter() - t0
    rows = np.sort(np.random.default_rng(0).choice(ids, min(sample, len(ids)), replace=False))
    t0 = time.perf_counter()
    es, ed = g.top_k_lists(rows, vecs[rows - 1], ids, vecs, 8, 0.55)
    exact_sample_s = time.perf_counter() - t0
    mine = np.isin(src, rows)
    exact = set(zip(es.tolist(), ed.tolist()))
    got = set(zip(src[mine].tolist(), dst[mine].tolist()))
    return {"chunks": len(ids), "hnsw_build_s": hnsw_s, "approx_lists_s": approx_s,
            "exact_lists_s_extrapolated": exact_sample_s * len(ids) / len(rows), "sample_rows": len(rows),
            "exact_edges": len(exact), "recall": len(exact & got) / max(1, len(exact))}


def step_cli(args: list[str]) -> None:
    register()
    from ragx.cli.main import run

    run(args)


MIN_FREE_GB = 4.0  # --min-free-gb


def _child(*args: str) -> dict:
    """Run one step in a fresh process; kill it (and stop) if the machine runs short of memory."""
    with subprocess.Popen([sys.executable, str(HERE), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        while True:
            try:  # returns the moment the child ends: the walls timed around this call are not rounded up
                out, err = proc.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if _available_gb() < MIN_FREE_GB:
                    proc.kill()
                    raise SystemExit(f"step {args[0]} aborted: the machine has under {MIN_FREE_GB} GB available") from None
    if proc.returncode != 0:
        raise SystemExit(f"step {args[0]} failed: {err.strip()[-800:]}")
    return json.loads(out.strip().splitlines()[-1])


def _du_mb(path: Path, pattern: str = "*") -> float:
    return sum(p.stat().st_size for p in path.rglob(pattern) if p.is_file()) / 2**20


def _cold_query(root: Path, runs: int = 5) -> float:
    """Median wall of `runs` one-shot queries, after one that is not counted. Bytecode is cached (in
    a folder of the work dir), as an installed package has it: with PYTHONDONTWRITEBYTECODE set, every
    module edited since its .pyc was written is compiled again in every run, which times the compiler."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(root.parent / "pycache")
    walls = []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, str(HERE), "_cli", "query", f"topic words {i}", "--json", "--root", str(root)],
                              capture_output=True, env=env)
        walls.append(time.perf_counter() - t0)
        if done.returncode not in (0, 1):
            raise SystemExit(f"cold query failed: {done.stderr.decode()[-400:]}")
    return statistics.median(walls[1:])


def _newest_gen(root: Path) -> Path:
    return sorted((root / ".ragx").glob("gen-*"))[-1]


def _generation_bytes(root: Path) -> dict:
    """MB of the newest generation folder written by its run, and MB hard-linked from the one before."""
    newest = _newest_gen(root)
    files = [p.stat() for p in newest.iterdir() if p.is_file()]
    return {"gen_written_mb": sum(s.st_size for s in files if s.st_nlink == 1) / 2**20,
            "gen_linked_mb": sum(s.st_size for s in files if s.st_nlink > 1) / 2**20}


def _edit_one_file(root: Path, which: int = 0) -> None:
    """Append a section to a file: the first of folder `which`, or (fewer folders: 10k chunks have one)
    the next file of a folder already edited."""
    folders = sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("d"))
    files = sorted(folders[which % len(folders)].glob("*.md"))
    victim = files[(which // len(folders)) % len(files)]
    backup = root.parent / "edited.orig"
    if not backup.exists():  # --keep-corpus restores it
        shutil.copy2(victim, backup)
    with open(victim, "a") as fh:
        fh.write("\n## an edited section\n\nfresh words about something else entirely, added by the benchmark.\n")


def _corpus(n: int, base: Path, keep: bool) -> Path:
    """The corpus of n chunks: generated afresh, or (keep) the one a previous run generated, restored."""
    root, marker = base / "corpus", base / "generated.json"
    if keep and marker.exists():
        shutil.rmtree(root / ".ragx", ignore_errors=True)
        backup = base / "edited.orig"
        if backup.exists():
            shutil.copy2(backup, sorted(root.glob("d0000/*.md"))[0])
        print(f"[{n}] reusing the corpus of {marker.read_text()}", flush=True)
        return root
    shutil.rmtree(base, ignore_errors=True)
    t0 = time.perf_counter()
    info = generate(root, n)
    marker.write_text(json.dumps(info))
    print(f"[{n}] generated {info['files']} files, {info['topics']} topics in {time.perf_counter() - t0:.0f} s", flush=True)
    return root


def bench_size(n: int, work: Path, sample: int, keep: bool = False) -> dict:
    root = _corpus(n, work / f"n{n}", keep)
    full = _child("_index", str(root))
    print(f"[{n}] index: {json.dumps(full)}", flush=True)
    row = {"n_target": n, "index": full, "disk_mb": _du_mb(root / ".ragx")}
    row["queries"] = _child("_queries", str(root))
    print(f"[{n}] queries: {json.dumps(row['queries'])}", flush=True)
    row["cold_query_s"] = _cold_query(root)
    _edit_one_file(root)
    t0 = time.perf_counter()
    row["incremental"] = _child("_index", str(root)) | {"process_wall_s": time.perf_counter() - t0} | _generation_bytes(root)
    row["recall"] = _child("_recall", str(root), str(sample))
    print(f"[{n}] cold {row['cold_query_s']:.2f} s, incremental {json.dumps(row['incremental'])}, recall {json.dumps(row['recall'])}", flush=True)
    return row


def build_only(n: int, work: Path, keep: bool) -> dict:
    """The corpus and its full index, nothing timed but the build: for --incremental-edits later."""
    root = _corpus(n, work / f"n{n}", keep)
    t0 = time.perf_counter()
    full = _child("_index", str(root))
    out = {"chunks": full["chunks"], "build_wall_s": time.perf_counter() - t0, "load_after": os.getloadavg()}
    (work / f"n{n}" / "built.json").write_text(json.dumps(out))
    print(f"[{n}] built: {json.dumps(out)}", flush=True)
    return out


def _start_watcher(root: Path) -> subprocess.Popen:
    """`ragx watch --no-index` on the corpus (ragx/index/watcher.py), once its first session is ready."""
    ready = root / ".ragx" / "watch" / "watcher.json"
    ready.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "ragx.cli.main", "watch", "--no-index", "--root", str(root)],
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"ragx watch did not start: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.05)
    return proc


def incremental_runs(n: int, work: Path, edits: int, watched: bool = False) -> dict:
    """One-file edits on the index a previous run left in --work (each in another folder, each run in a
    fresh process, timed from process start): the steady state of an index that is kept up to date.
    Each call edits files the calls before did not (their count is kept in the work dir). `watched`:
    with `ragx watch` running, so that each run looks only at what changed (one uncounted edit first:
    the first run of a watcher's session walks every file and records the cursor)."""
    root = work / f"n{n}" / "corpus"
    if not (root / ".ragx" / "index.sqlite").exists():
        raise SystemExit(f"no index at {root}: run --sizes {n} --build-only first")
    done_file = work / f"n{n}" / "edits-done"
    done = int(done_file.read_text()) if done_file.exists() else 0
    watcher = _start_watcher(root) if watched else None
    try:
        if watched:
            done += 1
            _edit_one_file(root, done)
            done_file.write_text(str(done))
            print(f"[{n}] first run of the watcher's session (not counted): {json.dumps(_child('_index', str(root)))}", flush=True)
        load_before, runs = os.getloadavg(), []
        for i in range(edits):
            _edit_one_file(root, 1 + done + i)
            done_file.write_text(str(done + i + 1))
            t0 = time.perf_counter()
            step = _child("_index", str(root))
            runs.append(step | {"process_wall_s": time.perf_counter() - t0} | _generation_bytes(root))
            print(f"[{n}] edit {i + 1}: {json.dumps(runs[-1])}", flush=True)
    finally:
        if watcher is not None:
            watcher.terminate()
            watcher.wait(30)
    walls = [r["process_wall_s"] for r in runs]
    return {"chunks": runs[-1]["chunks"], "edits": edits, "watched": watched, "scans": sorted({r["scan"] for r in runs}),
            "median_process_wall_s": statistics.median(walls),
            "walls_s": walls, "load_before": load_before, "load_after": os.getloadavg(), "runs": runs}


def _edit_table(rows: list[dict]) -> str:
    """Median one-file edit per size, and its ratio to the smallest size's."""
    lines = ["| chunks | one-file edit, median | runs | vs smallest | load before / after |", "|---:|---:|---|---:|---|"]
    first = rows[0]["median_process_wall_s"]
    for r in rows:
        runs = ", ".join(f"{w:.2f}" for w in r["walls_s"])
        load = f"{r['load_before'][0]:.2f} / {r['load_after'][0]:.2f}"
        lines.append(f"| {r['chunks']:,} | {r['median_process_wall_s']:.2f} s | {runs} | {r['median_process_wall_s'] / first:.2f}x | {load} |")
    return "\n".join(lines)


def _table(rows: list[dict]) -> str:
    lines = ["| chunks | index excl. embedding | of which graph | index peak RSS | disk | warm query p50/p95 (graph) | warm p50/p95 (no graph) "
             "| BM25 common words p50 | query peak RSS | cold query | one-file incremental | kNN recall (sample) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        q = r["queries"]
        lines.append(
            f"| {r['index']['chunks']:,} | {r['index']['index_s_excl_embedding']:.1f} s | {_graph_s(r)} | {r['index']['peak_rss_mb']:.0f} MiB "
            f"| {r['disk_mb']:.0f} MiB | {q['with_graph']['p50_ms']:.1f} / {q['with_graph']['p95_ms']:.1f} ms "
            f"| {q['no_graph']['p50_ms']:.1f} / {q['no_graph']['p95_ms']:.1f} ms | {q['bm25_common_words']['p50_ms']:.0f} ms "
            f"| {q['peak_rss_mb']:.0f} MiB | {r['cold_query_s']:.2f} s | {r['incremental']['process_wall_s']:.2f} s "
            f"| {r['recall']['recall']:.3f} ({r['recall']['sample_rows']}{', approx.' if r['recall']['built_approximately'] else ', exact'}) |")
    return "\n".join(lines)


def _graph_s(row: dict) -> str:
    """The graph's share of the full run: kNN lists, edge weights and rows, then communities (the HNSW
    index they read is the "vectors" stage, built for dense search with or without the graph)."""
    stages = row["index"].get("stage_s")
    return f"{stages['graph'] + stages['communities']:.1f} s" if stages else "-"


COSTS = {  # label -> how to read it from a row (each plotted against the number of chunks)
    "index excl. embedding (s)": lambda r: r["index"]["index_s_excl_embedding"],
    "index peak RSS (MiB)": lambda r: r["index"]["peak_rss_mb"],
    "disk (MiB)": lambda r: r["disk_mb"],
    "warm query p50, graph (ms)": lambda r: r["queries"]["with_graph"]["p50_ms"],
    "BM25 common words p50 (ms)": lambda r: r["queries"]["bm25_common_words"]["p50_ms"],
    "query peak RSS (MiB)": lambda r: r["queries"]["peak_rss_mb"],
    "cold query (s)": lambda r: r["cold_query_s"],
    "one-file incremental (s)": lambda r: r["incremental"]["process_wall_s"],
}


def _plot(rows: list[dict], path: Path) -> None:
    """Each cost against N on log-log axes, one panel each (a slope of 1 is linear growth)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["index"]["chunks"] for r in rows]
    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    for ax, (label, read) in zip(axes.flat, COSTS.items()):
        ax.loglog(n, [read(r) for r in rows], "o-")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("chunks")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        step, rest = sys.argv[1], sys.argv[2:]
        if step == "_cli":
            return step_cli(rest)
        result = {"_index": lambda: step_index(Path(rest[0])), "_queries": lambda: step_queries(Path(rest[0])),
                  "_recall": lambda: step_recall(Path(rest[0]), int(rest[1]))}[step]()
        print(json.dumps(result))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("RAGX_CACHE_DIR", "/tmp")) / "bench-scale")
    ap.add_argument("--recall-sample", type=int, default=3000)
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    ap.add_argument("--plot", type=Path, default=None, help="also draw each cost against N, log-log, into this PNG")
    ap.add_argument("--graph-only", action="store_true", help="only the graph step (HNSW, lists, recall) per size")
    ap.add_argument("--merge", action="store_true", help="keep the rows of other sizes already in --out (table and plot show all)")
    ap.add_argument("--keep-corpus", action="store_true", help="reuse a corpus generated by an earlier run in --work (its index is deleted)")
    ap.add_argument("--incremental-edits", type=int, default=0, help="only time this many one-file edits on the index already in --work")
    ap.add_argument("--watch", action="store_true", help="with --incremental-edits: run `ragx watch` meanwhile (index runs read its feed)")
    ap.add_argument("--build-only", action="store_true", help="only generate each corpus and build its full index (for --incremental-edits)")
    ap.add_argument("--min-free-gb", type=float, default=MIN_FREE_GB, help="kill a step when the machine has less memory available")
    args = ap.parse_args()
    globals()["MIN_FREE_GB"] = args.min_free_gb
    if args.build_only:
        for n in args.sizes:
            build_only(n, args.work, args.keep_corpus)
        return
    if args.incremental_edits:
        rows = [incremental_runs(n, args.work, args.incremental_edits, args.watch) for n in args.sizes]
        for row in rows:
            print(json.dumps(row), flush=True)
        print(_edit_table(rows))
        return
    if args.graph_only:
        for n in args.sizes:
            print(json.dumps(graph_only(n, args.recall_sample)), flush=True)
        return
    rows = [bench_size(n, args.work, args.recall_sample, args.keep_corpus) for n in args.sizes]
    if args.merge and args.out and args.out.exists():
        fresh = {r["n_target"] for r in rows}
        rows = sorted([r for r in json.loads(args.out.read_text()) if r["n_target"] not in fresh] + rows, key=lambda r: r["n_target"])
    print(_table(rows))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    if args.plot:
        _plot(rows, args.plot)


if __name__ == "__main__":
    main()
