"""`ragx mcp` and bad input: every message gets an answer, and every answer is one clear line.

Raw JSON-RPC lines over a pipe (what a client that is not the Python SDK can send: JavaScript's
JSON.stringify writes half an emoji as a lone surrogate escape), the service on its own, and the tools'
arguments through the SDK's in-memory client.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest
from test_mcp import TEST_TOML, _code, _env, mcp_corpus

NOT_UNICODE = "not valid Unicode (character {} is a lone surrogate, e.g. half of an emoji)"


@pytest.fixture
def corpus(tmp_path):
    return mcp_corpus(tmp_path, n_per_topic=2)


def _initialize(ident=1, name="raw") -> bytes:
    return _line({"jsonrpc": "2.0", "id": ident, "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": name, "version": "0"}}})


def _line(message: dict) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _call(ident, tool: str, arguments: dict) -> bytes:
    return _line({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})


def _session(corpus, lines: list[tuple[bytes, bool]]) -> tuple[list[dict], str]:
    """Send raw `lines`, each (bytes, expects an answer); wait (at most 30 s) for each answer before the
    next line. Every stdout line parsed, and stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _code(corpus)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=os.environ | _env(),
    )
    received: queue.Queue[bytes] = queue.Queue()
    reader = threading.Thread(target=lambda: [received.put(line) for line in iter(proc.stdout.readline, b"")], daemon=True)
    reader.start()
    out: list[dict] = []
    try:
        for raw, answered in lines:
            proc.stdin.write(raw)
            proc.stdin.flush()
            if answered:
                try:
                    out.append(json.loads(received.get(timeout=30)))
                except queue.Empty:
                    pytest.fail(f"no answer to {raw!r}")
        proc.stdin.close()
        proc.wait(timeout=30)
        reader.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    while not received.empty():
        out.append(json.loads(received.get()))
    err = proc.stderr.read().decode()
    assert proc.returncode == 0, err
    return out, err


def _tool_error(answer: dict, ident) -> str:
    assert answer["id"] == ident and answer["result"]["isError"] is True, answer
    [content] = answer["result"]["content"]
    assert "\n" not in content["text"]
    return content["text"]


def test_lone_surrogates_and_bytes_that_are_not_utf8_get_a_tool_error_naming_the_argument(corpus):
    out, _ = _session(corpus, [
        (_initialize(), True),
        (_line({"jsonrpc": "2.0", "method": "notifications/initialized"}), False),
        # What JSON.stringify sends for "cats " + the first half of 😀 (json.dumps writes the same escape).
        (_call(2, "search", {"query": "cats \ud83d"}), True),
        (b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"inspect","arguments":{"what":"file","arg":"x\\udcff"}}}\n', True),
        (b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"index","arguments":{"path":"x\\udcff"}}}\n', True),
        (b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search","arguments":{"query":"sushi \xff"}}}\n', True),
        (_call(6, "status", {}), True),  # still serving
    ])
    assert out[0]["id"] == 1 and out[0]["result"]["serverInfo"]["name"] == "ragx"
    assert _tool_error(out[1], 2) == "invalid argument query: " + NOT_UNICODE.format(5)
    assert _tool_error(out[2], 3) == "invalid argument arg: " + NOT_UNICODE.format(1)
    assert _tool_error(out[3], 4) == "invalid argument path: " + NOT_UNICODE.format(1)
    assert _tool_error(out[4], 5) == "invalid argument query: not valid UTF-8 (character 6)"  # the CLI's words
    assert out[5]["id"] == 6 and out[5]["result"]["structuredContent"]["schema"] == "ragx.status.v1"
    assert len(out) == 6


