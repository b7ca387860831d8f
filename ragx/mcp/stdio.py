"""`ragx mcp` over stdio, with the session's first moments served before the MCP SDK is imported.

Importing the official SDK costs 0.7-1.1 s (its pydantic protocol types alone ~0.5 s), and agent
clients start one server per session and wait for the tools. So this module (standard library only)
claims stdin/stdout, and a loader thread loads what a first search needs, then the SDK, while
`fast.Front` answers the handshake, the tool list and the first read-only tool calls on the wire
(each answer equal to the SDK's: tests/test_mcp_handshake.py, tests/test_mcp_fast.py). The SDK then
serves the rest of the session: it is handed the initialize request again (its answer to it is
dropped: the client already has one), `notifications/initialized`, and the first message the fast
path left to it; from then on each line the fast path can answer (the read-only tool calls, the static
requests) is still answered by it, in a worker thread, and never reaches the SDK. A first message that
is not a well-formed `initialize` (a client skipping the handshake) goes to the SDK untouched, which
answers it as it always did.

Every line the client sends is screened before the SDK sees it (`_screen`): the SDK drops a line it
cannot parse with a debug log only, so the client would wait forever. Here a line that is not JSON (or
not UTF-8) gets a JSON-RPC parse error (-32700, id null), JSON that is not a JSON-RPC message an invalid
request error (-32600), and a request whose strings hold a lone surrogate (what JavaScript's
JSON.stringify makes of half an emoji; the SDK's parser refuses it) an answer naming the string: a
tool error for a `tools/call` argument, else invalid params (-32602).

stdout carries protocol messages only: while serving, file descriptor 1 points at stderr and the
protocol goes to a private duplicate, and fd 0 reads /dev/null (as the SDK's own stdio transport does),
so a stray print or a child process never corrupts or steals the stream.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any

from .. import __version__
from ..log import warn

log = logging.getLogger("ragx.mcp")
# Seconds the SDK waits to load when no tool call has come: loading it (~0.8 s of CPU) would slow a
# first search that arrives meanwhile, but a client that lists tools and then waits gets it ready.
SDK_AFTER = 1.0

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


def shown(path: Path | str) -> str:
    """A path as text that JSON can carry: the bytes of a name that is not UTF-8 (kept by Python as
    surrogate escapes) shown as \\udcNN, as the CLI shows them."""
    return str(path).encode("utf-8", "backslashreplace").decode("utf-8")


def instructions(root: Path) -> str:
    """The server's instructions for the corpus at `root`."""
    return INSTRUCTIONS.format(root=shown(root))


