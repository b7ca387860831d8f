#!/usr/bin/env python
"""Benchmark `ragx mcp` as an agent sees it: a real MCP client (the SDK's stdio client) on a corpus.

    python scripts/bench_mcp.py                                   # SciFact, where `ragx eval beir` keeps it
    python scripts/bench_mcp.py --root DIR --queries Q.jsonl --n 50 --json

Measures, in one server process:
  * handshake: process spawn -> `initialize` answered (interpreter start, imports, MCP handshake);
  * status: one `status` call (index counts, integrity check, drift scan of the corpus);
  * first search: the first `search`, which loads the embedding model (ONNX session);
  * warm search: p50 / p95 / mean over the next --n queries (one at a time, default options).

Read-only: only `status` and `search` are called, never `index`. Queries come from a jsonl file with
one {"query": ...} object per line; the first is the cold query, the next --n the warm ones.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from ragx.eval.beir import cache_dir_for

# Where `ragx eval beir ../shared/data/scifact` materialises and indexes SciFact.
_SCIFACT = cache_dir_for(Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact")
DEFAULT_ROOT = _SCIFACT / "corpus"
DEFAULT_QUERIES = _SCIFACT / "queries" / "test.jsonl"
PASS_ENV = ("RAGX_RC", "RAGX_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")


def load_queries(path: Path, n: int) -> list[str]:
    out = []
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


async def bench(root: Path, queries: list[str], top: int | None, errlog) -> dict:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ragx.cli.main", "mcp", "--root", str(root)],
        env={k: os.environ[k] for k in PASS_ENV if k in os.environ},
    )
    args = {} if top is None else {"top": top}

    async def timed(session, name, arguments):
        t = time.perf_counter()
        res = await session.call_tool(name, arguments)
        ms = (time.perf_counter() - t) * 1000
        if res.is_error:
            raise SystemExit(f"{name} failed: {res.content[0].text}")
        return ms, res.structured_content

    t0 = time.perf_counter()
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            handshake = (time.perf_counter() - t0) * 1000
            status_ms, status = await timed(session, "status", {})
            status2_ms, _ = await timed(session, "status", {})
            first_ms, first = await timed(session, "search", {"query": queries[0], **args})
            warm = []
            for q in queries[1:]:
                ms, _ = await timed(session, "search", {"query": q, **args})
                warm.append(ms)
    return {
        "root": str(root),
        "files": status.get("files"),
        "chunks": status.get("chunks"),
        "model": status.get("model"),
        "drift": status.get("drift"),
        "handshake_ms": round(handshake, 1),
        "status_ms": round(status_ms, 1),
        "status_again_ms": round(status2_ms, 1),
        "first_search_ms": round(first_ms, 1),
        "first_search_results": len(first["results"]),
        "warm_n": len(warm),
        "warm_p50_ms": round(percentile(warm, 0.50), 1),
        "warm_p95_ms": round(percentile(warm, 0.95), 1),
        "warm_mean_ms": round(statistics.fmean(warm), 1),
        "warm_max_ms": round(max(warm), 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="an indexed corpus (read only)")
    ap.add_argument("--queries", type=Path, default=DEFAULT_QUERIES, help='jsonl, one {"query": ...} per line')
    ap.add_argument("--n", type=int, default=50, help="warm queries (after the first, cold one)")
    ap.add_argument("--top", type=int, default=None, help="results per search (default: the corpus's search.top)")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    ap.add_argument("--server-log", type=Path, default=None, help="where the server's stderr goes (default: discarded)")
    a = ap.parse_args(argv)

    import anyio

    queries = load_queries(a.queries, a.n + 1)
    with open(a.server_log or os.devnull, "w") as errlog:
        figures = anyio.run(bench, a.root.resolve(), queries, a.top, errlog)
    if a.json:
        print(json.dumps(figures))
        return
    print(f"ragx mcp on {figures['root']}: {figures['files']} files, {figures['chunks']} chunks, model {figures['model']}")
    print(f"  handshake (spawn -> initialized)  {figures['handshake_ms']:8.1f} ms")
    print(f"  status (with drift scan)          {figures['status_ms']:8.1f} ms   (again: {figures['status_again_ms']:.1f} ms)")
    print(f"  first search (loads the model)    {figures['first_search_ms']:8.1f} ms")
    print(f"  warm search over {figures['warm_n']} queries     p50 {figures['warm_p50_ms']:.1f} ms, p95 {figures['warm_p95_ms']:.1f} ms, "
          f"mean {figures['warm_mean_ms']:.1f} ms, max {figures['warm_max_ms']:.1f} ms")
    print(f"  machine: {figures['machine']}")


if __name__ == "__main__":
    main()
