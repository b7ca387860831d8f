"""What the embedder reads (issue 13): a markdown chunk as a person reads it, or as it is written.

A note's chunk is embedded as its source text: web addresses, image URLs, HTML/SVG tags, `![[dendron://
vault/a.b.c]]` transclusions and `[label](target)` links all take places of all-MiniLM-L6-v2's 256-token
window and pull the vector towards markup. On dendron-vault 678 of 789 notes hold such markup (21% of
their characters); SciFact 77 of 5,183 documents (< 0.1% of characters), Cranfield none, MuSiQue-small 4.
The variants read each markdown chunk through `ragx.ingest.readable.without_markup` (links as their
labels, a label-less wikilink as its note's own name, web addresses and HTML/SVG tags left out: the rule
the community labels already use, unchanged here), the frontmatter header in front as today:

    dense:  the embedder reads the readable text; BM25 keeps indexing the source (a query may name a URL)
    both:   the embedder and BM25 read the readable text

Each variant is its own index of the same files, built by a tree with this study's patch applied
(`git worktree add <tree> 9addc79 && git -C <tree> apply research/2026-12-02-readable-text.patch`): its
chunker honours RAGX_STUDY_READABLE=dense|both;
its pass has the shipped defaults' caps (dense 100 + BM25 100 seeds, graph off) and is scored with the
shipped defaults, as the base's. The candidate budget held equal is the pass's: the same seeds per leg.
Chosen on TRAIN (dendron-vault train, SciFact train; the larger mean gain, and only if positive), then
the four test splits are run once with the choice.

    # base: this tree, the shared index cache
    PYTHONPATH=. RAGX_CACHE_DIR=<base cache> python research/2026-12-02-readable-text.py run base <specs>
    # a variant: the patched tree, its own cache
    PYTHONPATH=<patched tree> RAGX_STUDY_READABLE=dense RAGX_CACHE_DIR=<dense cache> \\
        python research/2026-12-02-readable-text.py run dense <specs>
    python research/2026-12-02-readable-text.py compare dense <specs>
    python research/2026-12-02-readable-text.py pooled dense <four test specs>

Per-query nDCG@10 of every run goes to $READABLE_RESULTS (default ~/.cache/ragx/readable-text-results.json),
one key per run, so runs of different trees and caches meet in one file.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from lab.studies import harness
from lab.studies.harness import run_command

RESULTS = Path(os.environ.get("READABLE_RESULTS", Path.home() / ".cache" / "ragx" / "readable-text-results.json"))


def run(argv: list[str]) -> None:
    """`run KEY SPEC...`: the shipped defaults' per-query nDCG@10 over each spec's pass, under KEY."""
    assert argv[0] == "run", "usage: run KEY SPEC... | compare KEY SPEC... | pooled KEY SPEC..."
    key, specs = argv[1], argv[2:]
    wanted = {"base": "", "dense": "dense", "both": "both"}[key]
    if os.environ.get("RAGX_STUDY_READABLE", "") != wanted:
        raise SystemExit(f"run {key} needs RAGX_STUDY_READABLE={wanted!r} (and the patched tree for a variant)")
    for spec in specs:
        t0 = time.perf_counter()
        _coll, _corpus, passes, meta, _qv, p = harness.load(spec)
        mean, per = harness.ndcg(passes, p, meta)
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        results.setdefault(spec, {})[key] = per
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(results))
        base = results[spec].get("base")
        delta = "" if base is None or key == "base" else f" ({mean - sum(base.values()) / len(base):+.4f})"
        print(f"{spec} {key} {mean:.4f}{delta} [{time.perf_counter() - t0:.0f} s]", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, run)
