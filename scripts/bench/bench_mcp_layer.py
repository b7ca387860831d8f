#!/usr/bin/env python
"""What the MCP protocol layer of `ragx mcp` costs a tool call, without the search.

    python scripts/bench/bench_mcp_layer.py [--root DIR] [--calls 1500] [--route sdk|fast] [--tree DIR]

One process: the server's SDK session (`ragx.mcp.stdio._run_sdk`, as `ragx mcp` runs it once the SDK
has loaded) on a pair of pipes, its `Service.search` replaced by documents the corpus's own searches
returned (30 SciFact queries, computed first), so a call costs only the layer: reading the line,
parsing and routing it, running the tool in a worker thread, the result as JSON, writing it. The
client (this process's main thread) sends `tools/call search` and reads the answer, one at a time.

`--route fast`: the session with the fast path asked first (what `ragx mcp` does); `--route sdk`:
every line to the SDK (what it did before). `--tree DIR` runs another source tree's layer (e.g.
`git archive d78b077`; its session knows only `sdk`). Prints the median and minimum time a call and
the process CPU a call. Run the routes alternately: under load only ratios within a run mean much.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any


class _Warm:
    """The loader of a server whose search path and SDK are loaded (ragx.mcp.stdio._Loader's events)."""

    def __init__(self) -> None:
        self.warm, self.want_sdk, self.calling = threading.Event(), threading.Event(), threading.Event()
        self.warm.set()
        self.done = True


def _session(root: Path, route: str, docs: dict[str, Any]) -> tuple[int, Any, threading.Thread]:
    """Start the server's session on pipes: (the fd to write requests to, the answers' reader, its thread)."""
    import anyio

    from ragx.mcp import stdio
    from ragx.mcp.server import build_server
    from ragx.mcp.service import Service

    service = Service(str(root))
    service.search = lambda query, **_: docs[query]  # type: ignore[method-assign]
    server = build_server(service)
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    wire = argparse.Namespace(reader=io.BufferedReader(io.FileIO(in_r, "rb")), writer=io.FileIO(out_w, "wb"))
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
    handshake = [json.dumps(init).encode() + b"\n", b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n']
    args: tuple[Any, ...] = (server, wire, handshake, None)
    if route == "fast":
        from ragx.mcp.fast import Front

        args += (Front(None, service, _Warm()).answering_line,)
    thread = threading.Thread(target=anyio.run, args=(stdio._run_sdk, *args), daemon=True)
    thread.start()
    answers = io.BufferedReader(io.FileIO(out_r, "rb"))
    answers.readline()  # the initialize answer
    return in_w, answers, thread


def bench(root: Path, queries: list[str], route: str, calls: int) -> dict[str, float]:
    from ragx.mcp.service import Service

    searcher = Service(str(root))
    docs = {q: searcher.search(q) for q in queries}
    searcher.close()
    in_w, answers, thread = _session(root, route, docs)
    times: list[float] = []
    cpu0 = time.process_time()
    for i in range(calls):
        request = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                   "params": {"name": "search", "arguments": {"query": queries[i % len(queries)]}}}
        line = json.dumps(request).encode() + b"\n"
        t0 = time.perf_counter()
        os.write(in_w, line)
        answer = answers.readline()
        times.append(time.perf_counter() - t0)
        if i < len(queries) and json.loads(answer)["result"]["structuredContent"] != docs[queries[i]]:
            raise SystemExit(f"call {i + 1}: the answer is not the search's document")
    cpu = time.process_time() - cpu0
    os.close(in_w)
    thread.join(10)
    return {"median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3, "cpu_ms": cpu / calls * 1e3}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=None, help="an indexed corpus (default: SciFact in the ragx cache)")
    ap.add_argument("--queries", type=Path, default=None, help='jsonl, one {"query": ...} per line (default: SciFact test)')
    ap.add_argument("--calls", type=int, default=1500)
    ap.add_argument("--route", choices=("sdk", "fast"), default="fast")
    ap.add_argument("--tree", default=None, help="a source tree whose ragx is run instead of this one")
    a = ap.parse_args(argv)
    if a.tree:
        sys.path.insert(0, str(Path(a.tree).resolve()))
    sys.path.insert(0, str(Path(__file__).parent))
    import bench_mcp

    import ragx

    root = (a.root or bench_mcp.DEFAULT_ROOT).resolve()
    queries = bench_mcp.load_queries(a.queries or bench_mcp.DEFAULT_QUERIES, 30)
    f = bench(root, queries, a.route, a.calls)
    print(f"{Path(ragx.__file__).parent.parent} route {a.route}: {a.calls} calls, median {f['median_ms']:.3f} ms, "
          f"min {f['min_ms']:.3f} ms, process CPU {f['cpu_ms']:.3f} ms a call (load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
