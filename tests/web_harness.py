"""The web page under test: `ragx serve`'s app in a uvicorn thread, and Debian's chromium driven by
Playwright (the system browser at /usr/bin/chromium: nothing is downloaded)."""

from __future__ import annotations

import os
import shutil
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


def chromium_path() -> str:
    """Debian's chromium; missing, the browser tests skip on a developer's machine but fail in CI
    (.ci/run installs it), so a green CI always means they ran."""
    path = os.environ.get("RAGX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        if os.environ.get("CI"):
            pytest.fail(f"no chromium at {path}: .ci/run installs Debian's chromium")
        pytest.skip("no chromium (apt-get install -y chromium)")
    return path


@contextmanager
def served(corpus, runs_dir: Path | None = None, queries: Path | None = None) -> Iterator[str]:
    """The page's base URL while a uvicorn thread serves `corpus` on 127.0.0.1 (a free port)."""
    import uvicorn

    from ragx.web.app import make_app
    from ragx.web.serve import bind

    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(make_app(corpus, runs_dir, queries), log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def browser_page() -> Iterator:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.set_default_timeout(30_000)
            yield page
        finally:
            browser.close()


def fetch(url: str) -> tuple[int, str]:
    """(status, body) of a GET, error statuses included."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
