#!/usr/bin/env python
"""Throughput of the embedding pool: one server against two, each pinned to its own core, on the same
chunks; then two servers with one killed mid-run.

    python scripts/bench/bench_pool.py [--chunks 20000] [--data ../shared/data/scifact] [--batch 16] [--in-flight 2]

Starts two `scripts/tools/serve_embeddings.py` servers (ragx's embedded all-MiniLM-L6-v2, one onnxruntime
thread, BLAS threads 1), the first under `taskset -c 0`, the second under `taskset -c 1`. The chunks are
50-word windows of the collection's documents. Three runs through `make_embedder("openai", ...)` with
the same batches (ragx/index/embedding.py's plan):
  1. one server (in_flight requests);   2. both servers;   3. both, the second SIGKILLed after --kill-after
     of the run's texts are back.
Prints texts/s of 1 and 2, the speed-up, whether runs 2 and 3 give the bytes of run 1, and the line the pool
printed when the server died. Needs a quiet machine for the speed-up (two cores; the client shares them).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

from ragx.index.embedding import batch_plan
from ragx.models.pool import EmbeddingPool
from ragx.models.registry import make_embedder
from ragx.text_keys import text_keys

SERVE = Path(__file__).resolve().parent.parent / "tools" / "serve_embeddings.py"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def chunks_of(data: Path, n: int, words: int = 50) -> list[str]:
    out: list[str] = []
    with open(data / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            tokens = f"{doc.get('title', '')} {doc['text']}".split()
            out.extend(" ".join(tokens[i : i + words]) for i in range(0, len(tokens), words))
            if len(out) >= n:
                return out[:n]
    raise SystemExit(f"{data} has only {len(out)} chunks of {words} words; ask for fewer")


def start_server(core: int, port: int) -> subprocess.Popen:
    cmd = ["taskset", "-c", str(core), sys.executable, str(SERVE), "--port", str(port), "--threads", "1"]
    proc = subprocess.Popen(cmd, env=os.environ | ONE_THREAD, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit(f"the server on core {core} did not answer in 120 s")


def run(urls: list[str], batches: list[list[str]], in_flight: int, kill: tuple[subprocess.Popen, int] | None = None):
    """(vectors in batch order, seconds, the pool's lines)."""
    pool = make_embedder("openai", "all-MiniLM-L6-v2", base_url=", ".join(urls), in_flight=in_flight, max_retries=3)
    if not isinstance(pool, EmbeddingPool):
        pool = EmbeddingPool([pool], in_flight=in_flight)
    lines: list[str] = []
    pool.notify = lines.append
    out: list[np.ndarray | None] = [None] * len(batches)
    done = 0
    started = time.perf_counter()
    for i, vecs in pool.stream(batches):
        out[i] = vecs
        done += len(vecs)
        if kill is not None and done >= kill[1] and kill[0].poll() is None:
            kill[0].send_signal(signal.SIGKILL)
    seconds = time.perf_counter() - started
    return np.concatenate([v for v in out if v is not None]), seconds, lines, pool.rates()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=20_000)
    ap.add_argument("--data", type=Path, default=Path("../shared/data/scifact"))
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--in-flight", type=int, default=2)
    ap.add_argument("--ports", type=int, nargs=2, default=(8591, 8592))
    ap.add_argument("--kill-after", type=float, default=0.4, help="share of texts back when the second server is killed")
    args = ap.parse_args(argv)
    texts = chunks_of(args.data, args.chunks)
    keys = text_keys(texts)
    lengths = np.array([len(t) // 4 for t in texts], np.int64)
    batches = [[texts[j] for j in b] for b in batch_plan(lengths, keys, args.batch)]
    urls = [f"http://127.0.0.1:{p}/v1" for p in args.ports]
    servers = [start_server(core, port) for core, port in enumerate(args.ports)]
    try:
        run(urls, batches[:4], args.in_flight)  # warm both servers (first requests load the session)
        one, t1, _, _ = run(urls[:1], batches, args.in_flight)
        two, t2, _, rates = run(urls, batches, args.in_flight)
        print(f"{len(texts)} chunks, batches of {args.batch}, {args.in_flight} in flight per server; load {os.getloadavg()[0]:.2f}")
        print(f"one server: {len(texts) / t1:.1f} texts/s ({t1:.1f} s); two servers: {len(texts) / t2:.1f} texts/s "
              f"({t2:.1f} s); speed-up {t1 / t2:.2f}x; per-slot rates {', '.join(f'{r:.1f}' for r in rates.values())}")
        print(f"two servers give the bytes of one: {one.tobytes() == two.tobytes()}")
        killed, t3, lines, _ = run(urls, batches, args.in_flight, kill=(servers[1], int(args.kill_after * len(texts))))
        print(f"second server killed after {args.kill_after:.0%} of the texts: run finished in {t3:.1f} s, "
              f"bytes of the single-server run: {one.tobytes() == killed.tobytes()}")
        for line in lines:
            print(f"  pool said: {line}")
        return 0 if one.tobytes() == two.tobytes() == killed.tobytes() else 1
    finally:
        for proc in servers:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
