"""Whether a faster way to sample costs search quality: the best objective after N trials, per seed, for
variants of one sampler (e.g. TPE in blocks of 8 against TPE drawing every trial in full, and against
TPE asked one trial at a time), each a real `python -m lab sweep` worker (lab.sweep.run) on the split's
cached passes.

    RAGX_CACHE_DIR=/work/cache/ragx RAGX_LAB_CACHE=/work/cache/lab RAGX_DATA=/work/shared/data \\
        nice -n 10 .venv/bin/python scripts/bench/bench_lab_search.py --sampler tpe --trials 320 --seeds 0,1,2 \\
        --variant blocks-8=optuna.block=8 --variant full=optuna.block=1 --variant one-at-a-time=optuna.block=1,optuna.batch=1

A variant is NAME=OVERRIDE[,OVERRIDE...] (lab overrides). The objective values do not depend on the
machine's load; the seconds do (the load average is printed with them).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def best_after(values: list[float], marks: list[int]) -> dict[int, float]:
    return {n: max(values[:n]) for n in marks if n <= len(values)}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="scifact")
    ap.add_argument("--split", default="train")
    ap.add_argument("--sampler", default="tpe")
    ap.add_argument("--trials", type=int, default=320)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--variant", action="append", required=True, help="NAME=OVERRIDE[,OVERRIDE...]")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    variants = {}
    for spec in args.variant:
        name, _, overrides = spec.partition("=")
        if not name or not overrides:
            print(f"bench_lab_search: --variant {spec!r}: NAME=OVERRIDE[,OVERRIDE...]", file=sys.stderr)
            return 2
        variants[name] = overrides.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    marks = sorted({m for m in (32, 64, 128, 192, 256, 320, args.trials) if m <= args.trials})

    from lab.configs import compose
    from lab.sweep import load_passes, run
    from lab.training import load_training

    scratch = Path(tempfile.mkdtemp(prefix="bench-lab-search-"))

    def config(name: str, seed: int) -> object:
        return compose([f"dataset={args.dataset}", f"split={args.split}", "sweep.builds=[{name: base, settings: {}}]",
                        f"optuna.storage=sqlite:///{scratch / 'optuna.db'}", f"optuna.sampler={args.sampler}", f"optuna.seed={seed}",
                        f"optuna.study_name=search-{name}-{seed}", f"mlflow.tracking_uri=sqlite:///{scratch / 'mlflow.db'}",
                        f"mlflow.artifacts={scratch / 'artifacts'}", *variants[name]])

    sets = load_training(config(next(iter(variants)), seeds[0]), load_passes)
    out: dict[str, dict] = {}
    for name in variants:
        runs = []
        for seed in seeds:
            done = run(config(name, seed), n_trials=args.trials, sets=sets)
            trials = sorted(done["study"].get_trials(deepcopy=False), key=lambda t: t.number)
            values = [t.value for t in trials if t.value is not None]
            runs.append({"seed": seed, "best_after": best_after(values, marks), "ms_per_trial": 1000 * done["seconds"] / done["trials"],
                         "load_average": os.getloadavg()})
            print(f"{name} seed {seed}: " + "  ".join(f"{n}: {v:.4f}" for n, v in runs[-1]["best_after"].items())
                  + f"  ({runs[-1]['ms_per_trial']:.0f} ms a trial, load {os.getloadavg()[0]:.1f})", flush=True)
        mean = {n: statistics.mean(r["best_after"][n] for r in runs) for n in marks}
        out[name] = {"overrides": variants[name], "runs": runs, "mean_best_after": mean}
        print(f"{name} mean over seeds: " + "  ".join(f"{n}: {v:.4f}" for n, v in mean.items()), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"dataset": args.dataset, "split": args.split, "sampler": args.sampler, "trials": args.trials,
                                         "seeds": seeds, "variants": out}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
