"""Chunk size (issue 13): `chunking.target_tokens` has been 200 since milestone 1 and never swept.

Each size is its own index of the same files (lab.builds.build: hard links and a ragx.toml, vectors of
unchanged chunk texts reused), searched with the shipped defaults' caps (dense 100 + BM25 100 seeds,
graph off) and scored with the shipped defaults. Chunk size changes what a candidate is, so the budget
held equal is the pass's: the same number of seeds per leg, at file level the same depth.

    RAGX_CACHE_DIR=... python research/2026-12-01-chunk-size.py study dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-01-chunk-size.py study w384,w512 dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-01-chunk-size.py study dendron-vault-test scifact-test cranfield-test musique-small-test  # once, after choosing on train
    RAGX_CACHE_DIR=... python research/2026-12-01-chunk-size.py compare t256 dendron-vault-test scifact-test
    RAGX_CACHE_DIR=... python research/2026-12-01-chunk-size.py pooled t256 dendron-vault-test scifact-test cranfield-test musique-small-test

Builds, pass caches and per-query results go to $RAGX_CACHE_DIR/research-prf/ (results: chunk-size-results.json).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from lab.builds import build, prepare
from lab.studies import harness
from lab.studies.harness import run_command
from ragx.config import load_settings

GRID = ("t128", "t160", "t256")  # t200 is the defaults' pass; 256 is all-MiniLM-L6-v2's max_seq_length (the hard cap)
# "w<size>": the same model with its window raised to its 512 position embeddings (a copy of the bundled
# directory whose sentence_bert_config.json says max_seq_length 512: same weights, another index identity),
# so that chunks can outgrow 256 tokens. The model was trained on inputs of up to 128 tokens either way.
WIDE_MODEL = Path(os.environ.get("RAGX_WIDE_MODEL", "/work/cache/minilm512/all-MiniLM-L6-v2-w512"))


def settings_of(key: str) -> dict:
    size = int(key[1:])
    out: dict = {"chunking": {"target_tokens": size}}
    if key[0] == "w":
        out["embeddings"] = {"model": str(WIDE_MODEL)}
    return out


RESULTS = harness.OUT / "chunk-size-results.json"


def study(specs: list[str], grid: tuple[str, ...]) -> None:
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    for spec in specs:
        coll, split = spec.rsplit("-", 1)
        base, queries = prepare({"data_dir": str(harness.DATA / coll), "cache": None}, split)
        passes, meta = harness.cached_passes(base, queries, harness.OUT / spec)
        p = load_settings(base.root).search
        mean, per = harness.ndcg(passes, p, meta)
        results.setdefault(spec, {})["base"] = per
        print(f"{spec} t200 (defaults) {mean:.4f}  chunks {base.status(drift=False, verify=False)['chunks']}", flush=True)
        for key in grid:
            started = time.perf_counter()
            name = f"chunk{key[1:]}" if key[0] == "t" else f"wide-chunk{key[1:]}"
            corpus = build(base, name, settings_of(key), harness.OUT / "chunk-builds" / coll)
            passes, meta = harness.cached_passes(corpus, queries, harness.OUT / f"{spec}-{name}")
            value, results[spec][key] = harness.ndcg(passes, load_settings(corpus.root).search, meta)
            chunks = corpus.status(drift=False, verify=False)["chunks"]
            print(f"{spec} {key} {value:.4f} ({value - mean:+.4f})  chunks {chunks}  ({time.perf_counter() - started:.0f} s)", flush=True)
            RESULTS.write_text(json.dumps(results))
    RESULTS.write_text(json.dumps(results))


def _study_command(argv: list[str]) -> None:
    """`study [GRID] SPEC...`: GRID an optional comma-separated list of keys ("t256,w384")."""
    grid = tuple(argv[1].split(",")) if argv[1][0] in "tw" else GRID
    study(argv[2:] if grid is not GRID else argv[1:], grid)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, _study_command)
