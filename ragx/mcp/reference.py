"""The official SDK's own answers to raw protocol lines, run in-process: the reference of the fast path.

`sdk_answers` feeds lines to the server `server.build_server` makes, through the SDK's stdio transport
on in-memory streams, and returns what it writes, parsed. `python -m ragx.mcp.reference` writes
`static.json` from it: the answers that depend on nothing but the code (tools/list, prompts/list,
resources/list, resources/templates/list, ping), which `fast.py` serves before the SDK has loaded.
tests/test_mcp_fast.py checks the file equal to a fresh run, for every protocol version the SDK
accepts, and every tool call the fast path answers equal to the SDK's answer.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from .stdio import HANDSHAKE_VERSIONS, LATEST_HANDSHAKE, _Out, _Replay

STATIC_FILE = Path(__file__).with_name("static.json")
# Requests whose answers depend on neither the corpus nor the client (params empty).
STATIC_METHODS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list", "ping")


def handshake(version: str = LATEST_HANDSHAKE, ident: Any = 0) -> list[dict[str, Any]]:
    """An initialize request asking for `version`, and the notification that completes the handshake."""
    return [{"jsonrpc": "2.0", "id": ident, "method": "initialize",
             "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "ragx-reference", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def sdk_answers(service: Any, lines: list[dict[str, Any] | bytes]) -> list[dict[str, Any]]:
    """What the SDK's server for `service` writes when the client sends `lines` (then closes its end
    once every request has its answer), each message parsed."""
    import anyio
    from mcp.server.stdio import stdio_server

    from .server import build_server

    server = build_server(service)
    raw = [line if isinstance(line, bytes) else json.dumps(line).encode() + b"\n" for line in lines]
    expected = sum(1 for line in lines if not isinstance(line, bytes) and "id" in line and "method" in line)
    written: list[str] = []

    class Sink:
        async def write(self, text: str) -> None:
            written.append(text)

        async def flush(self) -> None:
            pass

    class Rest:  # end of input once every request is answered
        async def readline(self) -> bytes:
            while sum(1 for w in written if '"id"' in w and ('"result"' in w or '"error"' in w)) < expected:
                await anyio.sleep(0.005)
            return b""

    async def run() -> None:
        lowlevel = server._lowlevel_server
        out = _Out(Sink())
        async with stdio_server(stdin=_Replay(raw, Rest(), out), stdout=out) as (read, write):  # type: ignore[arg-type]
            with anyio.fail_after(60):
                await lowlevel.run(read, write, lowlevel.create_initialization_options())

    anyio.run(run)
    return [json.loads(w) for w in written]


def static_answers(version: str = LATEST_HANDSHAKE) -> dict[str, Any]:
    """The SDK's results to STATIC_METHODS, by method, for a client of protocol `version`."""
    from .service import Service

    with tempfile.TemporaryDirectory(prefix="ragx-reference-") as folder:
        service = Service(folder)
        try:
            requests: list[dict[str, Any]] = [{"jsonrpc": "2.0", "id": i, "method": m} for i, m in enumerate(STATIC_METHODS, 1)]
            answers = {a.get("id"): a for a in sdk_answers(service, [*handshake(version), *requests])}
        finally:
            service.close()
    return {method: answers[i]["result"] for i, method in enumerate(STATIC_METHODS, 1)}


def main() -> None:
    """Write static.json (run after changing a tool, its description or schema, or the SDK)."""
    answers = {v: static_answers(v) for v in HANDSHAKE_VERSIONS}
    if any(a != answers[LATEST_HANDSHAKE] for a in answers.values()):
        sys.exit("the SDK answers differently per protocol version: static.json would need one table per version")
    STATIC_FILE.write_text(json.dumps(answers[LATEST_HANDSHAKE], indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {STATIC_FILE}")


if __name__ == "__main__":
    main()
