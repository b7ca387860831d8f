"""`ragx mcp` over stdio, with a handshake answered before the MCP SDK is imported.

Importing the official SDK costs 0.7-1.1 s (its pydantic protocol types alone ~0.5 s), and agent
clients start one server per session and wait for the handshake. So this module (standard library
only) claims stdin/stdout, imports the SDK and builds the server in a background thread, and answers
the client's `initialize` request at once with the result the SDK gives (tests/test_mcp.py compares
the two, field by field). The SDK then serves the whole session: it is handed the initialize request
again, followed by everything the client sent after it, and its own answer to that replayed request
is dropped (the client already has one). A first message that is not a well-formed `initialize`
(a client skipping the handshake) goes to the SDK untouched, which answers it as it always did.

stdout carries protocol messages only: while serving, file descriptor 1 points at stderr and the
protocol goes to a private duplicate, and fd 0 reads /dev/null (as the SDK's own stdio transport does),
so a stray print or a child process never corrupts or steals the stream.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

from .. import __version__

NAME = "ragx"
TITLE = "ragx local semantic search"
# mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS / LATEST_HANDSHAKE_VERSION of the SDK ragx is tested
# with; test_mcp.py fails when an SDK upgrade changes them (or the capabilities below).
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE = "2025-11-25"
# What MCPServer advertises for a server with tools (it registers prompt and resource handlers too).
CAPABILITIES = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}

INSTRUCTIONS = """\
ragx searches the local corpus at {root} by meaning (dense vectors + BM25 + a chunk similarity graph).
Use `search` to find where something is discussed or implemented: results carry the file path
(relative to the corpus root) and 1-based line ranges; `files_only` gives a ranked file list.
Call `status` to see whether the corpus drifted from the index (new/changed/deleted files) and
`index` after editing files (incremental; `path` limits it to one file or folder). `inspect` looks
at a chunk, a file's chunks, a chunk's graph neighbours, or the communities. Paths must stay inside
the corpus root."""


def initialize_result(requested: str, root: Path) -> dict[str, Any]:
    """The `initialize` result for a client asking for protocol version `requested`."""
    return {
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS.format(root=root),
        "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE,
        "serverInfo": {"name": NAME, "title": TITLE, "version": __version__},
    }


def _initialize_request(line: bytes) -> dict[str, Any] | None:
    """The message if `line` is a well-formed initialize request we can answer ourselves, else None."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or msg.get("method") != "initialize":
        return None
    params = msg.get("params")
    ident = msg.get("id")
    if isinstance(ident, bool) or not isinstance(ident, (int, str)) or not isinstance(params, dict):
        return None
    info = params.get("clientInfo")
    if not (isinstance(params.get("protocolVersion"), str) and isinstance(params.get("capabilities"), dict)
            and isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)):
        return None
    return msg


