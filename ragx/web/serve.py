"""Run the page under uvicorn on a socket bound here, so the URL said is the one really listened on."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Callable

from ..api import Corpus
from .app import make_app


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on exactly `host` (never a wildcard address unless `host` is one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(64)
    return sock


def serve(corpus: Corpus, host: str, port: int, runs_dir: Path | None, announce: Callable[[str], None],
          queries: Path | None = None) -> None:
    """Serve until interrupted; `announce` gets the URL (with the real port when `port` is 0)."""
    import uvicorn

    sock = bind(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    config = uvicorn.Config(make_app(corpus, runs_dir, queries), log_level="warning", access_log=False, lifespan="on")
    announce(f"http://{shown}:{bound_port}/")
    uvicorn.Server(config).run(sockets=[sock])
