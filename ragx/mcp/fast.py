"""The first moments of an MCP session, served before the SDK has loaded (standard library only).

An agent can do nothing until `tools/list` and its first `tools/call` are answered, and importing the
SDK costs ~0.8 s of CPU. What those answers need is small: the tool list is static (`static.json`,
written from the SDK's own answers by `reference.py`), and a search needs numpy, the store and the
query's embedding, not the SDK's server machinery. So `Front` answers, on the wire itself:
  * `initialize` (the SDK's result, `stdio.initialize_result`) and `notifications/initialized`;
  * `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list` and `ping`, from static.json;
  * `tools/call` of the read-only tools (search, status, inspect) whose arguments plainly fit the
    tool's input schema, through the same `Service` and `results.answer` as the SDK's server.
The first message it has no answer for (any other method or notification, a tool call with arguments
that do not fit, which the SDK then refuses in its own words, a line that is not plain JSON-RPC), or
any message once the SDK is ready, ends its part: the SDK is handed the handshake again (its answer to
the replayed initialize is dropped) and that message, and serves the rest of the session. Even then,
each line is offered here first (`answering_line`, asked by `stdio._Replay`): a warm search answered
here skips the SDK's request parsing, result validation and serialisation: about a third of the
~0.8 ms that layer costs a call (scripts/bench/bench_mcp_layer.py, measured under load).
tests/test_mcp_fast.py holds every answer given here equal to the SDK's answer to the same request,
before the SDK has loaded and after.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import results
from .stdio import _initialize_request, _lone_surrogate, _valid_id, initialize_result

STATIC_FILE = Path(__file__).with_name("static.json")
# Read-only tools that need no request context (index reports progress through the SDK's Context).
FAST_TOOLS = ("search", "status", "inspect")
# The JSON-schema keywords `fits` understands; a schema using any other is left to the SDK.
_KEYWORDS = {"type", "anyOf", "enum", "minimum", "default", "title", "description"}
_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: type(v) is int,  # not bool, not 1.0: pydantic's StrictInt
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}
LONGEST_LINE = 1 << 20  # a longer request goes to the SDK's screen, which has the rules for it

_static: dict[str, Any] | None = None


def static() -> dict[str, Any]:
    """The SDK's results to the requests that depend on nothing but the code, by method."""
    global _static
    if _static is None:
        _static = json.loads(STATIC_FILE.read_text(encoding="utf-8"))
    return _static


def tool_schema(name: str) -> dict[str, Any] | None:
    return next((t["inputSchema"] for t in static()["tools/list"]["tools"] if t["name"] == name), None)


def fits(schema: dict[str, Any], arguments: dict[str, Any]) -> bool:
    """Whether `arguments` plainly satisfy `schema` (exact JSON types, no unknown or missing argument).
    False only means "not sure": the SDK then validates them and words any error."""
    props = schema.get("properties", {})
    if not set(arguments) <= set(props) or not set(schema.get("required", ())) <= set(arguments):
        return False
    return all(_fits(props[name], value) for name, value in arguments.items())


def _fits(spec: dict[str, Any], value: Any) -> bool:
    if not set(spec) <= _KEYWORDS:
        return False
    if "anyOf" in spec:
        return "type" not in spec and any(_fits(option, value) for option in spec["anyOf"])
    check = _TYPES.get(spec.get("type", ""))
    if check is None or not check(value):
        return False
    if "enum" in spec and value not in spec["enum"]:
        return False
    return "minimum" not in spec or value >= spec["minimum"]


def _message(line: bytes) -> dict[str, Any] | None:
    """`line` as a JSON-RPC 2.0 request or notification this module may read, else None."""
    if len(line) > LONGEST_LINE:
        return None
    try:
        msg = json.loads(line)
    except ValueError:  # not UTF-8 or not JSON: the SDK's screen words the error
        return None
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
        return None
    if ("id" in msg and not _valid_id(msg["id"])) or not isinstance(msg.get("params", {}), dict):
        return None
    return None if _lone_surrogate(msg) is not None else msg


class Front:
    """Serves the wire until the SDK must or can take over; `serve` returns the lines to hand it."""

    def __init__(self, wire: Any, service: Any, loader: Any):
        self.wire = wire
        self.service = service
        self.loader = loader  # stdio._Loader: .warm, .calling, .want_sdk (Events), .done
        self.drop_id: Any = None  # the id of the initialize answered here: the SDK's own answer is dropped

    def serve(self) -> list[bytes] | None:
        """Answer what can be answered; the lines the SDK must read next, or None when the client left."""
        first = self.wire.reader.readline()
        if not first:
            return None
        request = _initialize_request(first)
        if request is None:
            return [first]  # not a handshake to answer here: the SDK answers as it always did
        self.wire.send({"jsonrpc": "2.0", "id": request["id"],
                        "result": initialize_result(request["params"]["protocolVersion"], self.service.root)})
        self.drop_id = request["id"]
        handshake = [first]
        while True:
            line = self.wire.reader.readline()
            if not line:
                return None
            if self.loader.done:
                return [*handshake, line]
            msg = _message(line)
            if len(handshake) == 1:  # before notifications/initialized, nothing but it
                if msg is not None and msg["method"] == "notifications/initialized" and "id" not in msg:
                    handshake.append(line)
                    continue
                return [*handshake, line]
            answer = None if msg is None else self.answer(msg)
            if answer is None:
                return [*handshake, line]
            self.wire.send(answer)

    def answer(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to request `msg`, or None when it is the SDK's to give."""
        work = self.answering(msg)
        return None if work is None else work()

    def answering_line(self, line: bytes) -> Callable[[], dict[str, Any]] | None:
        """How to answer the client's `line` here (the work, not yet done), or None when it is the SDK's:
        what the SDK's stdin (`stdio._Replay`) asks of every line once the SDK serves the session."""
        msg = _message(line)
        return None if msg is None else self.answering(msg)

    def answering(self, msg: dict[str, Any]) -> Callable[[], dict[str, Any]] | None:
        """How to answer request `msg` (cheap to decide; the work is done by calling it), or None."""
        if "id" not in msg:
            return None
        ident, method, params = msg["id"], msg["method"], msg.get("params", {})
        if method in static() and set(params) <= {"_meta"}:
            return lambda: {"jsonrpc": "2.0", "id": ident, "result": static()[method]}
        call = self.call(params) if method == "tools/call" else None
        if call is None:
            return None
        return lambda: {"jsonrpc": "2.0", "id": ident, "result": call()}

    def call(self, params: dict[str, Any]) -> Callable[[], dict[str, Any]] | None:
        """A tool call's work (its result when called), or None when the call is not one this path answers."""
        name, arguments = params.get("name"), params.get("arguments")
        if name not in FAST_TOOLS or not isinstance(arguments, dict) or not set(params) <= {"name", "arguments", "_meta"}:
            return None
        schema = tool_schema(name)
        if schema is None or not fits(schema, arguments):
            return None
        return lambda: self._result(name, arguments)

    def _result(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.loader.calling.set()
        if name != "status":  # status needs neither numpy nor the searcher
            self.loader.warm.wait()  # the loader has opened the corpus and the query path (or failed to)
        try:
            return results.answer(name, lambda: getattr(self.service, name)(**arguments))
        finally:
            self.loader.want_sdk.set()  # the first answer is out: the SDK may load now
