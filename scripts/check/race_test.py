"""Readers racing a writer: every query answered while `ragx index` commits is checked against the store.

One thread loops the writer (append a line to a file of the corpus, run `ragx index`), CLI readers run
`ragx query --json --explain` subprocesses, and one real MCP client (the `mcp` SDK over stdio) keeps
calling `search` with explain on ONE warm `ragx mcp` server. Every result is then checked against the
store *at the generation the result names*:

    chunk id live at that generation; file, byte range, lines, text (and "truncated") equal to the
    chunk's row; the --explain path ends at the result's chunk, every step is a live chunk and every
    edge (from, chunk_id, weight) is an edge of that generation with that weight.

How the truth is kept. Only this script writes the index, so after each `ragx index` exits (and once at
the start) the store is read directly with sqlite3 (read-only, one read transaction, independent of
ragx's own code): the generation, every chunk row, the live chunk ids and the edges. Chunk ids are never
reused and a chunk's row never changes, so rows are kept by id; live ids and edges are kept per
generation. A result naming a generation never recorded is counted as an error.

    python scripts/check/race_test.py --root C --cli 2000 --mcp 2000 --commits 50 --parallel 2
    python scripts/check/race_test.py --make-corpus CRANFIELD_CORPUS_DIR --files 200 --root /tmp/race ...

Prints: queries, searches, commits, errors, mislabelled (exit 1 unless errors and mislabelled are 0).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2] / "tests"
PASS_ENV = ("RAGX_RC", "RAGX_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH", "HOME", "PATH")
WEIGHT_TOL = 1e-9
RACE_FILE = "race-notes.md"


# ---- the truth, per generation ------------------------------------------------------------------
@dataclass
class Truth:
    rows: dict[int, tuple] = field(default_factory=dict)              # id -> (path, bs, be, ls, le, text)
    live: dict[int, frozenset] = field(default_factory=dict)          # generation -> live chunk ids
    edges: dict[int, dict] = field(default_factory=dict)              # generation -> {(a, b): weight}
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, db_path: Path) -> int:
        """Read the committed index (one read transaction) and keep what this generation holds."""
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, isolation_level=None)
        try:
            db.execute("PRAGMA busy_timeout = 10000")
            db.execute("BEGIN")
            generation = int(json.loads(db.execute("SELECT value FROM manifest WHERE key = 'generation'").fetchone()[0]))
            rows = db.execute(
                "SELECT c.id, f.path, c.byte_start, c.byte_end, c.line_start, c.line_end, c.text "
                "FROM chunks c JOIN files f ON f.id = c.file_id"
            ).fetchall()
            edges = {(a, b): w for a, b, w in db.execute("SELECT a, b, weight FROM edges")}
            db.execute("COMMIT")
        finally:
            db.close()
        with self.lock:
            for r in rows:
                self.rows.setdefault(r[0], tuple(r[1:]))
            self.live[generation] = frozenset(r[0] for r in rows)
            self.edges[generation] = edges
        return generation


def check_result(truth: Truth, generation: int, r: dict) -> list[str]:
    """What is wrong with one chunk result at `generation` (empty: it is exactly the store's)."""
    cid = r["chunk_id"]
    live = truth.live.get(generation)
    if live is None:
        return [f"generation {generation} was never committed"]
    if cid not in live:
        return [f"chunk {cid} is not live at generation {generation}"]
    path, bs, be, ls, le, text = truth.rows[cid]
    bad = []
    got = (r["file"], r["byte_start"], r["byte_end"], r["line_start"], r["line_end"])
    if got != (path, bs, be, ls, le):
        bad.append(f"chunk {cid}: location {got} != stored {(path, bs, be, ls, le)}")
    if r["text"] != text[: len(r["text"])] or r["truncated"] != (len(text) > len(r["text"])):
        bad.append(f"chunk {cid}: text is not the stored text")
    steps = r.get("path")
    if steps is not None:
        if not steps or steps[-1]["chunk_id"] != cid:
            bad.append(f"chunk {cid}: explain path ends at {steps[-1]['chunk_id'] if steps else None}")
        for s in steps:
            if s["chunk_id"] not in live:
                bad.append(f"chunk {cid}: explain step {s['chunk_id']} not live at generation {generation}")
            if "from" in s:
                key = (min(s["from"], s["chunk_id"]), max(s["from"], s["chunk_id"]))
                w = truth.edges[generation].get(key)
                if w is None or abs(w - s["edge_weight"]) > WEIGHT_TOL:
                    bad.append(f"chunk {cid}: explain edge {key} weight {s['edge_weight']} vs stored {w}")
    return bad


# ---- running ragx ----------------------------------------------------------------------------------
FROZEN: list[str] = []  # --frozen-code: a copy of ragx's source that every child runs instead of the working tree


def ragx_argv(args: list[str], fake: bool) -> list[str]:
    python = [sys.executable, "-S"] if FROZEN else [sys.executable]  # -S: no site hooks, so no editable install
    if fake:  # the fast test-hash engine of tests/fakes_registration.py
        return [*python, "-c", f"import fakes_registration\nfrom ragx.cli.main import run\nrun({args!r})"]
    return [*python, "-m", "ragx.cli.main", *args]


def child_env(fake: bool) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
    paths = [str(TESTS)] if fake else []
    if FROZEN:
        import site

        paths += FROZEN + site.getsitepackages()
    if paths:
        env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@dataclass
class Tally:
    queries: int = 0
    searches: int = 0
    commits: int = 0
    results: int = 0
    errors: list[str] = field(default_factory=list)
    mislabelled: list[str] = field(default_factory=list)
    answers: list[tuple[str, dict]] = field(default_factory=list)   # (who, document) to check at the end
    lock: threading.Lock = field(default_factory=threading.Lock)
    readers_done: threading.Event = field(default_factory=threading.Event)
    # Seconds the writer and the MCP client wait between actions once they have met their own targets,
    # so the slow CLI readers (a process each) get the CPU to reach theirs; the race goes on meanwhile.
    pace: float = 0.0
    cli_done: threading.Event = field(default_factory=threading.Event)
    stop_at: float = float("inf")  # time.monotonic() after which readers start nothing new (--max-seconds)

    def time_left(self) -> bool:
        return time.monotonic() < self.stop_at

    def error(self, what: str) -> None:
        with self.lock:
            self.errors.append(what.strip().splitlines()[-1] if what.strip() else "(no message)")


def writer(root: Path, truth: Truth, tally: Tally, commits: int, fake: bool) -> None:
    """Append and index until `commits` are done and the readers have finished.

    Every other commit edits one of the files the queries are drawn from, so the chunks a running
    query has found are the very chunks the commit deletes (an edited file's chunks get new ids)."""
    queried = queried_files(root)
    rng = random.Random(11)
    words = "pressure wing flow boundary layer shock heat transfer mach plate".split()
    i = 0
    while tally.commits < commits or not tally.readers_done.is_set():
        i += 1
        target = rng.choice(queried) if i % 2 and queried else root / RACE_FILE
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(f"\nrace line {i}: " + " ".join(rng.choice(words) for _ in range(12)) + "\n")
        done = subprocess.run(ragx_argv(["index", "--root", str(root)], fake), capture_output=True, text=True, env=child_env(fake))
        if done.returncode != 0:
            tally.error(f"index: exit {done.returncode}: {done.stderr}")
            continue
        truth.record(root / ".ragx" / "index.sqlite")
        with tally.lock:
            tally.commits += 1
        if tally.commits >= commits:
            time.sleep(tally.pace)


def cli_reader(root: Path, queries: list[str], n: int, tally: Tally, fake: bool, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(n):
        if not tally.time_left():
            break
        q = rng.choice(queries)
        done = subprocess.run(
            ragx_argv(["query", "--root", str(root), "--json", "--explain", "--", q], fake), capture_output=True, text=True, env=child_env(fake)
        )
        with tally.lock:
            tally.queries += 1
            if tally.queries % 100 == 0:  # progress on stderr: a long race is otherwise silent
                print(f"race: {tally.queries} CLI queries, {tally.searches} MCP searches, {tally.commits} commits, "
                      f"{len(tally.errors)} errors", file=sys.stderr, flush=True)
        if done.returncode not in (0, 1):  # 1: answered, nothing found
            tally.error(f"query: exit {done.returncode}: {done.stderr}")
            continue
        try:
            doc = json.loads(done.stdout)
        except ValueError:
            tally.error(f"query: not JSON: {done.stdout[:200]!r} {done.stderr}")
            continue
        with tally.lock:
            tally.answers.append(("cli", doc))


async def _mcp_reader(root: Path, queries: list[str], n: int, tally: Tally, fake: bool, errlog) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    args = ["mcp", "--root", str(root)]
    argv = ragx_argv(args, fake)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=child_env(fake))
    rng = random.Random(5)
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            done = 0
            while (done < n or not tally.cli_done.is_set()) and tally.time_left():  # at least n, and while the CLI runs
                done += 1
                res = await session.call_tool("search", {"query": rng.choice(queries), "explain": True})
                with tally.lock:
                    tally.searches += 1
                if res.is_error:
                    tally.error(f"mcp search: {res.content[0].text}")
                    continue
                with tally.lock:
                    tally.answers.append(("mcp", res.structured_content))
                if done >= n:
                    await anyio.sleep(tally.pace)


def mcp_reader(root: Path, queries: list[str], n: int, tally: Tally, fake: bool, log: Path) -> None:
    import anyio

    try:
        with open(log, "a") as errlog:
            anyio.run(_mcp_reader, root, queries, n, tally, fake, errlog)
    except Exception as exc:  # noqa: BLE001 - a dead server is an error to count, not a crash of the race
        tally.error(f"mcp client: {type(exc).__name__}: {exc}")


# ---- the race ----------------------------------------------------------------------------------------
def queried_files(root: Path, n: int = 60) -> list[Path]:
    return sorted(p for p in root.glob("*.md") if p.name != RACE_FILE)[:n]


def corpus_queries(root: Path, n: int = 60) -> list[str]:
    """The first line of two or more words of each corpus file's text, after its frontmatter: realistic
    queries that always have answers. (Taken from the file's top, a note's queries were its frontmatter's
    `id: <random string>` lines, which mostly found nothing, so few results were checked.)"""
    from ragx.ingest.frontmatter import parse

    out = []
    for p in queried_files(root, n):
        text = p.read_text(encoding="utf-8", errors="replace")
        fm = parse(text)
        for line in text[fm.end if fm else 0 :].splitlines():
            words = line.strip("# ").split()
            if len(words) >= 2:
                out.append(" ".join(words[:8]))
                break
    return out or ["pressure distribution on wings"]


def make_corpus(src: Path, root: Path, n: int) -> None:
    """The first `n` notes (by name) of `src`: a folder of *.md files, or a BEIR folder (corpus.jsonl,
    e.g. ../shared/data/dendron-vault), whose documents are first written as files the way
    `ragx eval beir` writes them (ragx/eval/beir.py)."""
    import tempfile

    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="race-corpus-") as scratch:
        if (src / "corpus.jsonl").is_file():
            from ragx.eval.beir import materialise

            src = materialise(src, Path(scratch)).corpus_dir
        for p in sorted(src.glob("*.md"))[:n]:
            shutil.copy(p, root / p.name)


