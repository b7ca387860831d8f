"""The Starlette app behind `ragx serve`: routes, templates, error pages and the server-time header.

Every handler is `async` and calls the corpus on the event loop's one thread: the searcher's SQLite
connections and loaded arrays are then only ever used from the thread that opened them (a local page
serves one person; queries take milliseconds). Nothing here writes to the index.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from ..api import Corpus
from ..errors import RagxError, UsageError
from .search_view import TOP_CHOICES, SearchForm, run_search, seed_legs

HERE = Path(__file__).parent


class ServerTiming:
    """ASGI middleware: `Server-Timing: app;dur=<ms>` on every response, the time from the request's
    arrival to its response's start (what the page's own work cost, without the network or browser)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()

        async def timed_send(message: dict) -> None:
            if message["type"] == "http.response.start":
                ms = (time.perf_counter() - started) * 1000
                message.setdefault("headers", []).append((b"server-timing", f"app;dur={ms:.2f}".encode()))
            await send(message)

        await self.app(scope, receive, timed_send)


def make_app(corpus: Corpus, runs_dir: Path | None = None) -> Any:
    """The ASGI app serving `corpus` (and the saved eval runs in `runs_dir`), wrapped in ServerTiming."""
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.globals.update(seed_legs=seed_legs, top_choices=TOP_CHOICES)

    def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        return templates.TemplateResponse(request, name, {"root": str(corpus.root), **context}, status_code=status)

    async def search(request: Request) -> Response:
        form = SearchForm.read(request.query_params)
        found = run_search(corpus, form) if form.q else None
        return page(request, "search.html", form=form, found=found)

    async def file_page(request: Request) -> Response:
        path = request.query_params.get("path", "")
        doc = corpus.inspect("file", path)  # corpus.relative refuses a path outside the root (a 400 page)
        return page(request, "file.html", doc=doc, q=request.query_params.get("q", ""))

    async def communities(request: Request) -> Response:
        return page(request, "communities.html", doc=corpus.inspect("communities"))

    async def community(request: Request) -> Response:
        number = request.path_params["number"]
        return page(request, "community.html", doc=corpus.inspect("community", str(number)))

    async def refused(request: Request, exc: Exception) -> Response:
        status = 400 if isinstance(exc, UsageError) else 500
        return page(request, "error.html", status=status, message=str(exc))

    async def not_found(request: Request, exc: Exception) -> Response:
        return HTMLResponse("not found", status_code=404)

    @contextlib.asynccontextmanager
    async def prepared(app: Starlette) -> AsyncIterator[None]:
        corpus.prepare_search()  # on the loop's thread, like every query after it (see the module's note)
        yield

    routes = [
        Route("/", search),
        Route("/file", file_page),
        Route("/communities", communities),
        Route("/communities/{number:int}", community),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=prepared, exception_handlers={RagxError: refused, 404: not_found})
    app.state.corpus = corpus
    return ServerTiming(app)
