"""Requests the server once left unanswered (issue 42): an id that is an object, a 20 MB line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from test_mcp import _code, _env, mcp_corpus
from test_mcp_handshake import _initialize


def test_an_object_id_and_a_huge_request_are_answered_and_the_session_goes_on(tmp_path):
    corpus = mcp_corpus(tmp_path, n_per_topic=2)
    huge = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "x" * 20_000_000}}}
    lines = [_initialize("2025-11-25"), {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": {"an": "object"}, "method": "tools/list"}, huge, {"jsonrpc": "2.0", "id": 3, "method": "ping"}]
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _code(corpus)], input="".join(json.dumps(m) + "\n" for m in lines),
                          capture_output=True, text=True, env=os.environ | _env(), timeout=120)
    out = [json.loads(line) for line in done.stdout.splitlines()]
    errors = [m for m in out if "error" in m]
    assert [e["error"]["code"] for e in errors] == [-32600, -32600], done.stdout[-500:]
    assert "id must be a string or a number" in errors[0]["error"]["message"]
    assert "bytes" in errors[1]["error"]["message"]
    assert any(m.get("id") == 3 and m.get("result") == {} for m in out)
    assert time.perf_counter() - t0 < 60
