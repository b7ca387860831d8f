"""The scripts under research/ are named by date (`2026-12-01-file-bm25.py`), so they cannot be imported
by name; a study that builds on another's passes and helpers loads it with `load_script`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable, Iterator

RESEARCH = Path(__file__).resolve().parents[2] / "research"


def load_script(file: str) -> ModuleType:
    """research/<file> as a module, executed once per process (two studies loading it share it)."""
    name = "research_" + Path(file).stem.replace("-", "_")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, RESEARCH / file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def pooled(key: str, specs: list[str], results_file: Path, resamples: int = 20_000) -> None:
    """The mean over `specs` of each set's mean nDCG@10 difference (variant `key` minus "base", per query,
    from a study's results file), and its two-sided p-value from a stratified sign-flip test (each
    query's difference flips sign at random, within its own set): the statistic the issue's "mean over
    the four collections" asks about, every set weighted alike."""
    import json

    import numpy as np

    results = json.loads(results_file.read_text())
    diffs = [np.array([results[s][key][q] - results[s]["base"][q] for q in sorted(results[s]["base"])]) for s in specs]
    observed = np.mean([d.mean() for d in diffs])
    rng = np.random.default_rng(0)
    null = np.mean([(rng.choice([-1.0, 1.0], (resamples, len(d))) * d).mean(axis=1) for d in diffs], axis=0)
    p = (1 + np.sum(np.abs(null) >= abs(observed) - 1e-12)) / (1 + resamples)
    print(f"{key}: mean over {len(specs)} sets {observed:+.4f}, stratified sign-flip p = {p:.4f} ({resamples} resamples)")


def run_command(argv: list[str], results_file: Path, study: Callable[[list[str]], None]) -> None:
    """A study script's command line: `compare KEY SPEC...` (per-set paired tests), `pooled KEY SPEC...`
    (the four-set mean), or anything else, which goes to `study`."""
    if argv[0] == "compare":
        load_script("2026-12-01-prf-and-sentences.py").compare(argv[1], argv[2:], results_file)
    elif argv[0] == "pooled":
        pooled(argv[1], argv[2:], results_file)
    else:
        study(argv)


def train_or_choice(argv: list[str]) -> tuple[list[str], str | None]:
    """A study's specs and its `--only KEY`. The protocol in one place: a grid runs on train splits
    only; a test split runs with `--only`, the key chosen on train (anything else exits with a line)."""
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    specs = [a for a in argv if not a.startswith("--") and a != only]
    if only is None and any(not s.endswith("-train") for s in specs):
        sys.exit("a test split runs with --only KEY, the choice made on train")
    return specs, only


def studied(specs: list[str], results_file: Path) -> Iterator[tuple[str, tuple, float, dict]]:
    """For each spec ("scifact-train"): the loaded pass (research/2026-12-01-prf-and-sentences.py's
    `load`), the shipped defaults' nDCG@10 over it, and the dict that keeps per-query values under a
    variant's key ("base" is filled: the defaults'). The results file is rewritten after each spec."""
    import json

    prf = load_script("2026-12-01-prf-and-sentences.py")
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    for spec in specs:
        loaded = prf.load(spec)
        _coll, _corpus, passes, meta, _qv, p = loaded
        base, per = prf.ndcg(passes, p, meta)
        results[spec] = {"base": per}
        print(f"{spec} default {base:.4f}", flush=True)
        yield spec, loaded, base, results[spec]
        results_file.write_text(json.dumps(results))


def dense_mixes(spec: str, loaded: tuple, base: float, per_variant: dict, signal: list, grid: tuple[float, ...]) -> None:
    """Score the pass with each candidate's dense signal (1 - a) * cosine + a * `signal` (one array per
    pass, per node) for every a of `grid`; per-query values go to `per_variant["a<a>"]`, a line per a is
    printed. The common loop of the studies that add one dense signal."""
    from dataclasses import replace

    import numpy as np

    prf = load_script("2026-12-01-prf-and-sentences.py")
    _coll, _corpus, passes, meta, _qv, p = loaded
    for a in grid:
        variant = [replace(c, qsim=((1 - a) * c.qsim + a * x).astype(np.float32)) for c, x in zip(passes, signal)]
        mean, per_variant[f"a{a}"] = prf.ndcg(variant, p, meta)
        print(f"{spec} a{a} {mean:.4f} ({mean - base:+.4f})", flush=True)
