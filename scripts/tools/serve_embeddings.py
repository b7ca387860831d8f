#!/usr/bin/env python
"""A small OpenAI-compatible embedding server on loopback, serving ragx's embedded model.

    python scripts/tools/serve_embeddings.py [--port 8089] [--model all-MiniLM-L6-v2] [--threads N]

Answers ``POST /v1/embeddings`` ({"model", "input": str | [str]}) with the same vectors
``EmbeddedEmbedder`` computes in process, and ``GET /v1/models``. It exists to measure the
``openai`` engine end to end (HTTP, batching, retries) against the embedded engine: an index built
through it must score the same as one built in process. Loopback only unless --host says otherwise.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ragx.models.registry import make_embedder


def make_handler(embedder, model_name: str, lock: threading.Lock, stats: dict):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def _send(self, status: int, doc: dict) -> None:
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "ragx"}]})
            else:
                self._error(404, f"no route GET {self.path}")

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/embeddings":
                self._error(404, f"no route POST {self.path}")
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            except (ValueError, json.JSONDecodeError):
                self._error(400, "the body is not JSON")
                return
            inputs = body.get("input")
            if isinstance(inputs, str):
                inputs = [inputs]
            if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) for t in inputs):
                self._error(400, "input must be a string or a non-empty list of strings")
                return
            if body.get("model") not in (None, model_name):
                self._error(404, f"model {body.get('model')!r} not found (this server serves {model_name!r})")
                return
            t0 = time.perf_counter()
            with lock:
                vecs = embedder.embed_documents(inputs, batch_size=len(inputs))
            stats["requests"] += 1
            stats["texts"] += len(inputs)
            stats["seconds"] += time.perf_counter() - t0
            data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)]
            self._send(200, {"object": "list", "data": data, "model": model_name, "usage": {"prompt_tokens": 0, "total_tokens": 0}})

    return Handler


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8089)
    ap.add_argument("--model", default="all-MiniLM-L6-v2", help="embedded model (alias or local directory); also the served name")
    ap.add_argument("--threads", type=int, default=None, help="onnxruntime threads (default: all usable CPUs)")
    args = ap.parse_args(argv)

    opts = {"threads": args.threads} if args.threads else {}
    embedder = make_embedder("embedded", args.model, **opts)
    embedder.load()  # export/verify the ONNX file and open the session before accepting requests
    stats = {"requests": 0, "texts": 0, "seconds": 0.0}
    server = ThreadingHTTPServer((args.host, args.port), make_handler(embedder, args.model, threading.Lock(), stats))
    server.daemon_threads = True
    host, port = server.server_address[:2]
    print(f"serving {embedder.name} as {args.model!r} at http://{host}:{port}/v1 (Ctrl-C stops)", file=sys.stderr, flush=True)
    def stop(signum, frame):  # SIGTERM ends like Ctrl-C, with the summary
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        print(f"served {stats['requests']} requests, {stats['texts']} texts, {stats['seconds']:.1f} s embedding", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
