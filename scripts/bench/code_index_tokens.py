#!/usr/bin/env python
"""What indexing a code tree asks the embedder to compute, this source tree against an older one, counted
(no embedding, so the figure does not depend on the machine's load).

    python scripts/bench/code_index_tokens.py --old-tree /work/wt/base [--data ../shared/data/swe-loc]
        [--instance pallets__flask-4045 ...] [--paired ROUNDS] [--json]

For each swe-loc instance (the tree at its tag) and each source tree (run in its own process, PYTHONPATH =
that tree): the index run's texts (`ragx index` with an embedder that counts instead of embedding: chunks and
anchor texts, as the run sends them), their tokens, the tokens the model computes once each batch is padded
to its longest text (what an index run's embedding time follows), the chunks' header tokens, the chunks cut
at the model's window, and the seconds spent in tree-sitter (`ragx.ingest.code.definitions`, absent in
older trees). Then new/old of the padded tokens: the expected ratio of embedding times.

`--paired ROUNDS` then embeds both sides' texts for real, each in the batches its run made, with this tree's
engine in this process, batch by batch interleaved (the order reversed every other round), so the machine's
load falls on both sides alike: new/old of the summed seconds, a figure a busy machine can still give.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Run inside each source tree's process: index a copy of the tree, counting what reaches the embedder.
_PROBE = r"""
import json, sys, time, numpy as np
from ragx.models import embedded
seen = []
batches = []
def count(self, texts, batch_size=32, progress=None):
    ids = self._tokenize(list(texts))
    seen.append((batch_size, [len(i) for i in ids]))
    batches.append((batch_size, list(texts)))
    if progress:
        progress(len(texts))
    return np.full((len(texts), self.dim), 1.0 / np.sqrt(self.dim), np.float32)
embedded.EmbeddedEmbedder.embed_documents = count
parse = [0.0]
try:
    from ragx.ingest import code
    real = code.definitions
    def timed(*a):
        t0 = time.perf_counter(); out = real(*a); parse[0] += time.perf_counter() - t0; return out
    code.definitions = timed
except ImportError:
    pass
headers = [0, 0, 0]
try:
    from ragx.ingest import chunk
    real_chunk = chunk.chunk_text
    def counted(*a, **k):
        out = real_chunk(*a, **k)
        headers[0] += sum(getattr(c, "header_tokens", 0) for c in out)
        headers[1] += sum(1 for c in out if c.header)
        headers[2] += sum(1 for c in out if c.n_tokens + getattr(c, "header_tokens", 0) > 254)
        return out
    import ragx.index.plan as plan
    plan.chunk_text = counted
except ImportError:
    pass
from ragx.cli.main import run
try:
    run(["index", "--root", sys.argv[1], "--json"])
except SystemExit:
    pass
padded = real_tokens = texts = 0
for size, lengths in seen:
    order = sorted(lengths, reverse=True)
    for s in range(0, len(order), size):
        batch = order[s:s + size]
        padded += max(batch) * len(batch)
    real_tokens += sum(lengths)
    texts += len(lengths)
json.dump(batches, open(sys.argv[2], "w"))
print(json.dumps({"texts": texts, "tokens": real_tokens, "padded_tokens": padded, "header_tokens": headers[0],
                  "chunks_with_header": headers[1], "over_window": headers[2], "tree_sitter_s": round(parse[0], 2)}))
"""


def probe(source: Path, tree: Path, work: Path, name: str) -> dict:
    folder = work / "corpus"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(tree, folder)
    env = {**os.environ, "PYTHONPATH": str(source), "RAGX_PROGRESS": "off"}
    done = subprocess.run([sys.executable, "-c", _PROBE, str(folder), str(work / f"{name}.json")], capture_output=True, text=True, env=env, cwd=str(source))
    if done.returncode != 0:
        sys.exit(f"counting with {source} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _model_batches(calls: list, counter) -> list[list[str]]:
    """Each embedder call cut as the engine cuts it: longest first, `batch_size` texts a batch (an older
    tree hands the engine all its texts in one call)."""
    out = []
    for size, texts in calls:
        lengths = counter.count(texts)
        ordered = [texts[i] for i in sorted(range(len(texts)), key=lambda i: -int(lengths[i]))]
        out += [ordered[s : s + size] for s in range(0, len(ordered), size)]
    return out


def paired(work: Path, rounds: int) -> float:
    """new/old seconds embedding each side's batches, interleaved by their position in the run."""
    import time

    from ragx.models.embedded import DEFAULT_MODEL, EmbeddedEmbedder, resolve_model

    engine = EmbeddedEmbedder(resolve_model(DEFAULT_MODEL)[1])
    counter = engine.token_counter()
    sides = {name: _model_batches(json.loads((work / f"{name}.json").read_text()), counter) for name in ("new", "old")}
    engine.embed_documents(sides["old"][0], batch_size=16)  # the session loaded before any timing
    events = sorted((i / len(b), name, i) for name, b in sides.items() for i in range(len(b)))
    spent = dict.fromkeys(sides, 0.0)
    for r in range(rounds):
        for _, name, i in events if r % 2 == 0 else events[::-1]:
            t0 = time.perf_counter()
            engine.embed_documents(sides[name][i], batch_size=max(1, len(sides[name][i])))
            spent[name] += time.perf_counter() - t0
    return spent["new"] / spent["old"]


def main() -> int:
    from bench_code_index import write_tree

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-tree", type=Path, required=True, help="source tree of the old code (e.g. a d78b077 worktree)")
    ap.add_argument("--data", type=Path, default=Path("../shared/data/swe-loc"))
    ap.add_argument("--instance", action="append", default=None, help="swe-loc instance (repeatable; default pallets__flask-4045)")
    ap.add_argument("--paired", type=int, default=0, metavar="ROUNDS", help="also embed both sides, interleaved")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for instance in args.instance or ["pallets__flask-4045"]:
        work = Path(tempfile.mkdtemp(prefix="ragx-code-tokens-"))
        tree = write_tree(args.data, instance, work)
        sides = {name: probe(src, tree, work, name) for name, src in (("new", HERE), ("old", args.old_tree.resolve()))}
        row = {"instance": instance, **sides, "padded_ratio": sides["new"]["padded_tokens"] / sides["old"]["padded_tokens"]}
        if args.paired:
            load = os.getloadavg()[0]
            row |= {"embed_ratio": paired(work, args.paired), "load_before": load, "load_after": os.getloadavg()[0]}
        shutil.rmtree(work, ignore_errors=True)
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=1))
    for r in rows:
        for name in ("new", "old"):
            s = r[name]
            print(f"{r['instance']} {name}: {s['texts']:,} texts, {s['tokens']:,} tokens, {s['padded_tokens']:,} padded; "
                  f"headers {s['header_tokens']:,} tokens on {s['chunks_with_header']:,} chunks; {s['over_window']} over the window; "
                  f"tree-sitter {s['tree_sitter_s']} s", file=sys.stderr if args.json else sys.stdout)
        print(f"{r['instance']}: padded tokens new / old {r['padded_ratio']:.3f}", file=sys.stderr if args.json else sys.stdout)
        if "embed_ratio" in r:
            print(f"{r['instance']}: embedding seconds new / old, interleaved, {args.paired} rounds: {r['embed_ratio']:.3f} "
                  f"(load average {r['load_before']:.2f} -> {r['load_after']:.2f})", file=sys.stderr if args.json else sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
