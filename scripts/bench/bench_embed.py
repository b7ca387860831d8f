#!/usr/bin/env python
"""Benchmark the embedded engine: throughput on SciFact abstracts and cold query latency.

    python scripts/bench/bench_embed.py                 # everything (about 2 minutes on 2 cores)
    python scripts/bench/bench_embed.py --n 128 --skip-st --cold-runs 3

Throughput: the first ``--n`` SciFact documents (title + " " + text) having at least
``--tokens`` content tokens, cut at exactly ``--tokens`` tokens, embedded at each batch size by
the embedded engine and by ``SentenceTransformer.encode``. Each engine runs in its own
subprocess (torch's OpenMP threads would otherwise compete with onnxruntime's), after one
warm-up batch. Cold query: a fresh interpreter imports ragx, builds the embedder and embeds one
query, with the ONNX cache already warm; wall time of the whole process and the in-process part.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CORPUS = Path("/work/shared/data/scifact/corpus.jsonl")
if str(REPO_ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO_ROOT))


def load_texts(corpus: Path, n: int, tokens: int) -> list[str]:
    from ragx.models.base import WordPieceCounter
    from ragx.models.embedded import DEFAULT_MODEL, resolve_model

    counter = WordPieceCounter(resolve_model(DEFAULT_MODEL)[1] / "tokenizer.json")
    texts: list[str] = []
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            text = f"{doc.get('title', '')} {doc.get('text', '')}".strip()
            off = counter.token_offsets(text)
            if len(off) < tokens:
                continue
            texts.append(text[: off[tokens - 1, 1]])
            if len(texts) == n:
                break
    return texts


def worker(engine: str, texts: list[str], batch_sizes: list[int]) -> dict[str, float]:
    if engine == "embedded":
        from ragx.models.registry import make_embedder

        emb = make_embedder("embedded", "all-MiniLM-L6-v2")
        emb.load()  # type: ignore[attr-defined]

        def encode(batch: list[str], bs: int) -> None:
            emb.embed_documents(batch, batch_size=bs)

    else:
        from sentence_transformers import SentenceTransformer

        from ragx.models.embedded import DEFAULT_MODEL, resolve_model

        st = SentenceTransformer(str(resolve_model(DEFAULT_MODEL)[1]), device="cpu")

        def encode(batch: list[str], bs: int) -> None:
            st.encode(batch, batch_size=bs, convert_to_numpy=True)

    out: dict[str, float] = {}
    for bs in batch_sizes:
        encode(texts[:bs], bs)  # warm-up
        t = time.perf_counter()
        encode(texts, bs)
        out[str(bs)] = len(texts) / (time.perf_counter() - t)
    return out


def cold_query(runs: int) -> tuple[list[float], list[float]]:
    script = (
        "import time; t0 = time.perf_counter()\n"
        "from ragx.models.registry import make_embedder\n"
        "make_embedder('embedded', 'all-MiniLM-L6-v2').embed_query('how are chunks sized?')\n"
        "print(time.perf_counter() - t0)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    walls, inner = [], []
    for _ in range(runs):
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        walls.append(time.perf_counter() - t)
        inner.append(float(proc.stdout.strip().splitlines()[-1]))
    return walls, inner


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--n", type=int, default=256, help="number of texts")
    ap.add_argument("--tokens", type=int, default=200, help="content tokens per text")
    ap.add_argument("--batch-sizes", default="16,32,64")
    ap.add_argument("--skip-st", action="store_true", help="skip the sentence-transformers baseline")
    ap.add_argument("--cold-runs", type=int, default=5)
    ap.add_argument("--worker", choices=["embedded", "st"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    texts = load_texts(args.corpus, args.n, args.tokens)

    if args.worker:
        print(json.dumps(worker(args.worker, texts, batch_sizes)))
        return

    # Make sure the export exists before timing anything.
    from ragx.models.registry import make_embedder

    make_embedder("embedded", "all-MiniLM-L6-v2").load()  # type: ignore[attr-defined]

    print(f"{len(texts)} SciFact texts x {args.tokens} content tokens, {os.cpu_count()} CPUs")
    engines = ["embedded"] + ([] if args.skip_st else ["st"])
    results = {}
    for engine in engines:
        cmd = [sys.executable, __file__, "--worker", engine, "--corpus", str(args.corpus),
               "--n", str(args.n), "--tokens", str(args.tokens), "--batch-sizes", args.batch_sizes]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
        if proc.returncode != 0:
            sys.exit(proc.stderr)
        results[engine] = json.loads(proc.stdout.strip().splitlines()[-1])
    print("\n| batch | " + " | ".join(f"{e} docs/s" for e in engines) + " |")
    print("|---:|" + "---:|" * len(engines))
    for bs in batch_sizes:
        print(f"| {bs} | " + " | ".join(f"{results[e][str(bs)]:.1f}" for e in engines) + " |")

    if args.cold_runs:
        walls, inner = cold_query(args.cold_runs)
        print(
            f"\ncold embed_query (fresh process, warm cache, {args.cold_runs} runs): "
            f"process wall median {statistics.median(walls):.3f} s (min {min(walls):.3f}), "
            f"import+construct+session+query median {statistics.median(inner):.3f} s"
        )


if __name__ == "__main__":
    main()
