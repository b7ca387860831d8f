"""The fast path of `ragx mcp` (ragx.mcp.fast) against the official SDK, the protocol's reference.

Every answer the fast path gives is compared with the SDK's own answer to the same request, from a
server the SDK runs in-process (ragx.mcp.reference): the static answers (tools/list with every tool's
schema as the SDK generates it, prompts/list, resources/list, ...) for every protocol version the SDK
accepts, and tool calls of every tool it serves, results and errors alike. What it leaves to the SDK
(other methods, arguments that do not fit) is handed over with the handshake, and a real SDK client
sees one session.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest
from test_mcp import _code, _env, call, connect, mcp_corpus, run_async

from ragx.mcp import fast, reference
from ragx.mcp.stdio import HANDSHAKE_VERSIONS


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    import fakes_registration  # noqa: F401 - the "test-hash" engine of the corpus's ragx.toml, in this process

    from ragx.mcp.service import Service

    root = mcp_corpus(tmp_path_factory.mktemp("fast"))
    service = Service(root)
    service.index()
    service.close()
    return root


class _Wire:
    """The client's lines to read, and what the fast path sends, as a client would parse it."""

    def __init__(self, lines: list[bytes]):
        self.reader = io.BytesIO(b"".join(lines))
        self.sent: list[dict] = []

    def send(self, message: dict) -> None:
        self.sent.append(json.loads(json.dumps(message, ensure_ascii=False)))


class _Loaded:
    """A loader whose search path is loaded and whose SDK never is: the fast path answers all it can."""

    def __init__(self):
        self.warm, self.want_sdk, self.calling = threading.Event(), threading.Event(), threading.Event()
        self.warm.set()
        self.done = False


def _raw(messages: list[dict]) -> list[bytes]:
    return [json.dumps(m).encode() + b"\n" for m in messages]


def _both(root: Path, requests: list[dict], version: str = "2025-11-25") -> tuple[dict, dict, list[bytes] | None]:
    """(fast answers by id, SDK answers by id, the lines the fast path left to the SDK) for one session."""
    import fakes_registration  # noqa: F401

    from ragx.mcp.service import Service

    lines = _raw([*reference.handshake(version), *requests])
    service = Service(root)
    try:
        wire = _Wire(lines)
        front = fast.Front(wire, service, _Loaded())
        handed = front.serve()
        sdk = reference.sdk_answers(service, [*reference.handshake(version), *requests])
    finally:
        service.close()
    return {m["id"]: m for m in wire.sent}, {m["id"]: m for m in sdk}, handed


def _call(ident: int, tool: str, arguments: dict) -> dict:
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_static_answers_are_the_sdks_for_every_protocol_version(version):
    """static.json is what the SDK answers today (else: `python -m ragx.mcp.reference` rewrites it)."""
    assert reference.static_answers(version) == fast.static()


def test_every_tool_s_schema_served_is_the_one_the_sdk_generates(tmp_path):
    from mcp.types import ListToolsResult

    from ragx.mcp.server import build_server
    from ragx.mcp.service import Service

    service = Service(tmp_path)
    tools = anyio.run(build_server(service).list_tools)
    service.close()
    served = ListToolsResult.model_validate(fast.static()["tools/list"]).tools
    assert [t.name for t in served] == [t.name for t in tools] == ["search", "index", "status", "inspect"]
    for mine, sdk in zip(served, tools):
        assert mine.input_schema == sdk.input_schema and mine.output_schema == sdk.output_schema
        assert mine.description == sdk.description and mine.annotations == sdk.annotations