class _Wire:
    """The protocol's private copies of fds 0 and 1; fd 1 points at stderr and fd 0 at /dev/null meanwhile."""

    def __init__(self) -> None:
        self._saved = (os.dup(0), os.dup(1))
        self.reader = io.BufferedReader(io.FileIO(os.dup(0), "rb"))
        self.writer = io.FileIO(os.dup(1), "wb")
        sys.stdout.flush()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)

    def send(self, message: dict[str, Any]) -> None:
        self.writer.write(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")

    def restore(self) -> None:
        sys.stdout.flush()
        for fd, saved in enumerate(self._saved):
            os.dup2(saved, fd)
            os.close(saved)


class _Replay:
    """The SDK's stdin (an async line iterator): the replayed lines first, then the rest of the wire."""

    def __init__(self, first: list[str], rest: Any):
        self._first = first
        self._rest = rest

    def __aiter__(self) -> "_Replay":
        return self

    async def __anext__(self) -> str:
        if self._first:
            return self._first.pop(0)
        line = await self._rest.readline()
        if not line:
            raise StopAsyncIteration
        return line


class _DropAnswer:
    """The SDK's stdout: writes through, except the SDK's answer to the replayed initialize request."""

    _NOTHING = object()

    def __init__(self, out: Any, drop_id: Any):
        self._out = out
        self._drop = drop_id

    async def write(self, text: str) -> None:
        if self._drop is not self._NOTHING:
            try:
                msg = json.loads(text)
            except ValueError:
                msg = None
            if isinstance(msg, dict) and msg.get("id") == self._drop and ("result" in msg or "error" in msg):
                self._drop = self._NOTHING
                return
        await self._out.write(text)

    async def flush(self) -> None:
        await self._out.flush()


class _Loader(threading.Thread):
    """Imports the SDK and builds the server while the main thread answers the handshake."""

    def __init__(self, service: Any):
        super().__init__(name="ragx-mcp-loader", daemon=True)
        self.service = service
        self.server: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            from .server import build_server

            self.server = build_server(self.service)
            from .. import api  # noqa: F401  (the first tool call then finds the index code loaded)
            from ..lazy import lazy_module, load_now

            # Tool calls may run in several threads: the store's lazily bound numpy loads here, in one
            # (lazy.py: first use from two threads at once is unsafe before Python 3.12).
            load_now(lazy_module("numpy"))
        except BaseException as exc:  # re-raised by the main thread
            self.error = exc


async def _run_sdk(server: Any, wire: _Wire, replay: list[str], drop_id: Any) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    text_in = anyio.wrap_file(io.TextIOWrapper(wire.reader, encoding="utf-8", errors="replace"))
    text_out = anyio.wrap_file(io.TextIOWrapper(wire.writer, encoding="utf-8", write_through=True))
    stdout = text_out if drop_id is None else _DropAnswer(text_out, drop_id)
    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, on our streams
    # The SDK annotates its streams as anyio AsyncFile but only iterates stdin and calls
    # write/flush on stdout, which _Replay and _DropAnswer provide.
    async with stdio_server(stdin=_Replay(replay, text_in), stdout=stdout) as (read, write):  # type: ignore[arg-type]
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


def _serve_wire(service: Any) -> None:
    """Handshake first, the SDK from then on, until the client closes stdin."""
    loader = _Loader(service)
    wire = _Wire()
    try:
        loader.start()
        first = wire.reader.readline()
        request = _initialize_request(first) if first else None
        if request is not None:
            wire.send({"jsonrpc": "2.0", "id": request["id"],
                       "result": initialize_result(request["params"]["protocolVersion"], service.root)})
        loader.join()
        if loader.error is not None:
            raise loader.error
        if not first:
            return  # the client left before saying anything
        import anyio

        replay = [first.decode("utf-8", errors="replace")]
        anyio.run(_run_sdk, loader.server, wire, replay, None if request is None else request["id"])
    finally:
        wire.restore()


def _configure_logging(verbose: bool) -> None:
    """Plain one-line logs on stderr (set before MCPServer, whose own logging setup then stays idle)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("ragx mcp: %(levelname)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("ragx").setLevel(logging.INFO if verbose else logging.WARNING)


def serve(root: str | None = None, *, verbose: bool = False) -> None:
    """Serve the corpus at `root` (or the one found from the working directory) over stdio until EOF."""
    from .service import Service

    _configure_logging(verbose)
    service = Service(root)  # NoCorpusError (bad --root) ends the command with exit 2, before serving
    print(f"ragx mcp: serving {service.root} over stdio (ragx {__version__})", file=sys.stderr, flush=True)
    if service.refusal:
        print(f"ragx mcp: warning: {service.refusal}", file=sys.stderr, flush=True)
    elif not service.marked:
        print(
            f"ragx mcp: warning: no ragx.toml or .ragx/ at or above {service.root}: serving the working "
            "directory as the corpus; pass --root to choose one",
            file=sys.stderr, flush=True,
        )
    try:
        _serve_wire(service)
    finally:
        service.close()
