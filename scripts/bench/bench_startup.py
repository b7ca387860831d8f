"""Start-up latency of one-shot commands: cold `ragx query --json`, `ragx status` (--json and plain), the MCP
handshake (process start -> `initialize` answered) and `ragx --help`, beside `python -c pass`, medians of N
runs each, this checkout against an older install in the same run (runs interleaved, so machine load hits
both alike).

    python scripts/bench/bench_startup.py --root <SciFact corpus> [--old-venv /work/main/.venv | --old-tree <dir>] [--runs 10]

PYTHONPATH=<a source tree> makes "new" that tree's code (run by this venv); "old" never sees PYTHONPATH.
--old-tree <dir> makes "old" this venv running the code of <dir> (e.g. `git worktree add <dir> <commit>`).
Without --root, the SciFact collection `ragx eval beir` keeps in the cache is used. Each side has its
own RAGX_CACHE_DIR for the ONNX model (the formats differ between versions) and is warmed up once
(model converted, page cache filled) before anything is timed. Wall time is what a user waits; CPU
time (user + system of the child) is printed beside it because it is far less sensitive to the other
processes on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
QUERIES = [
    "vitamin D deficiency and bone density", "gene expression in T cells", "antibiotic resistance mechanisms",
    "statins reduce cardiovascular risk", "BRCA1 mutation breast cancer", "insulin signalling in the liver",
    "smoking and lung cancer incidence", "malaria vaccine efficacy", "microRNA regulation of apoptosis",
    "obesity and type 2 diabetes", "stem cell differentiation", "HIV viral load in infants",
]


def _default_root() -> Path | None:
    cache = Path(os.environ.get("RAGX_CACHE_DIR") or Path.home() / ".cache" / "ragx")
    found = sorted((cache / "beir").glob("scifact-*/corpus"))
    return found[0] if found else None


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one run; the command must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _handshake(ragx: list[str], root: Path, env: dict[str, str]) -> tuple[float, float]:
    """Process start -> the `initialize` answer read from its stdout; then EOF and wait."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen([*ragx, "mcp", "--root", str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    proc.stdin.write((json.dumps(request) + "\n").encode())
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    wall = time.perf_counter() - t0
    proc.stdin.close()
    proc.wait(timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if answer.get("id") != 1 or "result" not in answer:
        raise SystemExit(f"bad initialize answer from {ragx}: {answer}")
    # CPU covers the whole process (it imports the SDK after answering); wall is up to the answer.
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _machine_speed() -> float:
    """Seconds a fresh interpreter takes for a 10M-step Python loop: how fast this machine runs Python
    right now (on these shared 2-core machines 0.29-0.41 s on a quiet day, 0.5-1.7 s on others), so a
    start-up figure can be read against the machine it was taken on."""
    loop = "import time; t = time.perf_counter(); [i * i for i in range(10_000_000)]; print(time.perf_counter() - t)"
    return float(subprocess.run([sys.executable, "-c", loop], capture_output=True, text=True, check=True).stdout)


def _tree_script(tree: Path) -> list[str]:
    """The command line of the `ragx` console script a source tree declares, run by this interpreter
    (the venv's own script may name an entry point the older tree does not have)."""
    import tomllib

    module, function = tomllib.loads((tree / "pyproject.toml").read_text())["project"]["scripts"]["ragx"].split(":")
    # -P: the working directory (often a checkout itself) must not shadow the tree on PYTHONPATH
    return [sys.executable, "-P", "-c", f"import sys; from {module} import {function}; sys.exit({function}())"]


def _sides(args: argparse.Namespace) -> dict[str, tuple[list[str], dict[str, str]]]:
    base = os.environ.get("RAGX_CACHE_DIR") or str(Path.home() / ".cache" / "ragx")
    new_ragx = [str(Path(sys.executable).parent / "ragx")]
    sides = {"new": (new_ragx, dict(os.environ, RAGX_CACHE_DIR=base))}
    if args.old_tree:
        # Both sides start the same way (this interpreter, -P -c, the tree's entry point on PYTHONPATH):
        # the installed script and the editable install's finder are not what is compared.
        tree = Path(args.old_tree).resolve()
        sides["new"] = (_tree_script(HERE), dict(os.environ, RAGX_CACHE_DIR=base, PYTHONPATH=str(HERE)))
        sides["old"] = (_tree_script(tree), dict(os.environ, RAGX_CACHE_DIR=base, PYTHONPATH=str(tree)))
    elif args.old_venv:
        old_cache = Path(base) / "bench-startup-old"
        old_cache.mkdir(parents=True, exist_ok=True)
        old_env = dict(os.environ, RAGX_CACHE_DIR=str(old_cache))
        old_env.pop("PYTHONPATH", None)  # the old install runs its own code (PYTHONPATH may point "new" at a tree)
        sides["old"] = ([str(Path(args.old_venv) / "bin" / "ragx")], old_env)
    return sides


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=None, help="an indexed corpus (default: the cached SciFact)")
    ap.add_argument("--old-venv", default="/work/main/.venv", help="a venv with the code to compare with ('' for none)")
    ap.add_argument("--old-tree", default="", help="a source tree whose code this venv runs as 'old' (instead of --old-venv)")
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    root = args.root or _default_root()
    if root is None or not (root / ".ragx").is_dir():
        raise SystemExit("no indexed corpus: pass --root (e.g. the SciFact corpus `ragx eval beir` built)")
    sides = _sides(args)
    tasks = {
        "cold query --json": lambda r, e, i: _timed([*r, "query", QUERIES[i % len(QUERIES)], "--json", "--root", str(root)], e),
        "status --json": lambda r, e, i: _timed([*r, "status", "--json", "--root", str(root)], e),
        "status": lambda r, e, i: _timed([*r, "status", "--root", str(root)], e),
        "mcp handshake": lambda r, e, i: _handshake(r, root, e),
        "--help": lambda r, e, i: _timed([*r, "--help"], e),
        "python -c pass": lambda r, e, i: _timed([sys.executable, "-c", "pass"], e),  # the interpreter alone, for ratios
    }
    load_before = os.getloadavg()[0]  # a shared machine: say how busy and how fast it was, before and after
    speed_before = _machine_speed()
    for _name, (ragx, env) in sides.items():  # warm-up: model conversion, page cache
        for task in tasks.values():
            task(ragx, env, 0)
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for i in range(args.runs):
        for task_name, task in tasks.items():
            for side, (ragx, env) in sides.items():
                results.setdefault((task_name, side), []).append(task(ragx, env, i))
    print(f"corpus {root} ({args.runs} runs each, interleaved; load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after; a 10M-step Python loop {speed_before:.2f} s before, {_machine_speed():.2f} s after)")
    print(f"{'what':<20} {'side':<5} {'wall median':>12} {'wall min':>9} {'CPU median':>11}")
    for task_name in tasks:
        for side in sides:
            walls = [w for w, _ in results[(task_name, side)]]
            cpus = [c for _, c in results[(task_name, side)]]
            print(f"{task_name:<20} {side:<5} {statistics.median(walls):>11.3f}s {min(walls):>8.3f}s {statistics.median(cpus):>10.3f}s")
        if "old" in sides:
            ratio = statistics.median(w for w, _ in results[(task_name, "old")]) / statistics.median(
                w for w, _ in results[(task_name, "new")])
            print(f"{'':<20} old/new wall median ratio {ratio:.2f}")


if __name__ == "__main__":
    main()