def check_all(truth: Truth, tally: Tally) -> None:
    for who, doc in tally.answers:
        for r in doc.get("results", []):
            tally.results += 1
            problems = check_result(truth, doc["generation"], r)
            if problems:
                tally.mislabelled.append(f"{who}: {problems[0]}")


def race(root: Path, *, cli: int, mcp: int, commits: int, parallel: int, fake: bool, log: Path, max_seconds: float,
         pace: float = 0.0) -> Tally:
    truth, tally = Truth(), Tally(pace=pace)
    tally.stop_at = time.monotonic() + max_seconds
    first = subprocess.run(ragx_argv(["index", "--root", str(root)], fake), capture_output=True, text=True, env=child_env(fake))
    if first.returncode != 0:
        raise SystemExit(f"initial index failed: {first.stderr.strip()}")
    truth.record(root / ".ragx" / "index.sqlite")
    queries = corpus_queries(root)
    clis = [threading.Thread(target=cli_reader, args=(root, queries, cli // parallel + (i < cli % parallel), tally, fake, i)) for i in range(parallel)]
    mcps = [threading.Thread(target=mcp_reader, args=(root, queries, mcp, tally, fake, log))] if mcp else []
    w = threading.Thread(target=writer, args=(root, truth, tally, commits, fake))
    w.start()
    for t in clis + mcps:
        t.start()
    for t in clis:
        t.join()
    tally.cli_done.set()
    for t in mcps:
        t.join()
    tally.readers_done.set()
    w.join()
    check_all(truth, tally)
    return tally


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, required=True, help="the corpus (this script appends to its race-notes.md)")
    ap.add_argument("--make-corpus", type=Path, default=None,
                    help="copy the first --files *.md of this folder (or the documents of this BEIR folder) into --root first")
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--cli", type=int, default=40, help="CLI queries (ragx query --json --explain subprocesses)")
    ap.add_argument("--mcp", type=int, default=200, help="MCP searches (explain) on one warm server, at least (more while CLI queries run)")
    ap.add_argument("--commits", type=int, default=10, help="index commits at least (more while readers run)")
    ap.add_argument("--parallel", type=int, default=2, help="CLI queries running at once")
    ap.add_argument("--max-seconds", type=float, default=float("inf"), help="readers start nothing new after this (the counts say what ran)")
    ap.add_argument("--fake", action="store_true", help="use the tests' fast hashing embedder instead of the model")
    ap.add_argument("--frozen-code", type=Path, default=None, help="run ragx from this copy of its source (a folder holding ragx/)")
    ap.add_argument("--pace", type=float, default=0.0, help="seconds between commits and between MCP searches once their targets are met")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.frozen_code is not None:
        FROZEN[:] = [str(a.frozen_code.resolve())]
    if a.make_corpus is not None:
        make_corpus(a.make_corpus, a.root, a.files)
    root = a.root.resolve()
    started = time.perf_counter()
    tally = race(root, cli=a.cli, mcp=a.mcp, commits=a.commits, parallel=a.parallel, fake=a.fake, log=root.parent / "race-server.err", max_seconds=a.max_seconds,
                 pace=a.pace)
    figures = {
        "queries": tally.queries, "searches": tally.searches, "commits": tally.commits, "results_checked": tally.results,
        "errors": len(tally.errors), "mislabelled": len(tally.mislabelled), "seconds": round(time.perf_counter() - started, 1),
        "error_samples": sorted(set(tally.errors))[:5], "mislabelled_samples": tally.mislabelled[:5],
    }
    if a.json:
        print(json.dumps(figures))
    else:
        print(
            f"queries {figures['queries']}  searches {figures['searches']}  commits {figures['commits']}  "
            f"results checked {figures['results_checked']}  errors {figures['errors']}  mislabelled {figures['mislabelled']}  "
            f"({figures['seconds']} s)"
        )
        for line in figures["error_samples"] + figures["mislabelled_samples"]:
            print("  " + line)
    return 0 if not tally.errors and not tally.mislabelled else 1


if __name__ == "__main__":
    sys.exit(main())
