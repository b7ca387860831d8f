#!/usr/bin/env python
"""Screenshots of `ragx serve`'s pages for docs/web.md, taken with Debian's chromium through Playwright.

    python scripts/tools/web_screenshots.py --root CORPUS --runs RUNS_DIR --query "..." [--out docs/img]

Starts `ragx serve --root CORPUS --runs RUNS_DIR --port 0` (this venv), then saves web-search.png (the
query, its first result's explain trace opened), web-communities.png, web-runs.png (the first two
configurations of the first saved run) and web-runs-query.png (the query that changed most, side by side).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


def shoot(url: str, query: str, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(120_000)
        page.goto(url)
        page.fill("#q", query)
        page.click("#go")
        page.wait_for_selector("#results")
        page.click(".result details.explain summary")
        page.screenshot(path=str(out / "web-search.png"))
        page.click("#nav-communities")
        page.screenshot(path=str(out / "web-communities.png"))
        page.click("#nav-runs")
        page.click("#compare")
        page.wait_for_selector("#stats")
        page.screenshot(path=str(out / "web-runs.png"))
        page.click("tr.delta a")
        page.wait_for_selector("#side-b")
        page.click("#side-a li.ranked details.explain summary")
        page.click("#side-b li.ranked details.explain summary")
        page.screenshot(path=str(out / "web-runs-query.png"))
        browser.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--runs", type=Path, required=True)
    ap.add_argument("--query", required=True)
    ap.add_argument("--out", type=Path, default=Path("docs/img"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ragx = Path(sys.executable).with_name("ragx")
    proc = subprocess.Popen([str(ragx), "serve", "--root", str(args.root), "--runs", str(args.runs), "--port", "0"],
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        if not line.startswith("ragx serve: http"):
            sys.exit(f"web_screenshots: the server did not start: {line.strip()}")
        shoot(line.split()[2], args.query, args.out)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"wrote web-search.png, web-communities.png, web-runs.png, web-runs-query.png in {args.out}")


if __name__ == "__main__":
    main()