def test_a_line_that_is_not_json_rpc_gets_a_json_rpc_error_and_serving_goes_on(corpus):
    out, err = _session(corpus, [
        (b"this is not json\n", True),  # the first line, before any handshake
        (_initialize(), True),
        (b"\n", False),  # a blank line is no message
        (b'{"jsonrpc":"2.0","id":2,"method":"tools/ca\n', True),
        (b'{"jsonrpc":"2.0","id":3,"method":7}\n', True),
        (b"[1, 2]\n", True),
        (b'{"jsonrpc":"2.0","id":4,"method":"ping"}\n', True),
    ])
    assert out[0] == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error: not valid JSON (Expecting value)"}}
    assert out[1]["id"] == 1 and out[1]["result"]["serverInfo"]["name"] == "ragx"
    assert out[2]["id"] is None and out[2]["error"]["code"] == -32700
    invalid = "Invalid Request: not a JSON-RPC 2.0 request, notification or response"
    assert out[3] == {"jsonrpc": "2.0", "id": 3, "error": {"code": -32600, "message": invalid}}
    assert out[4] == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": invalid}}
    assert out[5] == {"jsonrpc": "2.0", "id": 4, "result": {}}
    assert len(out) == 6 and "Traceback" not in err


def test_an_initialize_or_a_notification_with_a_lone_surrogate(corpus):
    """An initialize the SDK cannot read is not answered by the fast handshake either: invalid params,
    naming the string; a notification cannot be answered, so it goes on with U+FFFD (and a warning)."""
    out, err = _session(corpus, [
        (_initialize(name="claude \udfff"), True),
        (_initialize(ident=2), True),
        (_line({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"note": "\ud800"}}), False),
        (_call(3, "status", {}), True),
    ])
    assert out[0] == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32602, "message": "Invalid params: params.clientInfo.name is " + NOT_UNICODE.format(7)}}
    assert out[1]["id"] == 2 and out[1]["result"]["serverInfo"]["name"] == "ragx"
    assert out[2]["id"] == 3 and not out[2]["result"].get("isError")
    assert "notifications/initialized from the client holds text that is not valid Unicode" in err


def test_the_screen_decides_without_a_server():
    from ragx.mcp.stdio import INVALID_PARAMS, _screen

    good = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    assert _screen(good) == (good.decode(), None)
    assert _screen(b"  \r\n") == (None, None)
    # A key that is not valid Unicode, and a string deep inside an argument.
    _, answer = _screen(b'{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"search","arguments":{"q\\udcffx":1}}}')
    assert answer["result"]["content"][0]["text"] == "invalid argument name q\\udcffx: " + NOT_UNICODE.format(1)
    _, answer = _screen(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inspect","arguments":{"arg":["\\ud800"]}}}')
    assert answer["result"]["content"][0]["text"] == "invalid argument arg: " + NOT_UNICODE.format(0)
    _, answer = _screen(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"se\\ud800"}}')
    assert answer["error"] == {"code": INVALID_PARAMS, "message": "Invalid params: params.name is " + NOT_UNICODE.format(2)}
    # Bytes that are not UTF-8 outside any string: not JSON.
    _, answer = _screen(b'\xff{"jsonrpc":"2.0","id":1,"method":"ping"}')
    assert answer == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error: not valid UTF-8 (byte 0)"}}


