"""`ragx models`: candidates from a model folder and a real local HTTP server; unreachable ones named."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cli_runner import call
from servers import free_port

from ragx.config import load_settings
from ragx.models import discover


class _Models(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"data": [{"id": "text-embedding-nomic-embed-text-v1.5"}, {"id": "qwen2.5-7b-instruct"}]}).encode()
        status = 200 if self.path == "/v1/models" else 404
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def nothing_on_the_usual_ports(monkeypatch, tmp_path):
    # The machine's own ports and caches must not decide the test: one closed port, no default folders.
    monkeypatch.setattr(discover, "USUAL_SERVERS", (("Closed", f"http://127.0.0.1:{free_port()}/v1"),))
    monkeypatch.setattr(discover, "default_search_folders", lambda: [])


def st_folder(base, name, embedded_files=True):
    folder = base / "models--org--" / name
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "modules.json").write_text("[]")
    (folder / "1_Pooling" / "config.json").write_text("{}")
    if embedded_files:
        for f in ("config.json", "model.safetensors", "tokenizer.json"):
            (folder / f).write_text("{}")
    return folder.resolve()


def test_lists_the_embedded_model_folders_and_served_models_and_says_what_it_could_not_reach(server, tmp_path, capsys):
    bert = st_folder(tmp_path, "bge-small")
    other = st_folder(tmp_path, "custom", embedded_files=False)
    code, out, err = call(capsys, "models", "--url", server, "--search", str(tmp_path), "--root", str(tmp_path), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "ragx.models.v1"
    ids = [c["id"] for c in doc["candidates"]]
    assert ids[0] == "embedded:all-MiniLM-L6-v2"
    assert f"embedded:{bert}" in ids and f"sentence-transformers:{other}" in ids
    served = {c["model"]: c for c in doc["candidates"] if c["engine"] == "openai"}
    assert served["text-embedding-nomic-embed-text-v1.5"]["embedding"] is True
    assert served["qwen2.5-7b-instruct"]["embedding"] is False
    assert len(doc["unreachable"]) == 1 and "refused" in doc["unreachable"][0]["reason"]
    assert doc["machine"]["cpus"] >= 1 and doc["recommended"]["id"] in ids


def test_use_writes_the_choice_into_ragx_toml_and_warns_about_full(server, tmp_path, capsys):
    (tmp_path / ".ragx").mkdir()
    (tmp_path / ".ragx" / "index.sqlite").write_bytes(b"")  # an index exists
    wanted = f"openai:text-embedding-nomic-embed-text-v1.5@{server}"
    code, _, err = call(capsys, "models", "--url", server, "--use", wanted, "--root", str(tmp_path))
    assert code == 0, err
    assert "index --full" in err
    emb = load_settings(tmp_path).embeddings
    assert (emb.engine, emb.model, emb.base_url) == ("openai", "text-embedding-nomic-embed-text-v1.5", server)
    code, _, err = call(capsys, "models", "--use", "99", "--root", str(tmp_path))
    assert code == 2 and "no candidate" in err


def test_recommendation_follows_the_machine():
    small = discover.Candidate("embedded:all-MiniLM-L6-v2", "embedded", "all-MiniLM-L6-v2", "package")
    served = discover.Candidate("openai:nomic-embed@x", "openai", "nomic-embed", "server", base_url="x")
    chat = discover.Candidate("openai:qwen@x", "openai", "qwen", "server", base_url="x", embedding=False)
    assert discover.recommend([small, served, chat], {"ram_gb": 8, "cpus": 2})["id"] == small.id
    assert discover.recommend([small, served, chat], {"ram_gb": 32, "cpus": 16})["id"] == served.id
    assert discover.recommend([chat], {"ram_gb": 32, "cpus": 16}) is None


@pytest.mark.parametrize(
    "args, words",
    [
        (["--search", "/nonexistent/models"], ("--search /nonexistent/models", "no such folder")),
        (["--url", "notaurl"], ("--url 'notaurl'", "http://host:port/v1")),
        (["--url", "localhost:1234/v1"], ("http://host:port/v1",)),
        (["--url", "http://localhost:port/v1"], ("http://host:port/v1",)),
    ],
)
def test_a_search_folder_or_url_that_cannot_be_one_is_a_usage_error(tmp_path, capsys, args, words):
    code, out, err = call(capsys, "models", *args, "--root", str(tmp_path))
    assert code == 2 and out == "" and err.startswith("ragx: error: ") and err.count("\n") == 1, err
    for w in words:
        assert w in err
    (tmp_path / "a-file").write_text("")
    code, _, err = call(capsys, "models", "--search", str(tmp_path / "a-file"), "--root", str(tmp_path))
    assert code == 2 and "not a folder" in err


def test_use_of_the_model_already_in_use_changes_nothing(server, tmp_path, capsys):
    (tmp_path / ".ragx").mkdir()
    (tmp_path / ".ragx" / "index.sqlite").write_bytes(b"")  # an index exists
    wanted = f"openai:text-embedding-nomic-embed-text-v1.5@{server}"
    code, _, err = call(capsys, "models", "--url", server, "--use", wanted, "--root", str(tmp_path))
    assert code == 0 and "index --full" in err, err
    before = (tmp_path / "ragx.toml").read_bytes()
    code, out, err = call(capsys, "models", "--url", server, "--use", wanted, "--root", str(tmp_path), "--json")
    assert code == 0, err
    assert "already in use" in err and "index --full" not in err
    assert json.loads(out)["written"] == {"file": str(tmp_path / "ragx.toml"), "settings": {}, "already_in_use": True}
    assert (tmp_path / "ragx.toml").read_bytes() == before


def test_use_of_the_default_model_writes_no_ragx_toml(tmp_path, capsys):
    code, _, err = call(capsys, "models", "--use", "embedded:all-MiniLM-L6-v2", "--root", str(tmp_path))
    assert code == 0 and "already in use" in err, err
    assert not (tmp_path / "ragx.toml").exists()


def _raw_server(answer):
    """A loopback TCP server that reads a request and answers with `answer(conn)`: no HTTP library, so
    it can be anything a usual port may hold (another protocol, a cut answer, a slow drip)."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                try:
                    answer(conn)
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    return listener, f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


def _drip(conn):
    import time

    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 100000\r\n\r\n")
    for _ in range(500):  # a byte every 0.1 s: each socket read is quick, the answer takes 50 s
        conn.sendall(b" ")
        time.sleep(0.1)


@pytest.mark.parametrize("answer, words", [
    (lambda c: c.sendall(b"SSH-2.0-OpenSSH_9.6\r\n"), "not reachable"),                                  # not HTTP
    (lambda c: c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 500\r\n\r\n{\"data\": ["), "did not answer JSON"),  # cut short
    (lambda c: c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 14\r\n\r\n{\"data\": null}"), "without a list of models"),
    (_drip, "no complete answer to GET /models within"),
])
def test_whatever_answers_on_a_port_is_listed_not_an_internal_error(tmp_path, capsys, answer, words):
    listener, url = _raw_server(answer)
    try:
        code, out, err = call(capsys, "models", "--url", url, "--root", str(tmp_path), "--json")
    finally:
        listener.close()
    assert code == 0, err
    reasons = {u["what"]: u["reason"] for u in json.loads(out)["unreachable"]}
    assert words in reasons[f"--url ({url})"]
