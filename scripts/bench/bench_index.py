#!/usr/bin/env python
"""Index throughput against embedding alone, and incremental re-runs.

    python scripts/bench/bench_index.py DATA_DIR [--work DIR]      e.g. ../shared/data/scifact

1. materialise the BEIR folder into a fresh folder and time `ragx index` on it (wall clock, new process);
2. read the stored chunk texts back and time embedding exactly those texts with the same engine and
   batch size, alone, in a new process;
3. time a second `ragx index` with nothing changed, then edit one file and index again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EMBED_ALONE = """
import sqlite3, sys, time
from ragx.api import Corpus
corpus = Corpus.open(sys.argv[1])
texts = [r[0] for r in sqlite3.connect(corpus.layout.db).execute("SELECT text FROM chunks ORDER BY id")]
emb = corpus.embedder
t0 = time.perf_counter()
emb.embed_query("warm up the session")
t1 = time.perf_counter()
emb.embed_documents(texts, batch_size=corpus.settings.embeddings.batch_size)
print(len(texts), time.perf_counter() - t1, t1 - t0)
"""


def ragx(*args: str) -> tuple[float, dict]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragx.cli.main", *args, "--json"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"ragx {' '.join(args)} failed: {done.stderr.strip()}")
    return wall, json.loads(done.stdout)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="ragx-bench-"))
    shutil.rmtree(work / "corpus" / ".ragx", ignore_errors=True)
    subprocess.run([sys.executable, "-m", "ragx.cli.main", "data", "beir", args.data_dir, str(work)], check=True, capture_output=True)
    root = str(work / "corpus")

    wall, rep = ragx("index", "--root", root)
    print(f"full index: {rep['files']} files, {rep['chunks']} chunks, {rep['edges']} edges, {rep['communities']} communities; "
          f"wall {wall:.1f} s (in-process {rep['seconds']:.1f} s, of which embedding {rep['embed_seconds']:.1f} s); "
          f"{rep['chunks'] / wall:.1f} chunks/s")
    done = subprocess.run([sys.executable, "-c", EMBED_ALONE, root], capture_output=True, text=True, check=True)
    n, alone, session = done.stdout.split()
    alone = float(alone)
    print(f"embedding the same {n} chunk texts alone (same engine, batch size, warm session): {alone:.1f} s "
          f"({int(n) / alone:.1f} chunks/s; session start {float(session):.2f} s)")
    print(f"whole index run / embedding alone = {wall / alone:.3f}")

    wall, rep = ragx("index", "--root", root)
    print(f"second run, nothing changed: wall {wall:.2f} s (in-process {rep['seconds']:.2f} s), embedded {rep['embedded_chunks']}")
    target = sorted((work / "corpus").glob("*.md"))[7]
    target.write_text(target.read_text() + "\nOne more sentence, added to test incremental indexing.\n")
    wall, rep = ragx("index", "--root", root)
    print(f"after editing {target.name}: wall {wall:.2f} s, changed {rep['changed']}, embedded {rep['embedded_chunks']} chunks "
          f"from {rep['embedded_files']} ({rep['reused_chunks']} unchanged chunks reused)")
    db = sqlite3.connect(work / "corpus" / ".ragx" / "index.sqlite")
    bad = 0
    total = 0
    for path, bs, be, text in db.execute("SELECT f.path, c.byte_start, c.byte_end, c.text FROM chunks c JOIN files f ON f.id = c.file_id"):
        total += 1
        bad += (work / "corpus" / path).read_bytes()[bs:be].decode("utf-8") != text
    print(f"byte-exact chunks: {total - bad}/{total}")
    print(f"work folder: {work}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
