"""Offline trials against live evaluations on one dataset split: trials per second and the ratio, same machine, one run.

    RAGX_CACHE_DIR=/work/cache/ragx RAGX_LAB_CACHE=/work/cache/lab RAGX_DATA=/work/shared/data \\
        nice -n 10 .venv/bin/python scripts/bench/bench_lab.py --dataset scifact --split train --trials 320 --sampler tpe,grid

Live: `live_eval_seconds`, the whole `ragx eval` path for one configuration (a retrieval pass per query,
scoring, metrics) with the current defaults, timed `--live` times (the median is used). Offline: a real
`python -m lab sweep` worker (lab.sweep.run) for `--trials` trials on the split's cached passes, tracking
included: a fresh Optuna study in a SQLite file and a fresh MLflow SQLite store, both on local disk, the
batch engine of lab/batches.py. The pass cache is built first if missing (its time is printed apart:
it is paid once per index and code version, never per trial).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="scifact")
    ap.add_argument("--split", default="train")
    ap.add_argument("--trials", type=int, default=320, help="offline trials per sampler")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--sampler", default="tpe", help="tpe, random, qmc or grid, or several joined by commas (each its own fresh study, one live figure)")
    ap.add_argument("--grid-points", type=int, default=5, help="values per knob with the grid sampler")
    ap.add_argument("--block", type=int, help="optuna.block: trials per structure with tpe and random (default: configs/lab.yaml's)")
    ap.add_argument("--sweep", default="default", help="a configs/sweep/ name (the space and builds; only its base build is used)")
    ap.add_argument("--live", type=int, default=2, help="live evaluations to time (the median is reported)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    samplers = [s.strip() for s in args.sampler.split(",") if s.strip()]
    unknown = [s for s in samplers if s not in ("tpe", "random", "qmc", "grid")]
    if unknown or not samplers:
        print(f"bench_lab: --sampler {args.sampler!r}: tpe, random, qmc or grid (comma-separated)", file=sys.stderr)
        return 2

    from lab.configs import compose, package_defaults
    from lab.sweep import block_of, live_eval_seconds, load_passes, run
    from lab.training import load_training

    scratch = Path(tempfile.mkdtemp(prefix="bench-lab-"))
    load_before = os.getloadavg()

    def config(sampler: str):
        return compose([f"dataset={args.dataset}", f"split={args.split}", f"sweep={args.sweep}", "sweep.builds=[{name: base, settings: {}}]",
                        f"optuna.storage=sqlite:///{scratch / 'optuna.db'}", f"optuna.batch={args.batch}", f"optuna.sampler={sampler}",
                        f"optuna.grid_points={args.grid_points}", f"optuna.study_name=bench-{os.getpid()}-{sampler}",
                        *([f"optuna.block={args.block}"] if args.block else []),
                        f"mlflow.tracking_uri=sqlite:///{scratch / 'mlflow.db'}", f"mlflow.artifacts={scratch / 'artifacts'}"])

    started = time.perf_counter()
    sets = load_training(config(samplers[0]), load_passes)  # builds the pass cache if missing
    data = next(iter(sets.values()))["base"]
    print(f"passes: {len(data['passes'])} queries, ready in {time.perf_counter() - started:.1f} s "
          f"(computed once in {data['meta']['seconds']:.1f} s)", flush=True)
    corpus, queries = data["corpus"], data["queries"]
    live, live_cpu = [], []
    for _ in range(args.live):
        cpu = time.process_time()
        live.append(live_eval_seconds(corpus, queries, package_defaults())[0])
        live_cpu.append(time.process_time() - cpu)  # every thread of the process
    live_s = statistics.median(live)
    print(f"live: one evaluation of {args.dataset} {args.split} ({len(queries)} queries): {live_s:.2f} s "
          f"(median of {args.live}: {', '.join(f'{s:.2f}' for s in live)})", flush=True)
    figures = {"dataset": args.dataset, "split": args.split, "queries": len(queries), "live_seconds": live_s, "live_runs": live,
               "live_trials_per_s": 1 / live_s, "live_cpu_seconds": statistics.median(live_cpu), "batch": args.batch, "sweep": args.sweep, "load_average_before": load_before, "offline": {}}
    for sampler in samplers:
        out = run(config(sampler), n_trials=args.trials, sets=sets)  # the passes loaded above (one code version for the whole run)
        cpu = out["cpu_seconds"]  # the trials' CPU time: a loaded machine stretches the wall time far more
        per_trial = out["seconds"] / out["trials"]
        phases = {k: round(1000 * v / out["trials"], 2) for k, v in out["timings"].items()}
        figures["offline"][sampler] = {"trials": out["trials"], "seconds": out["seconds"], "trials_per_s": 1 / per_trial,
                                       "ratio": live_s / per_trial, "block": block_of(config(sampler).optuna), "phases_ms_per_trial": phases,
                                       "cpu_ms_per_trial": 1000 * cpu / out["trials"], "cpu_ratio": statistics.median(live_cpu) * out["trials"] / cpu,
                                       "best_value": out["study"].best_value, "load_average": os.getloadavg()}
        print(f"offline, {sampler}: {out['trials']} trials in {out['seconds']:.2f} s, {per_trial * 1000:.1f} ms per trial "
              f"(sampling, re-scoring, Optuna SQLite and MLflow SQLite writes; batch {args.batch}); "
              f"trials/s: live {1 / live_s:.3f}, offline {1 / per_trial:.1f}; offline is {live_s / per_trial:.0f}x live per trial; "
              f"ms per trial by phase: {', '.join(f'{k} {v:.1f}' for k, v in phases.items())}; CPU {1000 * cpu / out['trials']:.1f} ms per trial "
              f"({statistics.median(live_cpu) * out['trials'] / cpu:.0f}x a live evaluation's CPU)", flush=True)
    figures["load_average_after"] = os.getloadavg()
    print(f"load average: before {' '.join(f'{x:.2f}' for x in load_before)}, after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