def initialize_result(requested: str, root: Path) -> dict[str, Any]:
    """The `initialize` result for a client asking for protocol version `requested`."""
    return {
        "capabilities": CAPABILITIES,
        "instructions": instructions(root),
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
    if _lone_surrogate(msg) is not None:
        return None  # the SDK cannot read it: the screen answers it (invalid params), not we
    return msg


# ---- the screen: every line the client sends, before the SDK reads it ------------------------------
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602  # JSON-RPC 2.0 error codes
_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins escaped pairs: any left is a lone one


MAX_REQUEST_BYTES = 1_000_000  # one JSON-RPC line from the client; a 20 MB one went unanswered for minutes


def _valid_id(ident: Any) -> bool:
    return isinstance(ident, (int, str)) and not isinstance(ident, bool)


def _bad_request_id(text: str) -> bool:
    """A request (it has a method) whose id is there but neither a string nor a number (JSON-RPC 2.0
    allows null only in responses to a request it could not read)."""
    if '"id"' not in text:
        return False
    msg = json.loads(text)
    return isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg and not _valid_id(msg["id"])


def _lone_surrogate(value: Any, path: tuple[str | int, ...] = ()) -> tuple[tuple[str | int, ...], bool, int] | None:
    """Where the first string holding a lone surrogate is: (its path, whether it is an object key, the
    character's index), or None when every string is valid Unicode."""
    if isinstance(value, str):
        bad = _SURROGATE.search(value)
        return None if bad is None else (path, False, bad.start())
    if isinstance(value, dict):
        for key, item in value.items():
            bad = _SURROGATE.search(key)
            if bad is not None:
                return (*path, key), True, bad.start()
            found = _lone_surrogate(item, (*path, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _lone_surrogate(item, (*path, i))
            if found is not None:
                return found
    return None


def _replaced(value: Any) -> Any:
    """`value` with every lone surrogate replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_replaced(k): _replaced(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v) for v in value]
    return value


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _unicode_answer(msg: dict[str, Any], path: tuple[str | int, ...], is_key: bool, at: int, utf8: bool) -> dict[str, Any]:
    """The answer to request `msg` whose string at `path` is not valid Unicode."""
    reason = (f"not valid UTF-8 (character {at})" if utf8
              else f"not valid Unicode (character {at} is a lone surrogate, e.g. half of an emoji)")
    if msg["method"] == "tools/call" and len(path) > 2 and path[:2] == ("params", "arguments"):
        # An argument: a tool error, as for any other bad argument, so that the model can correct it.
        name = shown(str(path[2]))
        text = f"invalid argument name {name}: {reason}" if is_key and len(path) == 3 else f"invalid argument {name}: {reason}"
        return {"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": text}], "isError": True}}
    where = ".".join(shown(str(p)) for p in path)
    return _error(msg["id"], INVALID_PARAMS, f"Invalid params: {'the key ' if is_key else ''}{where} is {reason}")


def _screen(line: bytes | str) -> tuple[str | None, dict[str, Any] | None]:
    """What to do with one line from the client: (text, None) hands `text` to the SDK, which can read
    it; (None, answer) sends `answer` instead (the SDK would drop the line without a word); (None, None)
    skips a blank line, which is no message."""
    from mcp_types import jsonrpc_message_adapter  # loaded by now: the screen runs in the SDK's session
    from pydantic import ValidationError

    bad_byte: int | None = None
    sdk_says = ""  # why the SDK's parser refuses the line
    if isinstance(line, bytes):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:  # its bytes kept as surrogate escapes, found below
            bad_byte, text = exc.start, line.decode("utf-8", "surrogateescape")
    else:
        text = line
    if not text.strip():
        return None, None
    if len(line) > MAX_REQUEST_BYTES:  # refused unread: a query or a path is never this long
        log.info("answered a request of %d bytes", len(line))
        return None, _error(None, INVALID_REQUEST, f"Invalid Request: {len(line):,} bytes; at most {MAX_REQUEST_BYTES:,} are read")
    if bad_byte is None:
        try:
            jsonrpc_message_adapter.validate_json(text, by_name=False)
            if _bad_request_id(text):  # read by the SDK as a notification: it would never answer
                log.info("answered a request whose id is neither a string nor a number")
                return None, _error(None, INVALID_REQUEST, "Invalid Request: the id must be a string or a number")
            return text, None
        except ValidationError as exc:
            problems = exc.errors()
        sdk_says = str(problems[0]["msg"])
        if all(p["type"] != "json_invalid" for p in problems):  # JSON, but not a JSON-RPC message
            msg = json.loads(text)
            ident = msg["id"] if isinstance(msg, dict) and _valid_id(msg.get("id")) else None
            log.info("answered a message that is not JSON-RPC 2.0")
            return None, _error(ident, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request, notification or response")
    try:
        msg = json.loads(text)
        found = _lone_surrogate(msg)
    except (ValueError, RecursionError) as exc:
        why = f"not valid UTF-8 (byte {bad_byte})" if bad_byte is not None else f"not valid JSON ({str(exc).split(':')[0]})"
        log.info("answered a line that is not JSON: %s", why)
        return None, _error(None, PARSE_ERROR, f"Parse error: {why}")
    if found is None:  # JSON to Python, not to the SDK's stricter parser
        log.info("answered a line the SDK cannot parse: %s", sdk_says)
        return None, _error(None, PARSE_ERROR, f"Parse error: {sdk_says or 'not valid JSON'}")
    if isinstance(msg, dict) and isinstance(msg.get("method"), str) and _valid_id(msg.get("id")):
        log.info("answered %s: a string in it is not valid Unicode", shown(msg["method"]))
        return None, _unicode_answer(msg, *found, utf8=bad_byte is not None)
    # A notification or a response: nothing to answer, so it goes on with U+FFFD in place.
    what = shown(msg["method"]) if isinstance(msg, dict) and isinstance(msg.get("method"), str) else "message"
    log.warning("a %s from the client holds text that is not valid Unicode: read with U+FFFD in its place", what)
    return _screen(json.dumps(_replaced(msg), ensure_ascii=False))


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


class _Out:
    """The SDK's stdout, shared with the screen: one message at a time; the SDK's answer to the replayed
    initialize request (`drop_id`) is dropped, as the client already has one."""

    _NOTHING = object()

    def __init__(self, out: Any, drop_id: Any = _NOTHING):
        self._out = out
        self._drop = drop_id
        self._lock: Any = None  # an anyio.Lock, made in the event loop

    async def write(self, text: str) -> None:
        if self._drop is not self._NOTHING:
            try:
                msg = json.loads(text)
            except ValueError:
                msg = None
            if isinstance(msg, dict) and msg.get("id") == self._drop and ("result" in msg or "error" in msg):
                self._drop = self._NOTHING
                return
        await self._send(text)

    async def answer(self, message: dict[str, Any]) -> None:
        """The screen's answer to a line the SDK never sees (ASCII: it may repeat the client's bad id)."""
        await self._send(json.dumps(message, separators=(",", ":")) + "\n")
        await self.flush()

    async def send(self, message: dict[str, Any]) -> None:
        """An answer the fast path gave (ragx.mcp.fast), written as the SDK writes its own: UTF-8, one line."""
        await self._send(json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n")
        await self.flush()

    async def _send(self, text: str) -> None:
        import anyio

        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:  # the SDK's writer and the screen write from two tasks
            await self._out.write(text)

    async def flush(self) -> None:
        await self._out.flush()


class _Replay:
    """The SDK's stdin (an async line iterator): the replayed lines first, then the rest of the wire.
    A line of the rest the fast path answers (`fast`: ragx.mcp.fast.Front.answering_line, the read-only
    tool calls and the static requests) never reaches the SDK: it is answered on `out` by a task of its
    own (`spawn`: a task group's start_soon; without it, before the next line is read) that does the
    work in a worker thread, as the SDK runs a tool, while the next line is read, as the SDK reads it.
    Every other line goes through the screen, and what the SDK could not read is answered on `out` too."""

    def __init__(self, first: list[bytes], rest: Any, out: _Out, fast: Any = None, spawn: Any = None):
        self._first = first
        self._rest = rest
        self._out = out
        self._fast = fast
        self._spawn = spawn

    def __aiter__(self) -> "_Replay":
        return self

    async def __anext__(self) -> str:
        while True:
            if self._first:
                line = self._first.pop(0)
            else:
                line = await self._rest.readline()
                if not line:
                    raise StopAsyncIteration
                work = None if self._fast is None else self._fast(line)
                if work is not None:
                    if self._spawn is None:
                        await self._answer(work)
                    else:
                        self._spawn(self._answer, work)
                    continue
            text, answer = _screen(line)
            if answer is not None:
                await self._out.answer(answer)
            if text is not None:
                return text

    async def _answer(self, work: Any) -> None:
        import anyio.to_thread

        await self._out.send(await anyio.to_thread.run_sync(work))


class _Loader(threading.Thread):
    """Loads in the order an agent needs things, while the main thread answers on the wire: first what
    a search needs (`warm` is set after it), then the SDK and the server built on it (`done` then), once
    the first tool call is answered (`want_sdk`), or after SDK_AFTER seconds when no call has begun
    (`calling`): an import competing for the interpreter would slow a call in progress."""

    def __init__(self, service: Any):
        super().__init__(name="ragx-mcp-loader", daemon=True)
        self.service = service
        self.warm = threading.Event()
        self.want_sdk = threading.Event()
        self.calling = threading.Event()
        self.ready = threading.Event()  # the server is built, or loading failed (`error`)
        self.server: Any = None
        self.error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self.ready.is_set()

    def run(self) -> None:
        try:
            self.service.prepare()
            self.warm.set()
            if not self.want_sdk.wait(SDK_AFTER) and self.calling.is_set():
                self.want_sdk.wait()  # set once that call is answered
            from .server import build_server

            self.server = build_server(self.service)
        except BaseException as exc:  # noqa: BLE001 - re-raised by the main thread
            self.error = exc
        finally:
            self.warm.set()
            self.ready.set()
        if self.server is not None:
            self.service.prepare()  # after a first search in numpy, the next one's onnxruntime session


class _TextOut:
    """The wire's writer as the SDK's stdout: a message is written in one worker-thread call (the SDK
    flushes after each, and the wire is unbuffered: anyio's file wrapper would spend a second call on it)."""

    def __init__(self, raw: Any):
        self._text = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)

    async def write(self, text: str) -> None:
        import anyio.to_thread

        await anyio.to_thread.run_sync(self._text.write, text)

    async def flush(self) -> None:
        pass


async def _run_sdk(server: Any, wire: _Wire, replay: list[bytes], drop_id: Any, fast: Any = None) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    bytes_in = anyio.wrap_file(wire.reader)  # lines as bytes: the screen decodes them, and names a bad byte
    text_out = _TextOut(wire.writer)
    stdout = _Out(text_out) if drop_id is None else _Out(text_out, drop_id)
    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, on our streams
    # The SDK annotates its streams as anyio AsyncFile but only iterates stdin and calls
    # write/flush on stdout, which _Replay and _Out provide.
    async with anyio.create_task_group() as answering:  # the fast path's answers: each finishes, also after EOF
        stdin = _Replay(replay, bytes_in, stdout, fast, answering.start_soon)
        async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):  # type: ignore[arg-type]
            await lowlevel.run(read, write, lowlevel.create_initialization_options())


def _serve_wire(service: Any) -> None:
    """The handshake and the first calls without the SDK (ragx.mcp.fast), the SDK from then on, until
    the client closes stdin."""
    from .fast import Front

    loader = _Loader(service)
    wire = _Wire()
    try:
        loader.start()
        front = Front(wire, service, loader)
        replay = front.serve()
        if replay is None:
            return  # the client left
        loader.want_sdk.set()
        loader.ready.wait()
        if loader.error is not None:
            raise loader.error
        import anyio

        anyio.run(_run_sdk, loader.server, wire, replay, front.drop_id, front.answering_line)
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
        warn(service.refusal, program="ragx mcp")
    elif not service.marked:
        warn(f"no ragx.toml or .ragx/ at or above {service.root}: serving the working directory as the corpus; "
             "pass --root to choose one", program="ragx mcp")
    try:
        _serve_wire(service)
    finally:
        service.close()
