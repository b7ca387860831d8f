"""The fast MCP handshake (ragx.mcp.stdio): answered without the SDK, yet exactly what the SDK answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import pytest
from test_mcp import _code, _env, mcp_corpus


@pytest.fixture
def corpus(tmp_path):
    return mcp_corpus(tmp_path, n_per_topic=2)


def _initialize(version: str, ident=1) -> dict:
    return {"jsonrpc": "2.0", "id": ident, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}


def test_protocol_versions_are_the_sdks():
    from mcp_types import version

    from ragx.mcp import stdio

    assert stdio.HANDSHAKE_VERSIONS == tuple(version.HANDSHAKE_PROTOCOL_VERSIONS)
    assert stdio.LATEST_HANDSHAKE == version.LATEST_HANDSHAKE_VERSION


@pytest.mark.parametrize("version", ["2025-11-25", "2024-11-05", "1999-01-01"])
def test_fast_answer_equals_the_sdk_answer(corpus, version):
    """The SDK's own answer to the same request (its stdio transport on in-process streams)."""
    from mcp.server.stdio import stdio_server

    from ragx.mcp import stdio
    from ragx.mcp.server import build_server
    from ragx.mcp.service import Service

    service = Service(corpus)
    server = build_server(service)
    written: list[str] = []

    class Out:
        async def write(self, text):
            written.append(text)

        async def flush(self):
            pass

    class Rest:  # end of input once the SDK has answered
        async def readline(self):
            while not written:
                await anyio.sleep(0.01)
            return ""

    async def scenario():
        lowlevel = server._lowlevel_server
        line = json.dumps(_initialize(version)).encode() + b"\n"
        out = stdio._Out(Out())
        async with stdio_server(stdin=stdio._Replay([line], Rest(), out), stdout=out) as (read, write):
            with anyio.fail_after(30):
                await lowlevel.run(read, write, lowlevel.create_initialization_options())

    anyio.run(scenario)
    sdk = json.loads(written[0])
    assert sdk["id"] == 1
    assert sdk["result"] == stdio.initialize_result(version, service.root)
    service.close()


def _session(corpus, lines: list[dict | str]) -> list[dict]:
    """Send `lines` one by one, each request answered before the next; every stdout line, parsed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _code(corpus)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=os.environ | _env(), text=True,
    )
    out: list[dict] = []
    for item in lines:
        text = item if isinstance(item, str) else json.dumps(item)
        proc.stdin.write(text + "\n")
        proc.stdin.flush()
        ident = item.get("id") if isinstance(item, dict) else None
        while ident is not None and not any(m.get("id") == ident for m in out):
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            out.append(json.loads(line))
    proc.stdin.close()
    out += [json.loads(line) for line in proc.stdout.read().splitlines()]
    proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read()
    return out


def test_one_answer_per_request_then_the_sdk_serves(corpus):
    out = _session(corpus, [
        _initialize("2025-11-25", ident="init-1"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ])
    assert [m.get("id") for m in out] == ["init-1", 2, 3]  # the replayed initialize's answer is dropped
    assert out[0]["result"]["serverInfo"]["name"] == "ragx"
    assert sorted(t["name"] for t in out[1]["result"]["tools"]) == ["index", "inspect", "search", "status"]


def test_a_malformed_first_message_goes_to_the_sdk(corpus):
    """Not an initialize we answer ourselves: the SDK answers (here, an error), and the session goes on."""
    bad = _initialize("2025-11-25")
    del bad["params"]["clientInfo"]
    out = _session(corpus, [bad, _initialize("2025-11-25", ident=2)])
    assert [m.get("id") for m in out] == [1, 2]
    assert "error" in out[0]
