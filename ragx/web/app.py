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
from .runs_view import LIVE_DATASET, Pick, Side, compare, list_runs, live_run, load_run, resolve, side_by_side
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


class Pages:
    """The page handlers over one corpus (and one folder of saved runs)."""

    def __init__(self, corpus: Corpus, runs_dir: Path | None, queries: Path | None = None):
        self.corpus, self.runs_dir, self.queries = corpus, runs_dir, queries
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.globals.update(seed_legs=seed_legs, top_choices=TOP_CHOICES)

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        return self.templates.TemplateResponse(request, name, {"root": str(self.corpus.root), **context}, status_code=status)

    async def search(self, request: Request) -> Response:
        form = SearchForm.read(request.query_params)
        found = run_search(self.corpus, form) if form.q else None
        return self.page(request, "search.html", form=form, found=found)

    async def file(self, request: Request) -> Response:
        path = request.query_params.get("path", "")
        doc = self.corpus.inspect("file", path)  # corpus.relative refuses a path outside the root (a 400 page)
        return self.page(request, "file.html", doc=doc, q=request.query_params.get("q", ""))

    async def communities(self, request: Request) -> Response:
        return self.page(request, "communities.html", doc=self.corpus.inspect("communities"))

    async def community(self, request: Request) -> Response:
        number = request.path_params["number"]
        return self.page(request, "community.html", doc=self.corpus.inspect("community", str(number)))

    async def runs(self, request: Request) -> Response:
        names = list_runs(self.runs_dir)
        live_a, live_b = request.query_params.get("live_a", "").strip(), request.query_params.get("live_b", "").strip()
        if live_a and live_b:
            name = live_run(self.corpus, self.queries, live_a, live_b)
            names = [name, *names]
            pick: Pick | None = Pick(Side(name, "A"), Side(name, "B"), LIVE_DATASET, request.query_params.get("metric", "") or "nDCG@10")
        else:
            pick = Pick.read(request.query_params, names)
        if pick is None:
            return self.page(request, "runs.html", names=names, pick=None, runs_dir=self.runs_dir, live=self.queries is not None)
        pick, ds_a, ds_b = resolve(pick, self.runs_dir)
        configs = {"a": list(ds_a["files"]["per_query"]), "b": list(ds_b["files"]["per_query"])}
        datasets = [d["dataset"] for d in load_run(self.runs_dir, pick.a.run)["datasets"]]
        return self.page(request, "runs.html", names=names, pick=pick, runs_dir=self.runs_dir, configs=configs,
                         datasets=datasets, cmp=compare(pick, ds_a, ds_b), live=self.queries is not None)

    async def run_query(self, request: Request) -> Response:
        pick = Pick.read(request.query_params, list_runs(self.runs_dir))
        if pick is None:
            raise UsageError("pick two runs first")
        pick, ds_a, ds_b = resolve(pick, self.runs_dir)
        shown = side_by_side(self.corpus, pick, ds_a, ds_b, request.query_params.get("qid", ""), self.runs_dir)
        return self.page(request, "run_query.html", pick=pick, q=shown)

    async def refused(self, request: Request, exc: Exception) -> Response:
        status = 400 if isinstance(exc, UsageError) else 500
        return self.page(request, "error.html", status=status, message=str(exc))

    async def not_found(self, request: Request, exc: Exception) -> Response:
        return HTMLResponse("not found", status_code=404)


def make_app(corpus: Corpus, runs_dir: Path | None = None, queries: Path | None = None) -> Any:
    """The ASGI app serving `corpus` (the saved eval runs in `runs_dir`, live runs over the labelled
    `queries`), wrapped in ServerTiming."""
    pages = Pages(corpus, runs_dir, queries)

    @contextlib.asynccontextmanager
    async def prepared(app: Starlette) -> AsyncIterator[None]:
        corpus.prepare_search()  # on the loop's thread, like every query after it (see the module's note)
        yield

    routes = [
        Route("/", pages.search),
        Route("/file", pages.file),
        Route("/communities", pages.communities),
        Route("/communities/{number:int}", pages.community),
        Route("/runs", pages.runs),
        Route("/runs/query", pages.run_query),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=prepared, exception_handlers={RagxError: pages.refused, 404: pages.not_found})
    return ServerTiming(app)