# ---- the service, without MCP ------------------------------------------------------------------------
def test_the_service_refuses_text_that_is_not_unicode_with_the_cli_s_line(corpus, capsys):
    from ragx.cli.main import run
    from ragx.errors import UsageError
    from ragx.mcp.service import Service

    service = Service(corpus)
    with pytest.raises(UsageError) as refused:
        service.search("cats \ud83d")
    with pytest.raises(SystemExit) as exit_info:  # the CLI's own line for the same text
        run(["query", "cats \ud83d", "--root", str(corpus)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == f"ragx: error: {refused.value}\n" == "ragx: error: the query is not valid UTF-8 (character 5)\n"
    with pytest.raises(UsageError, match=r"^the index path is not valid UTF-8 \(character 1\)$"):
        service.index("x\udcff")
    with pytest.raises(UsageError, match=r"^the inspect argument is not valid UTF-8 \(character 1\)$"):
        service.inspect("file", "x\udcff")
    with pytest.raises(UsageError, match="^graph and no_graph contradict each other"):
        service.search("cats", graph=True, no_graph=True)
    service.close()


# ---- a corpus folder whose name is not UTF-8 --------------------------------------------------------
@pytest.fixture
def bad_root(tmp_path):
    root = os.fsencode(tmp_path) + b"/notes\xff"
    try:
        os.mkdir(root)
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    with open(root + b"/a.md", "w") as fh:
        fh.write("# Bread\n\nflour water yeast oven\n")
    with open(root + b"/ragx.toml", "w") as fh:
        fh.write(TEST_TOML)
    return root


def test_a_root_that_is_not_utf8_is_refused_at_start_up_in_one_line(bad_root):
    """It can be neither indexed nor searched (ragx.api): exit 2 with the API's line, not a crash while
    answering initialize."""
    proc = subprocess.run(
        [sys.executable, "-m", "ragx.cli.main", "mcp", "--root", bad_root], input=_initialize(),
        capture_output=True, env=os.environ | _env(), timeout=60,
    )
    shown = os.fsdecode(bad_root).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    assert proc.stdout == b""
    assert proc.stderr.decode() == f"ragx: error: the corpus path is not valid UTF-8: {shown} (rename the folder)\n"
    assert proc.returncode == 2


def test_text_json_cannot_carry_is_shown_escaped():
    """A path whose bytes are not UTF-8 in the instructions, a document or an error: shown as \\udcNN
    (as the CLI shows it), so the answer can still be sent."""
    from ragx.mcp import results, stdio

    text = stdio.initialize_result("2025-11-25", Path("/srv/notes\udcff"))["instructions"]
    assert "/srv/notes\\udcff by meaning" in text and text.encode("utf-8")
    ok = results.ok({"root": "/srv/notes\udcff", "files": ["a\udcff.md"], "n": 1})
    assert ok["structuredContent"] == {"root": "/srv/notes\\udcff", "files": ["a\\udcff.md"], "n": 1}
    assert json.loads(ok["content"][0]["text"]) == ok["structuredContent"]
    assert results.failed("no index in /srv/notes\udcff")["content"][0]["text"] == "no index in /srv/notes\\udcff"


# ---- the tools' arguments ---------------------------------------------------------------------------
def _client_calls(corpus, calls: list[tuple[str, dict]], *, index_first: bool = False) -> list:
    import fakes_registration  # noqa: F401 - the "test-hash" engine of the corpus's ragx.toml, in this process
    from mcp import Client

    from ragx.mcp.server import build_server
    from ragx.mcp.service import Service

    service = Service(corpus)
    if index_first:
        service.index()
    server = build_server(service)
    results: list = []

    async def scenario():
        async with Client(server) as c:
            for name, args in calls:
                results.append(await c.call_tool(name, args))

    try:
        anyio.run(scenario)
    finally:
        service.close()
    return results


def test_booleans_are_strict_and_graph_with_no_graph_is_refused(corpus):
    results = _client_calls(corpus, [
        ("search", {"query": "bread", "files_only": "yes"}),
        ("search", {"query": "bread", "files_only": 1}),
        ("search", {"query": "bread", "no_graph": "false"}),
        ("search", {"query": "bread", "graph": True, "no_graph": True}),
    ])
    assert all(r.is_error for r in results)
    texts = [r.content[0].text for r in results]
    assert texts[0] == "invalid argument files_only: Input should be a valid boolean (got 'yes')"
    assert texts[1] == "invalid argument files_only: Input should be a valid boolean (got 1)"
    assert texts[2] == "invalid argument no_graph: Input should be a valid boolean (got 'false')"
    assert texts[3] == "graph and no_graph contradict each other: give one of them (neither: the corpus's setting)"


def test_inspect_takes_what_inspect_args_takes(corpus):
    from ragx.inspect_args import ALIASES, TARGETS

    results = _client_calls(corpus, [
        ("inspect", {"what": "neighbours", "arg": 1}),
        ("inspect", {"what": "neighbors", "arg": 1}),
        ("inspect", {"what": "neighbour", "arg": 1}),
    ], index_first=True)
    british, american, wrong = results
    assert not british.is_error, british.content[0].text
    assert british.structured_content == american.structured_content
    assert british.structured_content["what"] == "neighbors"  # documents name the target as in TARGETS
    assert wrong.is_error and wrong.content[0].text.startswith("invalid argument what: Input should be 'chunk'")

    from ragx.mcp.server import build_server
    from ragx.mcp.service import Service

    service = Service(corpus)
    schema = build_server(service)._tool_manager.get_tool("inspect").parameters
    assert schema["properties"]["what"]["enum"] == [*TARGETS, *ALIASES]
    assert "neighbours is read as neighbors" in schema["properties"]["what"]["description"]
    service.close()
