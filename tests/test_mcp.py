"""`ragx mcp`: a real MCP client (the SDK's ClientSession over stdio) against the server subprocess.

The server runs on the fast "test-hash" engine (tests/fakes_registration.py registers it in the
subprocess; the corpus's ragx.toml selects it). One test, marked `model`, uses the embedded model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from fakes import TOPICS, make_corpus
from mcp import ClientSession, StdioServerParameters, stdio_client

TESTS = Path(__file__).resolve().parent
HEAVY = ("torch", "transformers", "sentence_transformers", "onnxruntime")
TEST_TOML = '[embeddings]\nengine = "test-hash"\n'
FAKE = "import fakes_registration\n"
N_FILES = 3 * len(TOPICS) + 1  # what make_corpus(n_per_topic=3) writes (ragx.toml may count too)


def _env() -> dict[str, str]:
    """What the server needs beyond the SDK's minimal default environment (no ~/.ragxrc of the developer)."""
    env = {"PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    for key in ("RAGX_RC", "RAGX_CACHE_DIR", "XDG_CACHE_HOME"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def _code(root: Path, *, prelude: str = FAKE) -> str:
    return prelude + f"from ragx.cli.main import run\nrun(['mcp', '--root', {str(root)!r}])\n"


@asynccontextmanager
async def connect(root: Path, tmp_path: Path, *, prelude: str = FAKE, args: list[str] | None = None):
    """An initialised ClientSession to `ragx mcp --root root` (server stderr goes to tmp_path/server.err)."""
    params = StdioServerParameters(command=sys.executable, args=args or ["-c", _code(root, prelude=prelude)], env=_env())
    with open(tmp_path / "server.err", "a") as errlog, anyio.fail_after(60):
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                session.init_result = init
                yield session


def run_async(fn) -> None:
    anyio.run(fn)


async def call(session, name: str, args: dict | None = None) -> dict:
    """A successful call's document; checks the text content is the same JSON as the structured content."""
    res = await session.call_tool(name, args or {})
    assert not res.is_error, res.content[0].text
    doc = res.structured_content
    assert json.loads(res.content[0].text) == doc
    return doc


async def fail(session, name: str, args: dict | None = None) -> str:
    """A failed call's one-line message."""
    res = await session.call_tool(name, args or {})
    assert res.is_error, res.structured_content
    text = res.content[0].text
    assert text and "\n" not in text, text
    return text


def mcp_corpus(tmp_path: Path, n_per_topic: int = 3) -> Path:
    """A make_corpus folder whose ragx.toml picks the hash fake (the server runs in a subprocess)."""
    root = tmp_path / "corpus"
    root.mkdir()
    make_corpus(root, n_per_topic=n_per_topic)
    (root / "ragx.toml").write_text(TEST_TOML)
    return root


@pytest.fixture
def corpus(tmp_path):
    return mcp_corpus(tmp_path)


@pytest.fixture
def indexed(corpus, tmp_path):
    async def scenario():
        async with connect(corpus, tmp_path) as s:
            assert (await call(s, "index"))["new"] >= N_FILES

    run_async(scenario)
    return corpus


def test_lists_four_tools_with_schemas_and_annotations(corpus, tmp_path):
    async def scenario():
        async with connect(corpus, tmp_path) as s:
            assert s.init_result.server_info.name == "ragx"
            assert str(corpus) in s.init_result.instructions
            tools = {t.name: t for t in (await s.list_tools()).tools}
        assert set(tools) == {"search", "index", "status", "inspect"}
        for t in tools.values():
            assert len(t.description) > 80 and t.annotations.title
            assert t.annotations.open_world_hint is False and t.annotations.destructive_hint is False
            assert t.output_schema["type"] == "object"
        for name in ("search", "status", "inspect"):
            assert tools[name].annotations.read_only_hint is True and tools[name].annotations.idempotent_hint is True
        assert tools["index"].annotations.read_only_hint is False and tools["index"].annotations.idempotent_hint is True

        search = tools["search"].input_schema
        assert search["required"] == ["query"] and search["properties"]["query"]["type"] == "string"
        top = search["properties"]["top"]["anyOf"]
        assert {"type": "integer", "minimum": 1} in top and {"type": "null"} in top
        for flag in ("files_only", "explain", "no_graph", "no_lexical", "no_rerank", "no_expand", "no_evidence_check"):
            assert search["properties"][flag]["type"] == "boolean" and search["properties"][flag]["default"] is False
        assert set(tools["index"].input_schema["properties"]) == {"path"}  # the progress context is not an argument
        assert tools["status"].input_schema.get("properties", {}) == {}
        inspect = tools["inspect"].input_schema
        assert inspect["required"] == ["what"]
        assert inspect["properties"]["what"]["enum"] == ["chunk", "file", "neighbors", "communities", "community", "neighbours"]

    run_async(scenario)


def _check_locations(root: Path, results: list[dict]) -> None:
    for r in results:
        lines = (root / r["file"]).read_text().splitlines()
        assert 1 <= r["line_start"] <= r["line_end"] <= len(lines)
        assert "\n".join(lines[r["line_start"] - 1 : r["line_end"]]).startswith(r["text"][:80])


def test_index_status_search_and_an_edit(corpus, tmp_path):
    async def scenario():
        async with connect(corpus, tmp_path) as s:
            st = await call(s, "status")
            assert st["schema"] == "ragx.status.v1" and st["indexed"] is False and st["drift"]["new"] >= N_FILES

            rep = await call(s, "index")
            assert rep["schema"] == "ragx.index.v1" and rep["new"] == st["drift"]["new"] and rep["chunks"] > 0

            st = await call(s, "status")
            assert st["indexed"] and st["consistent"] and st["model"] == "test:hash-64"
            assert st["drift"] == {"new": 0, "changed": 0, "deleted": 0, "unreadable": 0}

            doc = await call(s, "search", {"query": "bake bread in the oven with butter", "top": 3})
            assert doc["schema"] == "ragx.query.v1" and len(doc["results"]) == 3
            assert doc["results"][0]["file"].startswith("cooking-")
            _check_locations(corpus, doc["results"])
            generation = doc["generation"]

            files = await call(s, "search", {"query": "boat sail harbour", "files_only": True, "explain": True, "no_graph": True})
            assert files["schema"] == "ragx.files.v1" and files["results"][0]["file"].startswith("sailing-")
            best = files["results"][0]["best_chunk"]
            assert best["line_start"] <= best["line_end"] and files["results"][0]["path"]

            # Edit one file: status sees the drift, a path-limited index picks it up, search finds it.
            target = corpus / "sailing-1.md"
            target.write_text(target.read_text() + "\n## Zeppelin\n\nzeppelin zeppelin airship hangar zeppelin\n")
            assert (await call(s, "status"))["drift"]["changed"] == 1
            rep = await call(s, "index", {"path": "sailing-1.md"})
            assert rep["changed"] == 1 and rep["embedded_files"] == ["sailing-1.md"]
            assert (await call(s, "status"))["drift"] == {"new": 0, "changed": 0, "deleted": 0, "unreadable": 0}
            doc = await call(s, "search", {"query": "zeppelin airship", "top": 1})
            assert doc["generation"] > generation
            assert doc["results"][0]["file"] == "sailing-1.md" and "zeppelin" in doc["results"][0]["text"]
            _check_locations(corpus, doc["results"])

    run_async(scenario)


def test_errors_are_one_line_tool_errors_and_the_server_keeps_serving(indexed, tmp_path, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# secret\n")
    (indexed / "escape").symlink_to(outside)

    async def scenario():
        async with connect(indexed, tmp_path) as s:
            messages = {}
            assert "outside the corpus root" in await fail(s, "index", {"path": str(outside)})
            assert "outside the corpus root" in await fail(s, "index", {"path": "../outside"})
            assert "outside the corpus root" in await fail(s, "index", {"path": "escape/secret.md"})  # resolved
            assert (await call(s, "status"))["indexed"]  # still serving

            assert await fail(s, "search", {"query": "x", "top": "many"}) == (
                "invalid argument top: Input should be a valid integer (got 'many')"
            )
            assert "invalid argument top" in await fail(s, "search", {"query": "x", "top": True})  # not 1
            assert await fail(s, "search", {}) == "missing argument query"
            assert "invalid argument top" in await fail(s, "search", {"query": "x", "top": 0})
            assert await fail(s, "search", {"query": "   "}) == "empty query"
            assert (await fail(s, "search", {"query": "x", "k": 3})).startswith("unknown argument k for search")
            assert (await call(s, "search", {"query": "telescope", "top": 1}))["results"]  # still serving

            messages["chunk"] = await fail(s, "inspect", {"what": "chunk", "arg": 999999})
            messages["file"] = await fail(s, "inspect", {"what": "file", "arg": "../outside/secret.md"})
            assert "invalid argument what" in await fail(s, "inspect", {"what": "bogus"})
            assert "invalid argument arg" in await fail(s, "inspect", {"what": "chunk", "arg": True})  # not chunk 1
            # ids beyond SQLite's integers and digits that are not ASCII: the CLI's one line, not an internal error
            assert await fail(s, "inspect", {"what": "chunk", "arg": 10**30}) == f"no chunk {10**30} in the index (ids are at most {2**63 - 1})"
            assert "a whole number" in await fail(s, "inspect", {"what": "neighbors", "arg": "²"})
            one = await call(s, "inspect", {"what": "chunk", "arg": 1})
            assert one["schema"] == "ragx.inspect.v1" and one["what"] == "chunk" and one["chunk_id"] == 1
            return messages

    messages = anyio.run(scenario)
    # The same one line the CLI prints after "ragx: error: ".
    from ragx.cli.main import run

    for what, arg in (("chunk", "999999"), ("file", "../outside/secret.md")):
        with pytest.raises(SystemExit) as exit_info:
            run(["inspect", what, arg, "--root", str(indexed)])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err == f"ragx: error: {messages[what]}\n"


def test_a_broken_config_or_a_rebuilt_index_is_followed(indexed, tmp_path):
    async def scenario():
        async with connect(indexed, tmp_path) as s:
            before = await call(s, "search", {"query": "comet", "top": 1})
            (indexed / "ragx.toml").write_text("[embeddings\n")
            assert "malformed TOML" in await fail(s, "status")
            assert "malformed TOML" in await fail(s, "search", {"query": "comet"})
            (indexed / "ragx.toml").write_text(TEST_TOML + "\n")
            assert (await call(s, "status"))["consistent"]
            assert (await call(s, "search", {"query": "comet", "top": 1}))["results"] == before["results"]

            # The index deleted under the server (its searcher holds the old database open), then rebuilt.
            shutil.rmtree(indexed / ".ragx")
            assert (await call(s, "status"))["indexed"] is False
            assert (await fail(s, "search", {"query": "comet"})).startswith("no index in")
            assert (await call(s, "index"))["new"] >= N_FILES
            after = await call(s, "search", {"query": "comet", "top": 1})
            assert after["generation"] == 1 and after["results"][0]["file"] == before["results"][0]["file"]

    run_async(scenario)


def test_an_unexpected_exception_is_a_tool_error_and_serving_goes_on(corpus, monkeypatch):
    """In process, over the SDK's in-memory transport: a crash inside a tool is reported, not fatal."""
    from mcp import Client

    from ragx.mcp.server import build_server
    from ragx.mcp.service import Service

    service = Service(corpus)
    server = build_server(service)

    def boom():
        raise RuntimeError("kaboom\nsecond line")

    async def scenario():
        async with Client(server) as c:
            with monkeypatch.context() as m:
                m.setattr(service, "status", boom)
                res = await c.call_tool("status", {})
            assert res.is_error and res.content[0].text == "internal error in status: RuntimeError: kaboom"
            res = await c.call_tool("status", {})
            assert not res.is_error and res.structured_content["drift"]["new"] >= N_FILES

    run_async(scenario)


NOISY = FAKE + textwrap.dedent("""\
    import os
    from fakes import HashEmbedder
    from ragx.models.registry import register_engine

    class Noisy(HashEmbedder):
        def embed_documents(self, texts, batch_size=32, progress=None):
            print("noise from print")
            os.write(1, b"noise on fd 1\\n")
            return super().embed_documents(texts, batch_size, progress)

        def embed_query(self, text):
            print("noise from print")
            os.write(1, b"noise on fd 1\\n")
            return super().embed_query(text)

    register_engine("test-hash", lambda model, **opts: Noisy())
""")


def test_stdout_carries_only_protocol_messages(corpus):
    """Raw JSON-RPC over a pipe, with an engine that prints to stdout and writes to fd 1 directly."""
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    def msg(i, method, params=None):
        m = {"jsonrpc": "2.0", "method": method, **({"id": i} if i is not None else {})}
        return json.dumps(m | ({"params": params} if params is not None else {})) + "\n"

    requests = [
        msg(1, "initialize", {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                              "clientInfo": {"name": "raw", "version": "0"}}),
        msg(None, "notifications/initialized"),
        msg(2, "tools/call", {"name": "index", "arguments": {}, "_meta": {"progressToken": "p"}}),
        msg(3, "tools/call", {"name": "search", "arguments": {"query": "comet telescope"}}),
        msg(4, "tools/call", {"name": "search", "arguments": {"query": 5}}),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-c", _code(corpus, prelude=NOISY)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=os.environ | _env(), text=True,
    )
    # One request at a time (each answer before the next request), then EOF: the server exits 0.
    answers, lines = {}, []
    for request in requests:
        proc.stdin.write(request)
        proc.stdin.flush()
        wanted = json.loads(request).get("id")
        while wanted is not None and wanted not in answers:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            lines.append(line)
            message = json.loads(line)  # every line on stdout is a JSON-RPC message
            assert message["jsonrpc"] == "2.0"
            if "id" in message:
                answers[message["id"]] = message
    proc.stdin.close()
    rest, err = proc.stdout.read(), proc.stderr.read()
    proc.wait(timeout=30)
    assert proc.returncode == 0 and rest == ""
    assert "noise from print" in err and "noise on fd 1" in err
    assert not answers[2]["result"].get("isError") and answers[2]["result"]["structuredContent"]["new"] >= N_FILES
    assert any(json.loads(line).get("method") == "notifications/progress" for line in lines)
    assert answers[3]["result"]["structuredContent"]["results"]
    assert answers[4]["result"]["isError"] and "invalid argument query" in answers[4]["result"]["content"][0]["text"]


def test_handshake_and_status_load_no_model_library(indexed, tmp_path):
    """The plain CLI entry point (no test engine registered): initialize + status import none of HEAVY."""
    report = tmp_path / "modules.json"
    prelude = textwrap.dedent(f"""\
        import atexit, json, sys
        def _dump():
            with open({str(report)!r}, "w") as fh:
                json.dump(sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r} or m == "ragx.models.embedded"), fh)
        atexit.register(_dump)
    """)

    async def scenario():
        async with connect(indexed, tmp_path, prelude=prelude) as s:
            st = await call(s, "status")
            assert st["indexed"] and st["drift"]["new"] == 0

    run_async(scenario)
    assert json.loads(report.read_text()) == []


@pytest.mark.model
def test_real_embedded_model_search(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "bread.md").write_text("# Baking bread\n\nMix flour, water, salt and yeast. Knead the dough, let it rise, bake it in a hot oven.\n")
    (root / "sailing.md").write_text("# Sailing\n\nTrim the sails to the wind, keep the boat balanced, drop the anchor in the harbour.\n")
    (root / "stars.md").write_text("# Stargazing\n\nA telescope shows the rings of Saturn and distant galaxies on a clear night.\n")

    async def scenario():
        args = ["-m", "ragx.cli.main", "mcp", "--root", str(root)]
        async with connect(root, tmp_path, args=args) as s:
            rep = await call(s, "index")
            assert rep["new"] == 3
            doc = await call(s, "search", {"query": "how do I make a loaf of bread?", "top": 2})
            assert doc["results"][0]["file"] == "bread.md" and doc["results"][0]["line_start"] == 1
            doc = await call(s, "search", {"query": "looking at planets through a lens", "files_only": True})
            assert doc["results"][0]["file"] == "stars.md"
            assert (await call(s, "status"))["model"]

    run_async(scenario)


@pytest.mark.parametrize("where", ["filesystem root", "home"])
def test_started_outside_any_corpus_in_root_or_home_it_refuses_to_scan(where, tmp_path, monkeypatch):
    """Agent clients often start servers in / or ~: no call may scan or index that by accident."""
    from ragx.errors import UsageError
    from ragx.mcp.service import Service

    if where == "home":
        monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir("/" if where == "filesystem root" else tmp_path)
    service = Service()
    assert not service.marked and service.refusal and "pass --root DIR" in service.refusal
    for call_it in (service.status, lambda: service.index(), lambda: service.search("x"), lambda: service.inspect("communities")):
        with pytest.raises(UsageError, match="no corpus: ragx mcp was started in"):
            call_it()
    monkeypatch.chdir(tmp_path)
    assert Service(tmp_path).refusal is None  # an explicit --root is always served


def test_a_search_answers_while_the_server_s_own_index_run_is_in_progress(indexed, monkeypatch):
    """The index tool no longer holds the searcher's lock: a search during a (long) index run answers
    from the committed generation at once, and the next search after it sees the new file."""
    import threading

    import fakes_registration  # noqa: F401 - the "test-hash" engine of the corpus's ragx.toml, in this process

    from ragx.api import Corpus
    from ragx.mcp.service import Service

    service = Service(indexed)
    assert service.search("telescope orbit")["results"]
    started, release = threading.Event(), threading.Event()
    real_index = Corpus.index

    def slow_index(self, **kwargs):
        started.set()
        assert release.wait(30), "the test never released the index run"
        return real_index(self, **kwargs)

    monkeypatch.setattr(Corpus, "index", slow_index)
    (indexed / "harbour.md").write_text("# Harbour\n\nkeel mast harbour tide anchor rope\n")
    done: dict = {}
    runner = threading.Thread(target=lambda: done.update(service.index()))
    runner.start()
    try:
        assert started.wait(30)
        answered = threading.Event()
        found: dict = {}
        searcher = threading.Thread(target=lambda: (found.update(service.search("keel mast harbour")), answered.set()))
        searcher.start()
        assert answered.wait(20), "a search waited for the index run"
        assert "harbour.md" not in {r["file"] for r in found["results"]}  # the generation committed before the run
    finally:
        release.set()
        runner.join(60)
    assert done["new"] == 1
    assert "harbour.md" in {r["file"] for r in service.search("keel mast harbour")["results"]}
    service.close()
