"""`ragx serve`: the local web page (search, communities, runs). Starlette and uvicorn load only here."""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

import ipaddress
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from .app import RootOpt, app, err

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def checked_host(host: str, expose: bool) -> str:
    """`host` if it is a loopback address (or "localhost"); any other address only with --expose, so that
    the page (the corpus's text) never reaches the network by a slip of the --host value alone."""
    if host == "localhost":
        return host
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise UsageError(f"--host must be an IP address or localhost, got {host!r}") from None
    if not address.is_loopback and not expose:
        raise UsageError(f"--host {host} is not a loopback address: the page would be open to other machines; "
                         "add --expose if that is what you want")
    return host


def _check_web_extra() -> None:
    """The page's libraries come with the `web` extra: without them, one line saying so (not a traceback)."""
    import importlib.util

    missing = [name for name in ("starlette", "jinja2", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(f"`ragx serve` needs {', '.join(missing)}: pip install 'ragx[web]'")


@app.command("serve")
def serve_command(
    root: RootOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on (loopback only unless --expose).")] = DEFAULT_HOST,
    port: Annotated[int, typer.Option("--port", help="Port to listen on (0: any free port).")] = DEFAULT_PORT,
    expose: Annotated[bool, typer.Option("--expose", help="Allow a --host that other machines can reach.")] = False,
    runs: Annotated[Optional[Path], typer.Option("--runs", help="Folder of saved `ragx eval --json` runs for the runs page.")] = None,
    queries: Annotated[Optional[Path], typer.Option("--queries", help="Labelled queries (queries.jsonl) for live runs of two configurations.")] = None,
) -> None:
    """Serve a local web page: search with explain, communities, and two eval runs compared query by query.

    Read-only on the index. Listens on 127.0.0.1 unless --host (and --expose for a non-loopback address).
    """
    host = checked_host(host, expose)
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be 0-65535, got {port}")
    if runs is not None and not runs.is_dir():
        raise UsageError(f"--runs {runs} is not a folder")
    if queries is not None and not queries.is_file():
        raise UsageError(f"--queries {queries} is not a file")
    _check_web_extra()
    from ..api import Corpus

    corpus = Corpus.open(root, need_index=True)
    from ..web.serve import serve

    serve(corpus, host, port, runs, announce=lambda url: err.print(f"ragx serve: {url} (Ctrl-C stops)", markup=False), queries=queries)
