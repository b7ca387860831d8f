#!/usr/bin/env python
"""kill -9 of a first `ragx index` at about 90% of its embedding, then `ragx index` again: how much is
embedded again, and is the index the one a run never killed makes?

    python scripts/check/check_resume.py [--data ../shared/data/cranfield] [--docs 1400] [--at 0.9] [--work DIR]

Writes the collection's documents as Markdown files twice (`clean/`, `killed/`), indexes `clean/` once
(the reference, and the number of texts to embed), starts `ragx index` on `killed/`, watches its vector
journal (ragx/index/journal.py) and kills the process with SIGKILL once the journal holds `--at` of
those texts, then runs `ragx index` there again. Compares what matters: chunk ids with their file,
ordinal and text, the vector file's bytes, the kNN edges, and the results of the collection's first 30
queries. Exit 0 when equal and at most 5% of the chunks were embedded twice (finished by the killed run
and embedded again by the next), else 1.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ragx.api import Corpus
from ragx.index.journal import VectorJournal, journal_paths
from ragx.index.layout import Layout
from ragx.index.snapshot import Snapshot

RAGX = str(Path(sys.executable).with_name("ragx"))


def write_docs(data: Path, root: Path, limit: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    with open(data / "corpus.jsonl", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= limit:
                break
            doc = json.loads(line)
            (root / f"{doc['_id']}.md").write_text(f"# {doc.get('title') or doc['_id']}\n\n{doc['text']}\n", encoding="utf-8")


def index_json(root: Path) -> dict:
    out = subprocess.run([RAGX, "index", "--root", str(root), "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def journalled(root: Path, dim: int) -> int:
    """Vectors the running index has journalled, from the file size (the header and per-batch record
    headers are a few bytes against 8 + 4 * dim per vector: never read the live file)."""
    return sum(p.stat().st_size for p in journal_paths(Layout(root).dir)) // (8 + 4 * dim)


def kill_at(root: Path, target: int, dim: int) -> tuple[int, float]:
    """Start `ragx index` on `root`, SIGKILL it once `target` vectors are journalled: (journalled then, seconds)."""
    started = time.perf_counter()
    proc = subprocess.Popen([RAGX, "index", "--root", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None:
        if journalled(root, dim) >= target:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            return journalled(root, dim), time.perf_counter() - started
        time.sleep(0.05)
    raise SystemExit(f"ragx index ended (exit {proc.returncode}) before the journal reached {target} vectors")


def what_matters(root: Path, queries: list[str]) -> dict:
    layout = Layout(root)
    db = sqlite3.connect(layout.db)
    manifest = dict(db.execute("SELECT key, value FROM manifest").fetchall())
    ids, vecs = Snapshot.load_vectors(layout.gen(int(manifest["generation"])), json.loads(manifest["checksums"]))
    chunks = db.execute("SELECT c.id, f.path, c.ordinal, c.text FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY c.id").fetchall()
    edges = db.execute("SELECT a, b, weight FROM edges ORDER BY a, b").fetchall()
    db.close()
    corpus = Corpus.open(root)
    results = [[(r["file"], r["chunk_id"], r["score"]) for r in corpus.query(q, top=10)["results"]] for q in queries]
    return {"chunk ids and texts": chunks, "vector bytes": np.asarray(vecs).tobytes(), "ids": ids.tolist(),
            "kNN edges": edges, "query results": results}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data/cranfield"))
    ap.add_argument("--docs", type=int, default=1400)
    ap.add_argument("--at", type=float, default=0.9, help="share of the texts journalled when the run is killed")
    ap.add_argument("--work", type=Path, default=Path("/tmp/ragx-check-resume"))
    args = ap.parse_args(argv)
    clean, killed = args.work / "clean", args.work / "killed"
    if args.work.exists():
        import shutil

        shutil.rmtree(args.work)
    write_docs(args.data, clean, args.docs)
    write_docs(args.data, killed, args.docs)
    reference = index_json(clean)
    dim = Corpus.open(clean).embedder.dim
    total = reference["embedded_chunks"]
    _, seconds = kill_at(killed, int(args.at * total), dim)
    embedder = Corpus.open(killed).embedder  # the run is dead: the journal can be read (its torn tail cut off)
    held = len(VectorJournal(Layout(killed).dir, embedder.name, dim).recorded()[0])
    print(f"clean run: {reference['chunks']} chunks, {total} embedded; killed run: SIGKILL after {seconds:.1f} s, "
          f"its journal held {held} vectors ({held / total:.1%})")
    resumed = index_json(killed)
    embedded, chunks = resumed["embedded_chunks"], resumed["chunks"]
    again = embedded - (total - held)  # texts the killed run had finished that were embedded a second time
    print(f"next run: {embedded} chunks embedded ({embedded / chunks:.2%} of {chunks}: the {total - held} the killed run had "
          f"not finished), {resumed['resumed_chunks']} resumed from the journal; embedded twice: {again} "
          f"({again / chunks:.2%}; a kill loses only the batch in flight, which was never finished)")
    with open(args.data / "queries.jsonl", encoding="utf-8") as f:
        queries = [json.loads(line)["text"] for line, _ in zip(f, range(30))]
    a, b = what_matters(killed, queries), what_matters(clean, queries)
    same = {k: a[k] == b[k] for k in a}
    print("equal to the run never killed: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same.items()))
    return 0 if all(same.values()) and again <= 0.05 * chunks else 1


if __name__ == "__main__":
    sys.exit(main())
