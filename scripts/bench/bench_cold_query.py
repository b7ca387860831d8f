"""Cold one-shot `ragx query --json` on big indexes: usearch (mapped) against hnswlib (loaded), A/B.

    python scripts/bench/bench_cold_query.py convert ROOT --ann FILE [--record]
    python scripts/bench/bench_cold_query.py record ROOT      # after the last hard link to its files is made
    nice -n 5 python scripts/bench/bench_cold_query.py run ROOT_A ROOT_B --runs 10 [--evict]

`convert`: ROOT holds a copy of a ragx index whose vectors.hnsw an older ragx wrote with hnswlib (its
arrays hard-linked from the original, never written); its vectors.hnsw becomes FILE, a usearch index
built by scripts/bench/bench_ann.py over the same vectors.npy rows (labels = row numbers), relabelled with the
generation's base chunk ids, and the manifest's checksum and vectors format follow. `--record` also
writes the commit's verified.json (ragx/index/verified.py), as an index run does (`record` alone:
linking a file elsewhere afterwards moves its change time and voids the record).

`run`: alternates A and B, each a fresh `ragx query --json` process through scripts/bench/bench_scale.py's
embedder (bench-hash); reports the median wall and, from one in-process query per root (a fresh
process), its wall and its anonymous and file-backed resident memory. `--evict` drops the generation's files from
the page cache before every run (posix_fadvise DONTNEED), so each run reads from disk what it needs.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
QUERIES = ["zeloubai kaiga", "vouta dairou", "sekito mairo pafa", "holu tepai", "ranoke wifu"]


def _generation(root: Path) -> tuple[Path, dict]:
    db = sqlite3.connect(root / ".ragx" / "index.sqlite")
    manifest = {k: json.loads(v) for k, v in db.execute("SELECT key, value FROM manifest")}
    db.close()
    return root / ".ragx" / f"gen-{int(manifest['generation']):06d}", manifest


def convert(root: Path, ann: Path, record: bool) -> None:
    from usearch.index import Index

    from ragx.index import verified
    from ragx.index.snapshot import VECTORS_FORMAT
    from ragx.index.verified import HNSW, file_checksum

    folder, manifest = _generation(root)
    with np.load(folder / "chunks.npz") as z:
        base_ids = z["base_ids"] if "base_ids" in z.files else z["ids"]
    index = Index.restore(str(ann), view=False)
    assert index is not None and len(index) == len(base_ids)
    rows = np.arange(len(base_ids), dtype=np.uint64)
    parked = base_ids.astype(np.uint64) + np.uint64(1 << 40)  # two steps: row numbers and ids overlap
    index.rename(rows, parked)
    index.rename(parked, base_ids.astype(np.uint64))
    target = folder / HNSW
    if target.exists():
        target.unlink()  # a hard link to the original: replaced, never written through
    index.save(str(target))
    manifest["checksums"][HNSW] = file_checksum(target)
    db = sqlite3.connect(root / ".ragx" / "index.sqlite")
    with db:
        db.execute("UPDATE manifest SET value = ? WHERE key = 'checksums'", (json.dumps(manifest["checksums"], sort_keys=True),))
        db.execute("UPDATE manifest SET value = ? WHERE key = 'vectors'", (json.dumps(VECTORS_FORMAT),))
    db.close()
    if record:
        verified.record(folder, manifest["checksums"])
    print(json.dumps({"root": str(root), "hnsw_mb": target.stat().st_size / 2**20, "recorded": record}))


def _evict(root: Path) -> None:
    folder, _ = _generation(root)
    for path in [*folder.iterdir(), root / ".ragx" / "index.sqlite"]:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _queries(root: Path) -> list[str]:
    """bench_scale's topic queries next to the corpus (queries.json), else a few fixed ones."""
    path = root.parent / "queries.json"
    return json.loads(path.read_text())[:20] if path.exists() else QUERIES


def _one_cli(root: Path, query: str) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, str(HERE.parent / "bench_scale.py"), "_cli", "query", query, "--json", "--root", str(root)],
                          capture_output=True)
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"query failed: {done.stderr.decode()[-600:]}")
    return wall


def _memory_child(root: Path) -> dict:
    code = (
        "import sys, json, time; sys.path.insert(0, %r)\n"
        "import bench_scale; bench_scale.register()\n"
        "from ragx.api import Corpus\n"
        "t0 = time.perf_counter(); Corpus.open(%r, need_index=True).query(%r); wall = time.perf_counter() - t0\n"
        "print(json.dumps({'wall_s': wall, **bench_scale._rss_split()}))\n"
    ) % (str(HERE.parent), str(root), _queries(root)[0])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-600:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(roots: list[Path], runs: int, evict: bool) -> None:
    walls: dict[str, list[float]] = {str(r): [] for r in roots}
    for i in range(runs):
        for root in roots:
            if evict:
                _evict(root)
            queries = _queries(root)
            wall = _one_cli(root, queries[i % len(queries)])
            walls[str(root)].append(wall)
    out = {}
    for root in roots:
        if evict:
            _evict(root)
        out[str(root)] = {"cold_query_median_s": statistics.median(walls[str(root)]), "runs": walls[str(root)],
                          "in_process_first_query": _memory_child(root)}
    print(json.dumps(out, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert")
    c.add_argument("root", type=Path)
    c.add_argument("--ann", type=Path, required=True)
    c.add_argument("--record", action="store_true")
    v = sub.add_parser("record")
    v.add_argument("root", type=Path)
    r = sub.add_parser("run")
    r.add_argument("roots", type=Path, nargs="+")
    r.add_argument("--runs", type=int, default=10)
    r.add_argument("--evict", action="store_true")
    args = ap.parse_args()
    if args.cmd == "convert":
        convert(args.root, args.ann, args.record)
    elif args.cmd == "record":
        from ragx.index import verified

        folder, manifest = _generation(args.root)
        verified.record(folder, manifest["checksums"])
    else:
        run(args.roots, args.runs, args.evict)


if __name__ == "__main__":
    main()