def test_fast_answers_equal_the_sdk_answers_for_every_tool_it_serves(indexed):
    requests = [
        {"jsonrpc": "2.0", "id": "list", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "id": 3, "method": "prompts/list", "params": {}},
        {"jsonrpc": "2.0", "id": 4, "method": "resources/list"},
        {"jsonrpc": "2.0", "id": 5, "method": "resources/templates/list"},
        _call(6, "search", {"query": "telescope orbit"}),
        _call(7, "search", {"query": "bread dough", "top": 2, "files_only": True, "explain": True, "no_lexical": True}),
        _call(8, "search", {"query": "telescope", "graph": True, "top": None, "no_evidence_check": True}),
        _call(9, "status", {}),
        _call(10, "inspect", {"what": "chunk", "arg": 1}),
        _call(11, "inspect", {"what": "neighbours", "arg": 1}),
        _call(12, "inspect", {"what": "communities"}),
        _call(13, "inspect", {"what": "file", "arg": "no/such/file.md"}),
        # errors: one line each, the same line the SDK's server gives
        _call(14, "search", {"query": "   "}),
        _call(15, "search", {"query": "bread", "graph": True, "no_graph": True}),
        _call(16, "inspect", {"what": "chunk", "arg": 10**9}),
    ]
    mine, sdk, handed = _both(indexed, requests)
    assert handed is None  # all answered here; the client then closed
    assert sorted(mine, key=str) == sorted(sdk, key=str) == sorted([0, *(r["id"] for r in requests)], key=str)
    for ident in mine:
        assert mine[ident] == sdk[ident], ident
    assert mine[6]["result"]["structuredContent"]["results"]
    for ident in (13, 14, 15, 16):
        result = mine[ident]["result"]
        assert result["isError"] is True and len(result["content"]) == 1 and "\n" not in result["content"][0]["text"]


