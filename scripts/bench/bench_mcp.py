#!/usr/bin/env python
"""Benchmark `ragx mcp` as an agent sees it, with the official MCP SDK's stdio client, on an indexed corpus.

    python scripts/bench/bench_mcp.py                          # SciFact, where `ragx eval beir` keeps it; 10 runs
    python scripts/bench/bench_mcp.py --root DIR --queries Q.jsonl --runs 15 --warm 50 [--old-tree DIR] [--json]

Each run spawns a fresh `ragx mcp --root DIR` (the venv's console script) and times, from the spawn:
  * initialize: `initialize` answered (the client then sends `notifications/initialized`);
  * tools/list: `tools/list` answered: the agent can now use the tools;
  * first search: the first `tools/call search` answered (a different SciFact query each run);
and the server's CPU time (user + system, read from /proc) when tools/list and the first search were
answered. Beside each run, `python -c pass` is timed the same way (spawn -> exit), so every figure can
be read as a ratio against the interpreter's own start on the machine as it was at that moment.
`--old-tree DIR` runs a source tree's code (e.g. `git archive <commit> | tar -x -C DIR`) as a third,
interleaved side ("old"), started the same way as "new" (this venv; PYTHONPATH = the tree).

Then, in one server per side (all open at once), `--warm` searches, `--settle` seconds after a first one
(not timed) and once no server has used CPU for a second, each sent to every side in turn: the warm search p50 / p95 / mean, the server's CPU time
per search, and the median per-query ratio new / old.

Children get fresh bytecode files (PYTHONPYCACHEPREFIX in a temporary folder, PYTHONDONTWRITEBYTECODE
unset; each side is run once before timing): with PYTHONDONTWRITEBYTECODE=1 and stale .pyc files,
every module is compiled on every start and the figures mean nothing. Read-only: only `search` is called.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _scifact() -> Path:
    """Where `ragx eval beir .../scifact` materialised and indexed SciFact in the ragx cache."""
    cache = Path(os.environ.get("RAGX_CACHE_DIR") or Path.home() / ".cache" / "ragx")
    found = sorted(cache.glob("beir/scifact-*/corpus/.ragx"))
    return found[0].parent.parent if found else cache / "beir" / "scifact-(not materialised)"


DEFAULT_ROOT = _scifact() / "corpus"
DEFAULT_QUERIES = _scifact() / "queries" / "test.jsonl"
PASS_ENV = ("RAGX_RC", "RAGX_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "PATH")
TICKS = os.sysconf("SC_CLK_TCK")


def load_queries(path: Path, n: int) -> list[str]:
    out: list[str] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                out.append(json.loads(line)["query"])
            if len(out) == n:
                break
    if len(out) < n:
        raise SystemExit(f"{path} holds {len(out)} queries, {n} needed")
    return out


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def _children() -> set[int]:
    """This process's child pids (every thread's), from /proc."""
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            pids.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return pids


def _cpu(pid: int | None) -> float:
    """User + system CPU seconds of a running process so far (NaN when unknown)."""
    if pid is None:
        return float("nan")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14 and 15 of stat)


def _params(side: dict, root: Path):
    from mcp import StdioServerParameters

    return StdioServerParameters(command=side["command"][0], args=[*side["command"][1:], "mcp", "--root", str(root)], env=side["env"])


async def one_run(side: dict, root: Path, query: str, errlog) -> dict[str, float]:
    """Spawn -> initialize -> tools/list -> first search, each answered; seconds from the spawn."""
    from mcp import ClientSession, stdio_client

    before = _children()
    t0 = time.perf_counter()
    async with stdio_client(_params(side, root), errlog=errlog) as (read, write):
        pid = next(iter(_children() - before), None)
        async with ClientSession(read, write) as session:
            await session.initialize()
            t_init = time.perf_counter() - t0
            tools = await session.list_tools()
            t_list, cpu_list = time.perf_counter() - t0, _cpu(pid)
            res = await session.call_tool("search", {"query": query})
            t_search, cpu_search = time.perf_counter() - t0, _cpu(pid)
    if res.is_error or not res.structured_content:
        raise SystemExit(f"search failed: {res.content[0].text if res.content else res}")
    if len(tools.tools) < 4:
        raise SystemExit(f"tools/list gave {[t.name for t in tools.tools]}")
    return {"initialize": t_init, "tools_list": t_list, "first_search": t_search, "cpu_at_list": cpu_list, "cpu_at_search": cpu_search}


def python_pass(env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    return time.perf_counter() - t0


async def warm_sessions(all_sides: dict[str, dict], root: Path, queries: list[str], settle: float, errlog) -> dict[str, dict]:
    """Per side, seconds per search after the first and the server's CPU seconds over them: one server per
    side, all open at once, each search sent to every side in turn (the order alternating from one query
    to the next), so a load spike or a quiet spell reaches every side alike. The timed searches begin
    `settle` seconds after a first one (an agent thinks between calls: what a server loads in the
    background meanwhile is ready)."""
    from contextlib import AsyncExitStack

    import anyio
    from mcp import ClientSession, stdio_client

    names = list(all_sides)
    async with AsyncExitStack() as stack:
        sessions, pids = {}, {}
        for name in names:
            before = _children()
            read, write = await stack.enter_async_context(stdio_client(_params(all_sides[name], root), errlog=errlog))
            pids[name] = next(iter(_children() - before), None)
            sessions[name] = await stack.enter_async_context(ClientSession(read, write))
            await sessions[name].initialize()
            await sessions[name].call_tool("search", {"query": queries[0]})
        await anyio.sleep(settle)
        await _until_idle(list(pids.values()))
        times: dict[str, list[float]] = {name: [] for name in names}
        cpu0 = {name: _cpu(pids[name]) for name in names}
        for i, q in enumerate(queries[1:]):
            for name in names if i % 2 == 0 else names[::-1]:
                t = time.perf_counter()
                res = await sessions[name].call_tool("search", {"query": q})
                times[name].append(time.perf_counter() - t)
                if res.is_error:
                    raise SystemExit(f"search failed ({name}): {res.content[0].text}")
        return {name: {"times": times[name], "cpu": _cpu(pids[name]) - cpu0[name]} for name in names}


async def _until_idle(pids: list[int | None], still: float = 1.0, limit: float = 60.0) -> None:
    """Wait until no server has used CPU for `still` seconds (at most `limit`): on a loaded machine a
    server may still be loading in the background after the settle time, which no search should pay."""
    import anyio

    waited, last = 0.0, [_cpu(p) for p in pids]
    while waited < limit:
        await anyio.sleep(still)
        waited += still
        now = [_cpu(p) for p in pids]
        if now == last:
            return
        last = now


def sides(old_tree: str | None, pycache: Path) -> dict[str, dict]:
    env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)  # fresh bytecode (PYTHONDONTWRITEBYTECODE is not passed)
    ragx = str(Path(sys.executable).parent / "ragx")
    new_path = os.environ.get("PYTHONPATH")
    out = {"new": {"command": [ragx], "env": env | ({"PYTHONPATH": new_path} if new_path else {})}}
    if old_tree:
        out["old"] = {"command": [ragx], "env": env | {"PYTHONPATH": str(Path(old_tree).resolve())}}
    return out


def summary(runs: list[dict[str, float]], passes: list[float]) -> dict[str, float]:
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    p = statistics.median(passes)
    return {**{f"{k}_s": round(v, 4) for k, v in med.items()}, "python_pass_s": round(p, 4),
            **{f"{k}_x_pass": round(med[k] / p, 2) for k in ("initialize", "tools_list", "first_search")}}


def bench(a: argparse.Namespace, errlog) -> dict:
    import anyio

    root = a.root.resolve()
    queries = load_queries(a.queries, max(a.runs + 1, a.warm + 1))
    with tempfile.TemporaryDirectory(prefix="bench-mcp-pyc-") as pyc:
        all_sides = sides(a.old_tree, Path(pyc))
        for side in all_sides.values():  # bytecode written, page cache filled, model files checked
            anyio.run(one_run, side, root, queries[-1], errlog)
        load = os.getloadavg()[0]
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in all_sides}
        passes: list[float] = []
        for i in range(a.runs):  # interleaved: a load spike hits every side alike
            passes.append(python_pass(all_sides["new"]["env"]))
            for name, side in all_sides.items():
                runs[name].append(anyio.run(one_run, side, root, queries[i], errlog))
        warm = anyio.run(warm_sessions, all_sides, root, queries[: a.warm + 1], a.settle, errlog)
    out = {"root": str(root), "runs": a.runs, "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2),
           "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"}
    for name in all_sides:
        t = warm[name]["times"]
        out[name] = summary(runs[name], passes) | {
            "warm_n": len(t), "warm_p50_s": round(percentile(t, 0.5), 4), "warm_p95_s": round(percentile(t, 0.95), 4),
            "warm_mean_s": round(statistics.fmean(t), 4), "warm_cpu_per_search_s": round(warm[name]["cpu"] / len(t), 5)}
    if "old" in warm:  # the same query on both sides, one right after the other: their ratio, per query
        ratios = [n / o for n, o in zip(warm["new"]["times"], warm["old"]["times"])]
        out["warm_new_over_old_p50"] = round(statistics.median(ratios), 3)
        out |= paired_ratio(ratios)
    return out


def paired_ratio(ratios: list[float]) -> dict[str, float]:
    """Whether new and old differ, from the per-query ratios: the geometric mean ratio with its 95% CI
    (t on the log ratios) and the Wilcoxon signed-rank p (two-sided), so "unchanged" is a test, not a look."""
    import numpy as np
    from scipy import stats

    logs = np.log(np.asarray(ratios))
    half = stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / np.sqrt(len(logs))
    return {"warm_new_over_old_geomean": round(float(np.exp(logs.mean())), 3),
            "warm_new_over_old_ci95": [round(float(np.exp(logs.mean() - half)), 3), round(float(np.exp(logs.mean() + half)), 3)],
            "warm_wilcoxon_p": round(float(stats.wilcoxon(logs).pvalue), 4)}


def show(f: dict) -> None:
    print(f"ragx mcp on {f['root']}: medians of {f['runs']} runs, interleaved with `python -c pass`; "
          f"load average {f['load_before']} before, {f['load_after']} after ({f['machine']})")
    for name in ("new", "old"):
        if name not in f:
            continue
        s = f[name]
        print(f"[{name}]  python -c pass {s['python_pass_s']:.3f} s")
        print(f"  spawn -> initialize answered    {s['initialize_s']:.3f} s  ({s['initialize_x_pass']:.1f}x pass)")
        print(f"  spawn -> tools/list answered    {s['tools_list_s']:.3f} s  ({s['tools_list_x_pass']:.1f}x pass)  "
              f"server CPU {s['cpu_at_list_s']:.3f} s")
        print(f"  spawn -> first search answered  {s['first_search_s']:.3f} s  ({s['first_search_x_pass']:.1f}x pass)  "
              f"server CPU {s['cpu_at_search_s']:.3f} s")
        print(f"  warm search over {s['warm_n']}: p50 {s['warm_p50_s'] * 1000:.1f} ms, p95 {s['warm_p95_s'] * 1000:.1f} ms, "
              f"mean {s['warm_mean_s'] * 1000:.1f} ms, server CPU {s['warm_cpu_per_search_s'] * 1000:.1f} ms a search")
    if "warm_new_over_old_p50" in f:
        print(f"warm search, new / old for the same query (sent one after the other): median {f['warm_new_over_old_p50']:.3f}, "
              f"geometric mean {f['warm_new_over_old_geomean']:.3f} (95% CI {f['warm_new_over_old_ci95'][0]:.3f}-"
              f"{f['warm_new_over_old_ci95'][1]:.3f}), Wilcoxon p {f['warm_wilcoxon_p']:.4f}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="an indexed corpus (read only)")
    ap.add_argument("--queries", type=Path, default=DEFAULT_QUERIES, help='jsonl, one {"query": ...} per line')
    ap.add_argument("--runs", type=int, default=10, help="fresh servers per side (medians)")
    ap.add_argument("--warm", type=int, default=50, help="warm searches timed in one server per side (sides in turn)")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds between the first search and the warm ones")
    ap.add_argument("--old-tree", default=None, help="a source tree whose code is run as a second side, 'old'")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    ap.add_argument("--server-log", type=Path, default=None, help="where the servers' stderr goes (default: discarded)")
    a = ap.parse_args(argv)
    if not (a.root / ".ragx").is_dir():
        raise SystemExit(f"{a.root} is not an indexed corpus (index SciFact with `ragx eval beir ../shared/data/scifact`, or pass --root)")
    with open(a.server_log or os.devnull, "w") as errlog:
        figures = bench(a, errlog)
    print(json.dumps(figures) if a.json else "", end="\n" if a.json else "")
    if not a.json:
        show(figures)


if __name__ == "__main__":
    main()
