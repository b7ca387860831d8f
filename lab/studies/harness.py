"""The research harness every study under research/ imports: where the data and the caches are, a
collection's split loaded with its cached retrieval passes (the shipped defaults' caps), file-level
nDCG@10 scored with ragx's own `score`/`file_run`, and the protocol: a grid runs on train splits only,
a test split runs once with the key chosen on train (`--only`), each set compared per query and the
four-set mean with a stratified sign-flip test.

    RAGX_CACHE_DIR=... python research/<study>.py [compare|pooled KEY] SPEC...   (SPEC: scifact-train, ...)

Pass caches and per-query results go to $RAGX_CACHE_DIR/research-prf/ (the folder of the first study
that held this harness: earlier studies' caches stay where their notes say they are).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from lab.builds import prepare
from lab.passes import build_cache, index_fingerprint, load_cache
from ragx.config import load_settings
from ragx.eval.metrics import evaluate
from ragx.eval.runner import DEPTH
from ragx.eval.stats import paired
from ragx.scoring.candidates import PassCaps
from ragx.scoring.files import file_run
from ragx.scoring.score import score

DATA = Path(os.environ.get("RAGX_DATA", "/work/shared/data"))
CAPS = PassCaps(100, 100, 0, 0.2)
OUT = Path(os.environ.get("RAGX_CACHE_DIR", Path.home() / ".cache" / "ragx")) / "research-prf"


def load(spec: str):
    coll, split = spec.rsplit("-", 1)
    corpus, queries = prepare({"data_dir": str(DATA / coll), "cache": None}, split)
    passes, meta = cached_passes(corpus, queries, OUT / spec)
    qv = {q.id: corpus.embedder.embed_query(q.text) for q in queries}
    return coll, corpus, passes, meta, qv, load_settings(corpus.root).search


def cached_passes(corpus, queries, folder: Path, caps: PassCaps = CAPS):
    """The defaults' passes (`caps`) of `queries` over `corpus`, cached in `folder`. A pass names chunks and
    files by id, so a cache of an index since rebuilt names other chunks: it is run again. (Only the
    index is compared, not ragx's code hash: these studies re-score the signals themselves.)"""
    stale = (folder / "meta.json").exists() and json.loads((folder / "meta.json").read_text())["index"] != index_fingerprint(corpus)
    if stale or not (folder / "passes.parquet").exists():
        build_cache(corpus, queries, caps, folder)
    return load_cache(folder)


def ndcg(passes, p, meta) -> tuple[float, dict[str, float]]:
    """Mean and per-query file-level nDCG@10 of `passes` scored with `p` (or a list: one Params per pass)."""
    params = p if isinstance(p, list) else [p] * len(passes)
    run = {c.qid: file_run(c, score(c, q), q, meta["paths"], DEPTH) for c, q in zip(passes, params)}
    means, per = evaluate(meta["labels"], run)
    return means["nDCG@10"], {q: v["nDCG@10"] for q, v in per.items()}


def compare(key: str, specs: list[str], results_file: Path) -> None:
    """Per set of `specs`: the defaults' and variant `key`'s mean nDCG@10 from a study's results file, the
    difference with its bootstrap CI, the paired p-value and wins/ties/losses, as a markdown table row."""
    results = json.loads(results_file.read_text())
    for spec in specs:
        base, variant = results[spec]["base"], results[spec][key]
        q = sorted(base)
        c = paired(np.array([variant[i] for i in q]), np.array([base[i] for i in q]))
        print(f"| {spec} | {np.mean([base[i] for i in q]):.4f} | {np.mean([variant[i] for i in q]):.4f} | "
              f"{c.diff:+.4f} [{c.ci[0]:+.4f}, {c.ci[1]:+.4f}] | {c.p:.3f} | {c.wins}/{c.ties}/{c.losses} |")


def pooled(key: str, specs: list[str], results_file: Path, resamples: int = 20_000) -> None:
    """The mean over `specs` of each set's mean nDCG@10 difference (variant `key` minus "base", per query,
    from a study's results file), and its two-sided p-value from a stratified sign-flip test (each
    query's difference flips sign at random, within its own set): the statistic the issue's "mean over
    the four collections" asks about, every set weighted alike."""
    results = json.loads(results_file.read_text())
    diffs = [np.array([results[s][key][q] - results[s]["base"][q] for q in sorted(results[s]["base"])]) for s in specs]
    observed = np.mean([d.mean() for d in diffs])
    rng = np.random.default_rng(0)
    null = np.mean([(rng.choice([-1.0, 1.0], (resamples, len(d))) * d).mean(axis=1) for d in diffs], axis=0)
    p = (1 + np.sum(np.abs(null) >= abs(observed) - 1e-12)) / (1 + resamples)
    print(f"{key}: mean over {len(specs)} sets {observed:+.4f}, stratified sign-flip p = {p:.4f} ({resamples} resamples)")


def train_or_choice(argv: list[str]) -> tuple[list[str], str | None]:
    """A study's specs and its `--only KEY`. The protocol in one place: a grid runs on train splits
    only; a test split runs with `--only`, the key chosen on train (anything else exits with a line)."""
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    specs = [a for a in argv if not a.startswith("--") and a != only]
    if only is None and any(not s.endswith("-train") for s in specs):
        sys.exit("a test split runs with --only KEY, the choice made on train")
    return specs, only


def run_command(argv: list[str], results_file: Path, study: Callable[[list[str]], None]) -> None:
    """A study script's command line: `compare KEY SPEC...` (per-set paired tests), `pooled KEY SPEC...`
    (the four-set mean), or anything else, which goes to `study`."""
    if argv[0] == "compare":
        compare(argv[1], argv[2:], results_file)
    elif argv[0] == "pooled":
        pooled(argv[1], argv[2:], results_file)
    else:
        study(argv)


def studied(specs: list[str], results_file: Path) -> Iterator[tuple[str, tuple, float, dict]]:
    """For each spec ("scifact-train"): the loaded pass (`load`), the shipped defaults' nDCG@10 over it, and the dict that keeps per-query values under a
    variant's key ("base" is filled: the defaults'). The results file is rewritten after each spec."""
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    for spec in specs:
        loaded = load(spec)
        _coll, _corpus, passes, meta, _qv, p = loaded
        base, per = ndcg(passes, p, meta)
        results[spec] = {"base": per}
        print(f"{spec} default {base:.4f}", flush=True)
        yield spec, loaded, base, results[spec]
        results_file.write_text(json.dumps(results))


def dense_mixes(spec: str, loaded: tuple, base: float, per_variant: dict, signal: list, grid: tuple[float, ...]) -> None:
    """Score the pass with each candidate's dense signal (1 - a) * cosine + a * `signal` (one array per
    pass, per node) for every a of `grid`; per-query values go to `per_variant["a<a>"]`, a line per a is
    printed. The common loop of the studies that add one dense signal."""
    _coll, _corpus, passes, meta, _qv, p = loaded
    for a in grid:
        variant = [replace(c, qsim=((1 - a) * c.qsim + a * x).astype(np.float32)) for c, x in zip(passes, signal)]
        mean, per_variant[f"a{a}"] = ndcg(variant, p, meta)
        print(f"{spec} a{a} {mean:.4f} ({mean - base:+.4f})", flush=True)
