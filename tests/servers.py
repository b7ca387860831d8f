"""Real OpenAI-compatible HTTP servers on 127.0.0.1 for the provider tests (no mocks of the client).

`FakeOpenAI` serves `POST /v1/embeddings` from any embedder object (e.g. fakes.HashEmbedder, or the
real EmbeddedEmbedder) and `POST /v1/chat/completions` from a script of answers. Tests steer it:
transient failures, slow answers, a server that dies after N requests, structured-output refusal.
Every request is recorded (path, headers, JSON body).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, doc: Any, raw: bytes | None = None) -> None:
        body = raw if raw is not None else json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        fake: FakeOpenAI = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            body = None
        with fake.lock:
            fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            n = len(fake.requests)
            failure = fake.failures.popleft() if fake.failures else None
            die = fake.die_after is not None and n > fake.die_after
        if die:
            fake.kill()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if failure is not None:
            status, payload = failure
            if status == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self._send(status, payload)
            return
        if fake.delay:
            time.sleep(fake.delay)
        if self.path.rstrip("/").endswith("/embeddings"):
            self._embeddings(fake, body)
        elif self.path.rstrip("/").endswith("/chat/completions"):
            self._chat(fake, body)
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def _embeddings(self, fake: "FakeOpenAI", body: Any) -> None:
        expected = fake.authorization or (f"Bearer {fake.api_key}" if fake.api_key else None)
        if expected and self.headers.get("Authorization") != expected:
            # as real servers do, the refusal quotes what it was sent (a client must not print it)
            self._send(401, {"error": {"message": f"Incorrect API key provided: {self.headers.get('Authorization')}"}})
            return
        inputs = body.get("input") if isinstance(body, dict) else None
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs:
            self._send(400, {"error": {"message": "input must be a non-empty list"}})
            return
        with fake.embed_lock:
            vecs = np.asarray(fake.embedder.embed_documents(inputs, batch_size=max(1, len(inputs))), dtype=np.float32)
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)]
        data.reverse()  # clients must order by "index", not by position
        self._send(200, {"object": "list", "data": data, "model": fake.served_model or body.get("model"), "usage": {"prompt_tokens": 0, "total_tokens": 0}})

    def _chat(self, fake: "FakeOpenAI", body: Any) -> None:
        if fake.reject_response_format and isinstance(body, dict) and "response_format" in body:
            self._send(400, {"error": {"message": "response_format is not supported"}})
            return
        with fake.lock:
            answer = fake.chat_answers.popleft() if fake.chat_answers else fake.default_chat
        if callable(answer):
            answer = answer(body)
        doc = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": body.get("model") if isinstance(body, dict) else None,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
        }
        self._send(200, doc)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: "FakeOpenAI"

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):  # a client that gave up
            super().handle_error(request, client_address)


class FakeOpenAI:
    """A loopback OpenAI-compatible server. Use as a context manager or call start()/stop()."""

    def __init__(self, embedder: Any = None, *, api_key: str | None = None, served_model: str | None = None, port: int = 0):
        self.embedder = embedder
        self.api_key = api_key
        self.authorization: str | None = None  # the exact Authorization header required (e.g. "Basic ...")
        self.served_model = served_model
        self.requests: list[dict[str, Any]] = []
        self.failures: deque = deque()
        self.chat_answers: deque = deque()
        self.default_chat: Any = json.dumps({"variants": ["first rewording", "second rewording"], "hyde": "A passage."})
        self.delay = 0.0
        self.die_after: int | None = None
        self.reject_response_format = False
        self.lock = threading.Lock()
        self.embed_lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = port  # 0: any free port

    # -- steering -----------------------------------------------------------------------------

    def fail(self, n: int, status: int | str = 500, message: str = "model crashed") -> "FakeOpenAI":
        """The next n requests answer `status` (or "drop": close the connection without answering)."""
        for _ in range(n):
            self.failures.append((status, {"error": {"message": message}}))
        return self

    def answer(self, *contents: Any) -> "FakeOpenAI":
        """Queue chat answers (strings, or callables body -> string)."""
        self.chat_answers.extend(contents)
        return self

    def paths(self) -> list[str]:
        return [r["path"] for r in self.requests]

    # -- life ---------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "FakeOpenAI":
        self._server = _Server(("127.0.0.1", self.port), _Handler)
        self._server.fake = self
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def kill(self) -> None:
        """Stop listening at once (later connections are refused); callable from a handler thread."""
        server = self._server
        if server is None:
            return
        self._server = None
        try:
            server.socket.close()
        except OSError:
            pass
        threading.Thread(target=server.shutdown, daemon=True).start()

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def free_port() -> int:
    """A port nothing listens on (bound then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expansion(variants: list[str], hyde: str = "") -> str:
    return json.dumps({"variants": variants, "hyde": hyde})


# -- fixtures shared by the provider tests (import them into a test module to use them) ---------------

import pytest  # noqa: E402


@pytest.fixture(autouse=False)
def provider_env(monkeypatch):
    """No OPENAI_* variable from the developer's shell, no hub access, and fresh warn-once state."""
    from ragx import log

    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    try:  # the hub library reads the variable once, at import: pin its constant too
        from huggingface_hub import constants

        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    except ImportError:
        pass
    log.reset_warnings()
    yield
    log.reset_warnings()


@pytest.fixture
def hash_server():
    from fakes import HashEmbedder

    with FakeOpenAI(HashEmbedder()) as server:
        yield server


def write_toml(root, text: str) -> None:
    (root / "ragx.toml").write_text(text, encoding="utf-8")


def openai_toml(base_url: str, *, model: str = "hash-64", extra: str = "", max_retries: int = 1) -> str:
    return (
        f'[embeddings]\nengine = "openai"\nmodel = "{model}"\nbase_url = "{base_url}"\n'
        f"max_retries = {max_retries}\ntimeout = 10.0\n{extra}"
    )
