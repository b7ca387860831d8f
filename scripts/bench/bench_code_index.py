#!/usr/bin/env python
"""Indexing a code tree with syntax chunks (this source tree) against the old chunker (an older source tree).

    python scripts/bench/bench_code_index.py --old-tree /work/wt/base [--data ../shared/data/swe-loc]
        [--instance pallets__flask-4045 | --tree FOLDER] [--rounds 2] [--work DIR] [--json]

One swe-loc tree (the instance's tag, `git archive` of its bundle) is written out once. Each round indexes a
fresh copy of it once with each source tree, the order alternating between rounds, each in a new process
(`python -m ragx.cli.main index --json`, PYTHONPATH = that source tree) with its own fresh RAGX_CACHE_DIR
holding only the embedding model, copied from the current cache: nothing is reused between runs, and
the two sides never share a cache. Reported per side: wall seconds, the run's own and embedding
seconds, files and chunks; then new/old of the wall times (median over rounds) and the load average
before and after (timing figures count only on a quiet machine). `--tree FOLDER` indexes copies of that
folder instead (a quick check that the script works).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]


def write_tree(data: Path, instance: str, work: Path) -> Path:
    """The instance's repository tree, written once under `work` (a bare clone of its bundle, then an archive)."""
    repo = instance.rsplit("-", 1)[0]
    bare, tree = work / f"{repo}.git", work / "tree"
    if not bare.exists():
        subprocess.run(["git", "clone", "--quiet", "--bare", str((data / "bundles" / f"{repo}.bundle").resolve()), str(bare)], check=True)
    if not tree.exists():
        tree.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(bare), "archive", f"refs/tags/swe/{instance}"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def fresh_cache(model_dir: Path, where: Path) -> Path:
    """A cache folder holding only the embedding model (the ONNX export), nothing else."""
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(model_dir, where / model_dir.name)
    return where


def index_once(source: Path, tree: Path, cache: Path, folder: Path) -> dict:
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(tree, folder)
    env = {**os.environ, "PYTHONPATH": str(source), "RAGX_CACHE_DIR": str(cache)}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragx.cli.main", "index", "--root", str(folder), "--json"],
                          capture_output=True, text=True, env=env, cwd=str(source))
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"ragx index with {source} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    rep = json.loads(done.stdout)
    return {"wall": wall, "seconds": rep["seconds"], "embed_seconds": rep["embed_seconds"], "files": rep["files"], "chunks": rep["chunks"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-tree", type=Path, required=True, help="source tree of the old code (e.g. a d78b077 worktree)")
    ap.add_argument("--data", type=Path, default=Path("../shared/data/swe-loc"))
    ap.add_argument("--instance", default="pallets__flask-4045")
    ap.add_argument("--tree", type=Path, default=None, help="index copies of this folder instead of an instance's tree")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from ragx.models.onnx_export import default_cache_dir

    model_dir = default_cache_dir() / "onnx"
    if not model_dir.is_dir():
        sys.exit(f"{model_dir} not found: run `ragx index` once with this RAGX_CACHE_DIR so the model is exported")
    work = args.work or Path(tempfile.mkdtemp(prefix="ragx-bench-code-"))
    tree = args.tree.resolve() if args.tree else write_tree(args.data, args.instance, work)
    sides = {"new": HERE, "old": args.old_tree.resolve()}
    runs: dict[str, list[dict]] = {"new": [], "old": []}
    load_before = os.getloadavg()
    for r in range(args.rounds):
        for name in (("new", "old") if r % 2 == 0 else ("old", "new")):
            cache = fresh_cache(model_dir, work / f"cache-{name}")
            runs[name].append(index_once(sides[name], tree, cache, work / f"corpus-{name}"))
            print(f"round {r + 1} {name}: {runs[name][-1]}", file=sys.stderr)
    load_after = os.getloadavg()
    ratio = statistics.median(n["wall"] / o["wall"] for n, o in zip(runs["new"], runs["old"]))
    out = {"tree": str(args.tree) if args.tree else args.instance, "rounds": args.rounds, "runs": runs, "wall_ratio_new_over_old": ratio,
           "load_before": load_before, "load_after": load_after}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for name, rows in runs.items():
            walls = ", ".join(format(x["wall"], ".1f") for x in rows)
            embeds = ", ".join(format(x["embed_seconds"], ".1f") for x in rows)
            print(f"{name} ({sides[name]}): wall {walls} s; embedding {embeds} s; {rows[0]['files']} files, {rows[0]['chunks']} chunks")
        print(f"new / old wall time, median of {args.rounds} rounds: {ratio:.3f} (goal <= 1.1); "
              f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