def _after_the_handover(root: Path, requests: list[dict]) -> tuple[dict, list[str]]:
    """The answers of a session the SDK serves (`stdio._Replay` with the fast path asked first, as
    `ragx mcp` runs it once the SDK has loaded) by id, and the methods of the lines that reached the SDK."""
    import fakes_registration  # noqa: F401
    from mcp.server.stdio import stdio_server

    from ragx.mcp.server import build_server
    from ragx.mcp.service import Service
    from ragx.mcp.stdio import _Out, _Replay

    service = Service(root)
    server = build_server(service)
    front = fast.Front(None, service, _Loaded())
    written: list[str] = []
    pending = _raw(requests)
    expected = sum(1 for r in requests if "id" in r)

    class Sink:
        async def write(self, text: str) -> None:
            written.append(text)

        async def flush(self) -> None:
            pass

    class Rest:  # one line at a time, each after the last answer (as an agent sends them); then the end
        async def readline(self) -> bytes:
            while sum(1 for w in written if '"result"' in w or '"error"' in w) < 1 + expected - len(pending):
                await anyio.sleep(0.002)
            return pending.pop(0) if pending else b""

    class Seen(_Replay):
        seen: list[str] = []

        async def __anext__(self) -> str:
            text = await super().__anext__()
            self.seen.append(json.loads(text).get("method"))
            return text

    async def run() -> None:  # as stdio._run_sdk runs it
        lowlevel = server._lowlevel_server
        out = _Out(Sink())
        async with anyio.create_task_group() as answering:
            replay = Seen(_raw(reference.handshake()), Rest(), out, front.answering_line, answering.start_soon)
            async with stdio_server(stdin=replay, stdout=out) as (read, write):  # type: ignore[arg-type]
                with anyio.fail_after(60):
                    await lowlevel.run(read, write, lowlevel.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        service.close()
    return {m["id"]: m for m in map(json.loads, written) if "id" in m}, Seen.seen


def test_after_the_handover_the_fast_path_still_answers_what_it_can_as_the_sdk_does(indexed):
    """Once the SDK serves the session, the read-only tool calls and the static requests are still
    answered by the fast path (without the SDK's machinery), each answer equal to the SDK's own."""
    requests = [
        _call(1, "search", {"query": "telescope", "colour": "red"}),  # the SDK's: it words the error
        {"jsonrpc": "2.0", "id": "list", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        _call(3, "search", {"query": "telescope orbit"}),
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},  # a notification: the SDK's
        _call(4, "search", {"query": "bread dough", "top": 2, "files_only": True, "explain": True}),
        _call(5, "status", {}),
        _call(6, "inspect", {"what": "chunk", "arg": 1}),
        _call(7, "inspect", {"what": "communities"}),
        _call(8, "search", {"query": "   "}),  # errors: one line each, the SDK's line
        _call(9, "inspect", {"what": "chunk", "arg": 10**9}),
        _call(10, "search", {"query": "x", "top": 0}),  # does not fit: the SDK's
    ]
    mine, reached_sdk = _after_the_handover(indexed, requests)
    service = _service(indexed)
    try:
        sdk = {m["id"]: m for m in reference.sdk_answers(service, [*reference.handshake(), *requests]) if "id" in m}
    finally:
        service.close()
    assert sorted(mine, key=str) == sorted(sdk, key=str) == sorted([0, *(r["id"] for r in requests if "id" in r)], key=str)
    for ident in mine:
        assert mine[ident] == sdk[ident], ident
    assert reached_sdk == ["initialize", "notifications/initialized", "tools/call", "notifications/cancelled", "tools/call"]
    assert mine[3]["result"]["structuredContent"]["results"] and mine[1]["result"]["isError"] is True
    for ident in (8, 9, 10):
        result = mine[ident]["result"]
        assert result["isError"] is True and len(result["content"]) == 1 and "\n" not in result["content"][0]["text"]


def _service(root: Path):
    import fakes_registration  # noqa: F401

    from ragx.mcp.service import Service

    return Service(root)


def test_errors_of_a_corpus_without_an_index_are_the_sdks(tmp_path):
    root = mcp_corpus(tmp_path)
    mine, sdk, _ = _both(root, [_call(1, "search", {"query": "x"}), _call(2, "status", {}), _call(3, "inspect", {"what": "communities"})],
                         version="2024-11-05")
    assert mine == sdk
    assert mine[1]["result"]["content"][0]["text"] == f"no index in {root}: run `ragx index`"


@pytest.mark.parametrize("request_", [
    _call(1, "index", {}),  # reports progress through the SDK's request context
    _call(1, "search", {"query": "x", "top": 0}),  # does not fit: the SDK words the error
    _call(1, "search", {"query": "x", "files_only": 1}),
    _call(1, "search", {"query": "x", "colour": "red"}),
    _call(1, "search", {}),
    _call(1, "inspect", {"what": "neighbour"}),
    _call(1, "status", {"x": True}),
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "status"}},
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": "abc"}},
    {"jsonrpc": "2.0", "id": 1, "method": "completion/complete", "params": {}},
    {"jsonrpc": "2.0", "id": {"an": "object"}, "method": "ping"},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}},
    _call(1, "search", {"query": "half an emoji \ud83d"}),
])
def test_what_the_fast_path_does_not_answer_goes_to_the_sdk_with_the_handshake(tmp_path, request_):
    from ragx.mcp.service import Service

    lines = _raw([*reference.handshake(), {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, request_])
    service = Service(tmp_path)
    wire = _Wire(lines)
    handed = fast.Front(wire, service, _Loaded()).serve()
    service.close()
    assert [m["id"] for m in wire.sent] == [0, 7]
    assert handed == [lines[0], lines[1], lines[3]]


def test_nothing_but_notifications_initialized_before_it(tmp_path):
    from ragx.mcp.service import Service

    lines = _raw([reference.handshake()[0], {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}])
    service = Service(tmp_path)
    wire = _Wire(lines)
    assert fast.Front(wire, service, _Loaded()).serve() == lines
    service.close()
    assert [m["id"] for m in wire.sent] == [0]


def test_the_fast_path_loads_no_sdk():
    code = "import sys, ragx.mcp.fast, ragx.mcp.results, ragx.mcp.service; print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'pydantic', 'anyio')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ | _env(), check=True)
    assert done.stdout.strip() == "[]"


def test_one_session_through_the_fast_path_then_the_sdk(tmp_path):
    """A real SDK client: the first search is answered before the SDK loads, a call it cannot answer
    hands the session to the SDK, and the same search then gets the same document in the SDK's session."""
    root = mcp_corpus(tmp_path)

    async def scenario():
        async with connect(root, tmp_path) as s:
            assert (await call(s, "index"))["new"] > 0  # the SDK's (progress context)
        async with connect(root, tmp_path) as s:
            assert [t.name for t in (await s.list_tools()).tools] == ["search", "index", "status", "inspect"]
            first = await call(s, "search", {"query": "telescope orbit", "top": 3})
            refused = await s.call_tool("search", {"query": "x", "colour": "red"})
            assert refused.is_error and refused.content[0].text == "unknown argument colour for search (accepted: " + \
                "explain, files_only, graph, no_evidence_check, no_expand, no_graph, no_lexical, no_rerank, query, top)"
            again = await call(s, "search", {"query": "telescope orbit", "top": 3})
            assert again == first and first["results"]

    run_async(scenario)


def test_a_raw_session_in_a_subprocess_answers_each_request_once(tmp_path):
    """Requests sent one by one, each after the last answer: the fast path's, then the SDK's after `index`."""
    from test_mcp_handshake import _session

    root = mcp_corpus(tmp_path)
    answers = _session(root, [*reference.handshake(), {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                              _call(2, "status", {}), {"jsonrpc": "2.0", "id": 3, "method": "ping"}, _call(4, "index", {}),
                              _call(5, "status", {}), {"jsonrpc": "2.0", "id": 6, "method": "tools/list"}])
    by_id = {a["id"]: a for a in answers if "id" in a}
    assert [a["id"] for a in answers if "id" in a] == [0, 1, 2, 3, 4, 5, 6]
    assert by_id[2]["result"]["structuredContent"]["drift"]["new"] > 0
    assert by_id[4]["result"]["structuredContent"]["new"] == by_id[2]["result"]["structuredContent"]["drift"]["new"]
    assert by_id[5]["result"]["structuredContent"]["drift"]["new"] == 0
    assert by_id[6]["result"] == by_id[1]["result"] == fast.static()["tools/list"]  # the fast path's (1), then the SDK's (6)


def test_the_tool_list_and_a_first_search_need_no_sdk(tmp_path):
    """A server whose SDK cannot even be imported still lists its tools and answers a first search."""
    root = mcp_corpus(tmp_path)
    import fakes_registration  # noqa: F401

    from ragx.mcp.service import Service

    service = Service(root)
    service.index()
    service.close()
    prelude = ("import sys\nsys.modules['mcp'] = None  # `import mcp` raises ImportError\nimport fakes_registration\n"
               "import ragx.mcp.stdio\nragx.mcp.stdio.SDK_AFTER = 600  # however slow the machine, no idle-time load first\n")
    lines = _raw([*reference.handshake(), {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, _call(2, "search", {"query": "telescope orbit"})])
    proc = subprocess.Popen([sys.executable, "-c", _code(root, prelude=prelude)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=os.environ | _env())
    answers = []
    for line in lines:
        proc.stdin.write(line)
        proc.stdin.flush()
        if b'"id"' in line:
            answers.append(json.loads(proc.stdout.readline()))
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    assert [a["id"] for a in answers] == [0, 1, 2]
    assert answers[1]["result"] == fast.static()["tools/list"]
    assert answers[2]["result"]["structuredContent"]["results"] and not answers[2]["result"]["isError"]


def test_requests_sent_at_once_after_the_handover_each_get_one_answer_also_after_the_client_closes(tmp_path):
    """The fast path's answers in the SDK's session run as tasks while the next line is read: requests
    a client sends without waiting are each answered once, those still running when stdin closes too."""
    root = mcp_corpus(tmp_path)
    searches = [_call(10 + i, "search", {"query": q, "top": 2}) for i, q in enumerate(["telescope orbit", "bread dough", "rain"] * 2)]
    lines = _raw([*reference.handshake(), _call(1, "index", {}), *searches, _call(20, "status", {}), {"jsonrpc": "2.0", "id": 21, "method": "ping"}])
    proc = subprocess.Popen([sys.executable, "-c", _code(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=os.environ | _env())
    proc.stdin.write(b"".join(lines[:3]))  # the handshake and index (the SDK's): answered before the rest is sent
    proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
    proc.stdin.write(b"".join(lines[3:]))
    proc.stdin.close()
    answers += [json.loads(line) for line in proc.stdout.read().splitlines()]
    assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    assert sorted(a["id"] for a in answers) == [0, 1, *range(10, 16), 20, 21]
    by_id = {a["id"]: a["result"] for a in answers}
    assert by_id[10] == by_id[13] and by_id[10]["structuredContent"]["results"] and by_id[21] == {}
    assert by_id[20]["structuredContent"]["drift"]["new"] == 0
