#!/usr/bin/env python
"""Reproduce every fault and bad input of issue 11 with the real CLI, and print what each one did.

    python scripts/check/fault_suite.py [--out reports/fault-suite.md] [--only NAME ...] [--race-queries N]

Builds a small corpus in a temporary folder, indexes it with `ragx index`, then for each case damages
something (a setting, an input, the disk, the index files), runs the command a user would run, and
restores what it damaged. Each row of the markdown table says: the case, the command, its exit code,
the message on stderr, whether it was one line (exactly one `ragx: error:` line and no traceback),
whether the index was intact afterwards (`status --deep` consistent, with the same generation and
chunk count as before the case, unless the case is meant to add one), and whether the row met its
expectation. Cases that need work on another branch say so in the "needs" column: they are reported,
never skipped.

Disk faults use what the machine offers: a small tmpfs mounted over .ragx (disk full) and a read-only
bind mount (as root), `ulimit -f` (file size limit), `setpriv` to run as `nobody` (permission denied).
A case whose tool is missing is reported as "not run" with the reason.

tests/test_faults.py runs a bounded form of this suite in CI (`--engine test-hash`, a hashing embedder
that needs no model; every command is the real CLI entry point in a subprocess).
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
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

REPO = Path(__file__).resolve().parents[2]
CORE = "snapshot-per-read and array checksums (issue 11 items 1-2, branch core)"

WORDS = {
    "wings": "pressure distribution wing lift drag airfoil boundary layer flow velocity",
    "stars": "stars galaxies telescope orbit planet comet nebula light years cosmic",
    "bread": "flour butter oven bake bread recipe sugar dough yeast kitchen",
    "boats": "boat wind sail harbour keel mast rope anchor tide knot",
}


@dataclass
class Run:
    code: int
    out: str
    err: str
    seconds: float

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith("ragx: error:")]

    @property
    def one_line(self) -> bool:
        return "Traceback" not in self.err and len(self.error_lines) == 1

    @property
    def message(self) -> str:
        """The error line; else the integrity verdict `ragx status` printed; else the last line on stderr."""
        lines = (
            self.error_lines
            or [line.strip() for line in self.out.splitlines() if "INCONSISTENT" in line]
            or [line for line in self.err.splitlines() if line.strip()][-1:]
        )
        return lines[0] if lines else ""


@dataclass
class Row:
    case: str
    command: str
    code: int | None
    message: str
    one_line: bool | None
    intact: bool | None
    ok: bool
    needs: str = ""
    note: str = ""


@dataclass
class Suite:
    ragx_cmd: list[str]
    work: Path
    env: dict[str, str]
    toml_base: str = ""                      # kept in every ragx.toml the cases write (the engine)
    # The bounded form (pytest): plain commands run the CLI entry point in this process (stdin, cwd,
    # ulimit and user cases still run in a subprocess), and "index intact" is checked once per case.
    quick: bool = False
    rows: list[Row] = field(default_factory=list)
    baseline: tuple[int, int] = (0, 0)       # (generation, chunks) the index should still have

    @property
    def corpus(self) -> Path:
        return self.work / "corpus"

    @property
    def index_dir(self) -> Path:
        return self.corpus / ".ragx"

    # ---- running the CLI -----------------------------------------------------------------------
    def ragx(self, *args: str, stdin: bytes | None = None, close_stdin: bool = False, cwd: Path | None = None,
             shell_prefix: str = "", user: str | None = None, env: dict | None = None, timeout: float = 300,
             fresh: bool = False, wrap: tuple[str, ...] = ()) -> Run:
        """`fresh`: always a new process (cases that mount over .ragx: no connection may stay open).
        `wrap`: a command the CLI runs under (e.g. setpriv dropping capabilities)."""
        if self.quick and stdin is None and not (close_stdin or cwd or shell_prefix or user or env or fresh or wrap):
            return self._in_process(args)
        argv = [*wrap, *self.ragx_cmd, *args]
        if user:
            import pwd

            who = pwd.getpwnam(user)
            argv = ["setpriv", f"--reuid={who.pw_uid}", f"--regid={who.pw_gid}", "--clear-groups", *argv]
        if shell_prefix:  # e.g. "ulimit -f 8": applied by a shell that then execs the command
            argv = ["bash", "-c", f'{shell_prefix}; exec "$@"', "bash", *argv]
        t0 = time.perf_counter()
        io: dict = {"input": stdin} if stdin is not None else {"stdin": None if close_stdin else subprocess.DEVNULL}
        try:
            proc = subprocess.run(
                argv, **io, capture_output=True, cwd=cwd or self.work, env=env or self.env, timeout=timeout,
                preexec_fn=(lambda: os.close(0)) if close_stdin else None,
            )
        except subprocess.TimeoutExpired as exc:
            return Run(-9, "", f"timed out after {timeout:.0f} s: {exc}", time.perf_counter() - t0)
        return Run(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"),
                   time.perf_counter() - t0)

    @staticmethod
    def _in_process(args: tuple[str, ...]) -> Run:
        import io
        from contextlib import redirect_stderr, redirect_stdout

        from ragx.cli.main import run

        out, err, t0 = io.StringIO(), io.StringIO(), time.perf_counter()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                run(list(args))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        import gc

        gc.collect()  # close the SQLite connections the command left, as its process exit would
        return Run(code, out.getvalue(), err.getvalue(), time.perf_counter() - t0)

    def status(self) -> dict:
        run = self.ragx("status", "--root", str(self.corpus), "--deep", "--json")
        try:
            return json.loads(run.out)
        except json.JSONDecodeError:
            return {"consistent": False, "problems": [run.message or f"exit {run.code}"]}

    def intact(self) -> bool:
        info = self.status()
        return bool(info.get("consistent")) and (info.get("generation"), info.get("chunks")) == self.baseline

    def rebaseline(self) -> None:
        info = self.status()
        self.baseline = (info.get("generation"), info.get("chunks"))

    def write_toml(self, extra: str = "") -> None:
        (self.corpus / "ragx.toml").write_text(self.toml_base + extra, encoding="utf-8")

    # ---- recording -----------------------------------------------------------------------------
    def record(self, case: str, command: str, run: Run | None, *, expect: int = 2, contains: tuple[str, ...] = (),
               absent: tuple[str, ...] = (), check_intact: bool = True, needs: str = "", note: str = "",
               one_line: bool = True) -> Row:
        if run is None:
            row = Row(case, command, None, "", None, None, False, needs, note or "not run")
            self.rows.append(row)
            return row
        intact = self.intact() if check_intact and not self.quick else None
        text = run.err + run.out
        ok = (
            run.code == expect
            and (run.one_line or not one_line or expect != 2)
            and all(c in text for c in contains)
            and not any(a in text for a in absent)
            and intact is not False
        )
        row = Row(case, command, run.code, run.message, run.one_line if expect == 2 else None, intact, ok, needs, note)
        self.rows.append(row)
        return row

    def backup(self) -> Path:
        target = self.work / "backup.ragx"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(self.index_dir, target)
        return target

    def restore(self, backup: Path) -> None:
        shutil.rmtree(self.index_dir)
        shutil.copytree(backup, self.index_dir)


# --------------------------------------------------------------------------------------------
# the corpus


def build_corpus(root: Path, n_per_topic: int = 3) -> None:
    rng = random.Random(11)
    root.mkdir(parents=True, exist_ok=True)
    for topic, words in WORDS.items():
        w = words.split()
        for i in range(n_per_topic):
            parts = "\n\n".join(f"## Part {p}\n\n" + " ".join(rng.choice(w) for _ in range(60)) for p in range(3))
            (root / f"{topic}-{i}.md").write_text(f"# {topic} {i}\n\n{parts}\n", encoding="utf-8")
    (root / "doc1.md").write_text("# Doc one\n\npressure distribution on wings\n", encoding="utf-8")


CASES: list[tuple[str, str, Callable[[Suite], None]]] = []  # (name, group, function)


def case(name: str, group: str):
    def register(fn: Callable[[Suite], None]) -> Callable[[Suite], None]:
        CASES.append((name, group, fn))
        return fn
    return register


# --------------------------------------------------------------------------------------------
# bad settings (item 3, 7)

BAD_SETTINGS = [
    ("index.max_file_bytes = -1", "[index]\nmax_file_bytes = -1\n", "index.max_file_bytes"),
    ("graph.k = 0", "[graph]\nk = 0\n", "graph.k"),
    ("graph.k = -3", "[graph]\nk = -3\n", "graph.k"),
    ("graph.k = 1000000", "[graph]\nk = 1000000\n", "graph.k"),
    ("graph.k = 1e6 (a float)", "[graph]\nk = 1e6\n", "graph.k"),
    ("graph.min_sim = -5", "[graph]\nmin_sim = -5\n", "graph.min_sim"),
    ("graph.min_sim = nan", "[graph]\nmin_sim = nan\n", "graph.min_sim"),
    ("chunking.target_tokens = 0", "[chunking]\ntarget_tokens = 0\n", "chunking.target_tokens"),
    ("chunking.min_tokens = -5", "[chunking]\nmin_tokens = -5\n", "chunking.min_tokens"),
    ("min_tokens > target_tokens", "[chunking]\ntarget_tokens = 40\nmin_tokens = 100\n", "chunking.min_tokens"),
    ("embeddings.batch_size = 0", "[embeddings]\nbatch_size = 0\n", "embeddings.batch_size"),
    ("search.decay = 2", "[search]\ndecay = 2.0\n", "search.decay"),
    ("search.top = 0", "[search]\ntop = 0\n", "search.top"),
    ("unknown key graph.kk", "[graph]\nkk = 3\n", "graph.kk"),
]


@case("settings", "bad settings")
def bad_settings(s: Suite) -> None:
    # The bounded form tries a few through the CLI; tests/test_settings.py checks every range in-process.
    for label, text, key in BAD_SETTINGS[::4] if s.quick else BAD_SETTINGS:
        s.write_toml(text)
        # the key section may repeat the engine's [embeddings] table: merge by writing the engine last
        if s.toml_base and text.startswith("[embeddings]"):
            (s.corpus / "ragx.toml").write_text(text + s.toml_base.split("\n", 1)[1], encoding="utf-8")
        run = s.ragx("index", "--root", str(s.corpus))
        s.write_toml()  # undo before `record` checks that the index is intact
        s.record(f"setting {label}", "ragx index", run, contains=(key, "ragx.toml"))


@case("settings-origin", "bad settings")
def settings_origin(s: Suite) -> None:
    """Issue 42, item 6: `engine = "nope"` and `model = ""` named neither the file nor the key."""
    rest = s.toml_base.split("\n", 1)[1] if s.toml_base else ""  # the engine line of the test-hash form
    for label, text, key in (('embeddings.engine = "nope"', '[embeddings]\nengine = "nope"\n', "embeddings.engine"),
                             ('embeddings.model = ""', '[embeddings]\nmodel = ""\n' + rest, "embeddings.model")):
        (s.corpus / "ragx.toml").write_text(text, encoding="utf-8")
        runs = [(cmd, s.ragx(*args, "--root", str(s.corpus))) for cmd, args in (("ragx index", ("index",)), ("ragx query", ("query", "wings")))]
        s.write_toml()
        for cmd, run in runs:
            s.record(f"setting {label}", cmd, run, contains=(key, str(s.corpus / "ragx.toml")))


@case("toml-not-utf8", "bad settings")
def toml_not_utf8(s: Suite) -> None:
    (s.corpus / "ragx.toml").write_bytes(s.toml_base.encode() + b"# caf\xe9\n")
    run = s.ragx("status", "--root", str(s.corpus))
    s.write_toml()
    s.record("ragx.toml not UTF-8", "ragx status", run, contains=("ragx.toml", "UTF-8"))


@case("config-get-bad-key", "bad settings")
def config_get_bad_key(s: Suite) -> None:
    s.write_toml("[graph]\nkk = 3\nk = 0\n")
    run = s.ragx("config", "get", "--root", str(s.corpus))
    s.write_toml()
    shows = "graph.k = 8" in run.out and "graph.min_sim" in run.out
    s.record("config get with bad keys", "ragx config get", run, contains=("graph.kk", "graph.k"), one_line=False,
             note="prints every setting (bad ones at their defaults) and names each problem" if shows else "settings not shown")
    s.rows[-1].ok = s.rows[-1].ok and shows


# --------------------------------------------------------------------------------------------
# bad inputs (item 4, 7)

@case("query-inputs", "bad inputs")
def query_inputs(s: Suite) -> None:
    root = ("--root", str(s.corpus))
    s.record("query - with stdin closed", "ragx query - <&-", s.ragx("query", "-", *root, close_stdin=True), contains=("stdin",))
    s.record("query - with invalid UTF-8 on stdin", "printf '\\xff\\xfe' | ragx query -", s.ragx("query", "-", *root, stdin=b"\xff\xfe wings"), contains=("UTF-8",))
    argv_bytes = os.fsdecode(b"wings \xff\xfe")  # what a shell passes for $'wings \xff\xfe'
    s.record("query with invalid UTF-8 argument", "ragx query $'wings \\xff'", s.ragx("query", argv_bytes, *root), contains=("UTF-8",))
    s.record("empty query", "ragx query ' '", s.ragx("query", " ", *root), contains=("empty",))


@case("top-bound", "inputs")
def top_bound(s: Suite) -> None:
    """Issue 42: top = 10^12 was accepted by the CLI and MCP while search.top in ragx.toml is capped."""
    run = s.ragx("query", "wings", "--top", str(10**12), "--root", str(s.corpus))
    s.record("--top 10^12", "ragx query --top 1000000000000", run, contains=("out of range",), check_intact=False)


@case("inspect-inputs", "bad inputs")
def inspect_inputs(s: Suite) -> None:
    root = ("--root", str(s.corpus))
    s.record("inspect chunk 10^30", "ragx inspect chunk 1000000000000000000000000000000",
             s.ragx("inspect", "chunk", "1000000000000000000000000000000", *root), contains=("no chunk",))
    s.record("inspect chunk without id", "ragx inspect chunk", s.ragx("inspect", "chunk", *root), contains=("needs a chunk id",), absent=("None",))
    s.record("inspect neighbors abc", "ragx inspect neighbors abc", s.ragx("inspect", "neighbors", "abc", *root), contains=("whole number",))


EVAL_FILES = [
    ("eval grade \"high\"", b'{"query": "wings", "relevance": {"wings-0.md": "high"}}\n', "whole-number grade"),
    ("eval relevance as a list", b'{"query": "wings", "relevance": ["wings-0.md"]}\n', "must be an object"),
    ("eval relevant_files as a string", b'{"query": "wings", "relevant_files": "wings-0.md"}\n', "list of paths"),
    ("eval queries file not UTF-8", b'{"query": "caf\xe9", "relevant_files": ["wings-0.md"]}\n', "UTF-8"),
    ("eval label naming a missing file", b'{"query": "wings", "relevant_files": ["wings-0.md", "no-such.md"]}\n', "no-such.md"),
]


@case("eval-inputs", "bad inputs")
def eval_inputs(s: Suite) -> None:
    for label, content, expect in EVAL_FILES:
        path = s.work / "queries.jsonl"
        path.write_bytes(content)
        s.record(label, "ragx eval queries.jsonl", s.ragx("eval", str(path), "--root", str(s.corpus)), contains=(expect,))
    folder = s.work / "a-folder.jsonl"
    folder.mkdir(exist_ok=True)
    s.record("eval queries path is a folder", "ragx eval a-folder.jsonl", s.ragx("eval", str(folder), "--root", str(s.corpus)), contains=("folder",))


# --------------------------------------------------------------------------------------------
# roots, names, credentials (items 6, 7)

@case("broad-roots", "roots")
def broad_roots(s: Suite) -> None:
    for cmd in ("status", "index"):
        run = s.ragx(cmd, cwd=Path("/"), timeout=60)
        s.record(f"cd / && ragx {cmd}", f"cd / && ragx {cmd}", run, contains=("filesystem root", "--root"),
                 note=f"{run.seconds:.1f} s")
    home = s.work / "home"
    home.mkdir(exist_ok=True)
    (home / "note.md").write_text("a note in the home folder\n")
    env = dict(s.env, HOME=str(home))
    run = s.ragx("status", cwd=home, env=env, timeout=60)
    s.record("cd ~ && ragx status", "cd ~ && ragx status", run, contains=("home folder",))
    run = s.ragx("status", "--root", str(home), "--json", cwd=home, env=env, timeout=60)
    s.record("ragx status --root ~ (explicit)", "ragx status --root ~", run, expect=1, note="allowed: not indexed yet (exit 1)")


@case("ansi-names", "roots")
def ansi_names(s: Suite) -> None:
    other = s.work / "ansi"
    shutil.rmtree(other, ignore_errors=True)
    other.mkdir()
    if s.toml_base:
        (other / "ragx.toml").write_text(s.toml_base)
    (other / "evil\x1b[31mred\x07.md").write_text("# wings\n\npressure distribution on wings\n")
    (other / "plain.md").write_text("# bread\n\nflour and butter\n")
    s.ragx("index", "--root", str(other))
    run = s.ragx("query", "pressure wings", "--root", str(other))
    raw = "\x1b" in run.out or "\x07" in run.out
    s.rows.append(Row("ANSI escape in a file name", "ragx query (human output)", run.code,
                      "shown as " + next((ln.strip() for ln in run.out.splitlines() if "evil" in ln), "?")[:60],
                      None, None, run.code == 0 and not raw))


@case("credentials", "roots")
def credentials(s: Suite) -> None:
    toml = '[embeddings]\nengine = "openai"\nmodel = "m"\nbase_url = "http://alice:s3cret-pw@127.0.0.1:9/v1"\nmax_retries = 0\ntimeout = 2.0\n'
    (s.corpus / "ragx.toml").write_text(toml)
    for args in (("index",), ("doctor",), ("doctor", "--json"), ("version", "--json"), ("--version",)):
        run = s.ragx(*args, "--root", str(s.corpus)) if args[0] in ("index", "doctor") else s.ragx(*args, cwd=s.corpus)
        expect = {"index": 2, "doctor": 1}.get(args[0], 0)
        s.record(f"credentials in base_url: ragx {' '.join(args)}", f"ragx {' '.join(args)}", run, expect=expect,
                 absent=("s3cret",), check_intact=False, note="password never printed" if "s3cret" not in run.out + run.err else "PASSWORD PRINTED")
    s.write_toml()


class _EchoingServer:
    """An OpenAI-compatible embeddings endpoint on 127.0.0.1 that wants one Authorization header and
    refuses any other, quoting what it was sent (as real servers do with a wrong key)."""

    def __init__(self, authorization: str, dim: int = 64):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        wanted = authorization

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                sent = self.headers.get("Authorization")
                if sent != wanted:
                    status, doc = 401, {"error": {"message": f"Incorrect API key provided: {sent}"}}
                else:
                    texts = body.get("input") or []
                    texts = [texts] if isinstance(texts, str) else texts
                    rows = np.random.default_rng(len(texts)).standard_normal((len(texts), dim))
                    status, doc = 200, {"data": [{"index": i, "embedding": r.tolist()} for i, r in enumerate(rows)]}
                raw = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@case("credentials-2", "roots")
def credentials_2(s: Suite) -> None:
    """Issue 42, item 4: a password in a base_url with a bad port, a key a server echoes back, and
    user:password@ URLs that never authenticated."""
    import base64

    key, password = "sk-echo-5e3cf1d2a9b8", "pw-echo-77aa"
    server = _EchoingServer("Basic " + base64.b64encode(f"alice:{password}".encode()).decode())
    cases = [
        ("password in a base_url without a port (http.client reads it as one)", "http://alice:s3cret-pw@127.0.0.1/v1", {}, 2, ("s3cret",)),
        ("password in a base_url whose port is not a number", "http://alice:s3cret-pw@127.0.0.1:9x/v1", {}, 2, ("s3cret",)),
        ("API key echoed by the server (HTTP 401)", server.url, {"OPENAI_API_KEY": key}, 2, (key, key[:10])),
        ("user:password@ base_url against a live server (basic auth)", server.url.replace("//", f"//alice:{password}@"), {}, 0,
         (password,)),
    ]
    try:
        for label, url, extra_env, expect, secrets in cases:
            s.write_toml()
            (s.corpus / "ragx.toml").write_text('[embeddings]\nengine = "openai"\nmodel = "m"\n'
                                               f'base_url = "{url}"\nmax_retries = 0\ntimeout = 5.0\n')
            env = dict(s.env, **extra_env)
            work = s.work / "credentials-corpus"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            (work / "ragx.toml").write_text((s.corpus / "ragx.toml").read_text())
            (work / "a.md").write_text("# stars\n\ncomets and planets\n")
            for args in (("index",), ("doctor",)):
                run = s.ragx(*args, "--root", str(work), env=env)
                want = expect if args[0] == "index" else run.code  # doctor: its verdict varies, its text must not leak
                s.record(f"{label}: ragx {args[0]}", f"ragx {args[0]}", run, expect=want, absent=secrets, check_intact=False,
                         note="never printed" if not any(x in run.out + run.err for x in secrets) else "SECRET PRINTED")
    finally:
        server.close()
        s.write_toml()
        shutil.rmtree(s.work / "credentials-corpus", ignore_errors=True)


@case("hub-offline", "roots")
def hub_offline(s: Suite) -> None:
    """Issue 42, item 5: rerank.model = "no/such-model" with no hub kept a query busy 395 s retrying,
    then exited 0. Now one line within seconds (query: a warning, the results unreranked; doctor: FAIL)."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on: the hub's address, refused at once
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    env = {k: v for k, v in s.env.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["HF_ENDPOINT"] = f"http://127.0.0.1:{closed}"
    s.write_toml('[rerank]\nmodel = "no/such-model"\n')
    try:
        for args, expect in ((("query", "wings"), 0), (("doctor",), 1)):
            run = s.ragx(*args, "--root", str(s.corpus), env=env, timeout=120)
            row = s.record('rerank.model = "no/such-model", hub unreachable', "ragx " + " ".join(args), run, expect=expect,
                           contains=("not in the local model cache",), check_intact=False, note=f"{run.seconds:.1f} s")
            row.ok = row.ok and run.seconds <= 30  # d78b077: 395 s
    finally:
        s.write_toml()


# --------------------------------------------------------------------------------------------
# the disk (item 4)

def _change_a_file(s: Suite) -> Callable[[], None]:
    path = s.corpus / "doc1.md"
    before = path.read_bytes()
    path.write_bytes(before + b"\nmore about wing pressure and lift\n")
    return lambda: path.write_bytes(before)


def _mount(*args: str) -> str | None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    return None if proc.returncode == 0 else (proc.stderr.strip() or f"mount exit {proc.returncode}")


def _umount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], check=False)  # still busy: detach it anyway


@case("disk-full", "disk")
def disk_full(s: Suite) -> None:
    undo = _change_a_file(s)
    used = sum(p.stat().st_size for p in s.index_dir.rglob("*") if p.is_file())
    size_kb = used // 1024 + 256
    backup = s.backup()
    problem = None if os.geteuid() == 0 else "needs root to mount a tmpfs"
    problem = problem or _mount("-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(s.index_dir))
    if problem:
        undo()
        s.record("disk full (tmpfs)", "ragx index", None, note=f"not run: {problem}")
        return
    try:
        for p in backup.iterdir():
            (shutil.copytree if p.is_dir() else shutil.copy2)(p, s.index_dir / p.name)
        free = shutil.disk_usage(s.index_dir).free
        with open(s.index_dir / "filler", "wb") as fh:  # leave 16 KB: less than one generation needs
            fh.write(b"\0" * max(0, free - 16 * 1024))
        run = s.ragx("index", "--root", str(s.corpus), fresh=True)
        (s.index_dir / "filler").unlink()
        undo()
        s.record("disk full (tmpfs, 16 KB free)", "ragx index", run, contains=("full",))
        undo2 = _change_a_file(s)
        (s.index_dir / "filler2").write_bytes(b"\0" * max(0, shutil.disk_usage(s.index_dir).free - 16 * 1024))
        run = s.ragx("index", "--full", "--root", str(s.corpus), fresh=True)
        (s.index_dir / "filler2").unlink()
        undo2()
        s.record("disk full (tmpfs, 16 KB free)", "ragx index --full", run, contains=("full",))
    finally:
        _umount(s.index_dir)
    s.restore(backup)


@case("ulimit", "disk")
def file_size_limit(s: Suite) -> None:
    undo = _change_a_file(s)
    run = s.ragx("index", "--root", str(s.corpus), shell_prefix="ulimit -f 8")
    undo()
    s.record("file size limit (ulimit -f 8)", "ulimit -f 8; ragx index", run, contains=("size limit",))
    run = s.ragx("index", "--full", "--root", str(s.corpus), shell_prefix="ulimit -f 64")
    s.record("file size limit (ulimit -f 64)", "ulimit -f 64; ragx index --full", run, contains=("size limit",))


@case("read-only", "disk")
def read_only(s: Suite) -> None:
    undo = _change_a_file(s)
    problem = None if os.geteuid() == 0 else "needs root for a bind mount"
    _as_a_clean_run_leaves_it(s)  # issue 42: with a -wal and -shm left, read-only reading always worked
    problem = problem or _mount("--bind", str(s.index_dir), str(s.index_dir))
    if problem is None:
        problem = _mount("-o", "remount,bind,ro", str(s.index_dir))
        try:
            if problem is None:
                run = s.ragx("index", "--root", str(s.corpus), fresh=True)
                s.record("read-only .ragx (ro bind mount)", "ragx index", run, contains=("read-only",), check_intact=False)
                run = s.ragx("query", "wings", "--root", str(s.corpus), "--json", fresh=True)
                s.record("read-only .ragx (ro bind mount)", "ragx query", run, expect=0, check_intact=False,
                         note="reading a read-only index works")
                for args in (("status",), ("status", "--deep")):
                    run = s.ragx(*args, "--root", str(s.corpus), fresh=True)
                    s.record("read-only .ragx (ro bind mount)", "ragx " + " ".join(args), run, expect=0, check_intact=False)
                s.record("read-only .ragx (ro bind mount)", "ragx mcp: tools/call search", mcp_search(s, "wings"), expect=0,
                         check_intact=False)
                s.rows[-1].intact = s.intact()
        finally:
            _umount(s.index_dir)
    undo()
    if problem:
        s.record("read-only .ragx (ro bind mount)", "ragx index", None, note=f"not run: {problem}")
    s.record("after umount", "ragx status --deep", s.ragx("status", "--deep", "--root", str(s.corpus), fresh=True), expect=0)


# As root, permission bits bind only without the capabilities that override them: dropped, root reads
# and writes the index as its (non-root) owner would.
AS_OWNER = ("setpriv", "--inh-caps=-dac_override,-dac_read_search,-fowner",
            "--bounding-set=-dac_override,-dac_read_search,-fowner")


def mcp_search(s: Suite, query: str, wrap: tuple[str, ...] = ()) -> Run:
    """`ragx mcp` over stdio: initialize, then one `search` call; exit 0 when it answered results."""
    t0 = time.perf_counter()
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fault-suite", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": query}}},
    ]
    try:
        proc = subprocess.run([*wrap, *s.ragx_cmd, "mcp", "--root", str(s.corpus)], capture_output=True, timeout=300, env=s.env,
                              input="".join(json.dumps(m) + "\n" for m in messages).encode())
    except subprocess.TimeoutExpired:
        return Run(-9, "", "timed out", time.perf_counter() - t0)
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    replies = [json.loads(line) for line in out.splitlines() if line.strip().startswith("{")]
    answer = next((r for r in replies if r.get("id") == 2), {})
    result = answer.get("result") or {}
    ok = bool(result) and not result.get("isError") and '"results"' in json.dumps(result)
    return Run(0 if ok else 2, out, err if ok else (json.dumps(answer)[:300] or err), time.perf_counter() - t0)


def _as_a_clean_run_leaves_it(s: Suite) -> list[str]:
    """No -wal or -shm beside index.sqlite (a reader's connection leaves them; the last writable one
    to close removes them): the files left, which should be none."""
    con = sqlite3.connect(s.index_dir / "index.sqlite")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    con.close()
    return sorted(p.name for p in s.index_dir.glob("index.sqlite-*"))


@case("read-only-clean", "disk")
def read_only_clean(s: Suite) -> None:
    """Issue 42, item 2: the .ragx a clean run leaves (no -wal or -shm file), made read-only: searching
    works (query, status, inspect, export, MCP); an index run says it needs to write."""
    wrap = AS_OWNER if os.geteuid() == 0 and shutil.which("setpriv") else ()
    left = _as_a_clean_run_leaves_it(s)
    subprocess.run(["chmod", "-R", "a-w", str(s.index_dir)], check=True)
    label = f"chmod -R a-w .ragx{' (as its owner: root without DAC capabilities)' if wrap else ''}"
    try:
        for args in (("query", "wings", "--json"), ("status",), ("status", "--deep"), ("inspect", "communities"),
                     ("export", str(s.work / "read-only.tar"), "--force")):
            run = s.ragx(*args, "--root", str(s.corpus), wrap=wrap, fresh=True)
            s.record(label, "ragx " + " ".join(args[:2] if args[0] == "export" else args), run, expect=0, check_intact=False,
                     note=f"files beside index.sqlite: {left or 'none'}")
        s.record(label, "ragx mcp: tools/call search", mcp_search(s, "wings", wrap), expect=0, check_intact=False)
        undo = _change_a_file(s)
        run = s.ragx("index", "--root", str(s.corpus), wrap=wrap, fresh=True)
        undo()
        s.record(label, "ragx index", run, contains=("`ragx index` cannot write",), check_intact=False)
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(s.index_dir)], check=True)
        (s.work / "read-only.tar").unlink(missing_ok=True)


@case("permission", "disk")
def permission(s: Suite) -> None:
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        s.record("permission denied (nobody)", "ragx index", None, note="not run: needs root and setpriv")
        return
    undo = _change_a_file(s)
    mode = s.work.stat().st_mode
    os.chmod(s.work, 0o755)  # nobody may read the corpus; .ragx stays root's (0755): not writable for nobody
    env = dict(s.env, HOME="/tmp", RAGX_RC="/nonexistent/ragxrc")
    try:
        run = s.ragx("index", "--root", str(s.corpus), user="nobody", env=env)
    finally:
        os.chmod(s.work, mode)
        undo()
    if "Permission denied" in run.err and "ragx: error" not in run.err and run.code == 126:
        s.record("permission denied (nobody)", "ragx index", None, note=f"not run: nobody cannot start ragx ({run.err.strip()[:80]})")
        return
    s.record("permission denied (nobody, .ragx owned by root)", "setpriv --reuid=nobody ragx index", run, contains=("permission denied", ".ragx"))
    db = s.index_dir / "index.sqlite"
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode != 0:
        s.record("immutable index.sqlite (chattr +i)", "ragx index", None, note="not run: chattr +i is not supported here")
        return
    try:
        undo = _change_a_file(s)
        run = s.ragx("index", "--root", str(s.corpus))
        undo()
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=False)
    s.record("immutable index.sqlite (chattr +i)", "ragx index", run, contains=("cannot be written",))


# --------------------------------------------------------------------------------------------
# corruption (items 2, 4, 7)

def _garbage(path: Path, offset: int, length: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(random.Random(3).randbytes(length))


@case("sqlite-garbage-page", "corruption")
def sqlite_garbage(s: Suite) -> None:
    backup = s.backup()
    db = s.index_dir / "index.sqlite"
    pages = db.stat().st_size // 4096
    _garbage(db, 4096 * (pages // 2), 4096)
    for args in (("status", "--deep"), ("query", "wings"), ("index",), ("index", "--full")):
        run = s.ragx(*args, "--root", str(s.corpus))
        expect = 2 if args[0] in ("status",) or args == ("index", "--full") else run.code if run.code in (0, 2) else 2
        s.record(f"garbage page in index.sqlite (page {pages // 2} of {pages})", "ragx " + " ".join(args), run, expect=expect,
                 check_intact=False, contains=("delete the .ragx folder",) if run.code else (), one_line=args[0] != "status",
                 note="" if run.code else "this page is not read by the command")
    s.restore(backup)


@case("sqlite-truncated", "corruption")
def sqlite_truncated(s: Suite) -> None:
    backup = s.backup()
    db = s.index_dir / "index.sqlite"
    os.truncate(db, db.stat().st_size // 2)
    for args in (("status",), ("query", "wings"), ("index",)):
        run = s.ragx(*args, "--root", str(s.corpus))
        s.record("truncated index.sqlite", "ragx " + " ".join(args), run, contains=("delete the .ragx folder",), check_intact=False)
    shutil.rmtree(s.index_dir)  # the documented recovery path, followed as written
    run = s.ragx("index", "--root", str(s.corpus))
    info = s.status()
    s.rows.append(Row("truncated index.sqlite: the hint followed", "rm -rf .ragx && ragx index", run.code, run.message, None,
                      bool(info.get("consistent")), run.code == 0 and bool(info.get("consistent")),
                      note=f"{info.get('chunks')} chunks, consistent"))
    s.restore(backup)


@case("hnsw-corrupt", "corruption")
def hnsw_corrupt(s: Suite) -> None:
    backup = s.backup()
    gen = s.baseline[0]
    hnsw = s.index_dir / f"gen-{gen:06d}" / "vectors.hnsw"
    _garbage(hnsw, 0, min(4096, hnsw.stat().st_size // 2))
    run = s.ragx("query", "wings", "--root", str(s.corpus))
    s.record("corrupt vectors.hnsw", "ragx query", run, check_intact=False)
    run = s.ragx("status", "--deep", "--root", str(s.corpus))
    s.record("corrupt vectors.hnsw", "ragx status --deep", run, check_intact=False, contains=("INCONSISTENT",), one_line=False)
    run = s.ragx("index", "--full", "--root", str(s.corpus))
    info = s.status()
    s.rows.append(Row("corrupt vectors.hnsw", "ragx index --full (repair)", run.code, run.message, None,
                      bool(info.get("consistent")), run.code == 0 and bool(info.get("consistent"))))
    s.restore(backup)


@case("vectors-corrupt", "corruption")
def vectors_corrupt(s: Suite) -> None:
    backup = s.backup()
    npy = s.index_dir / f"gen-{s.baseline[0]:06d}" / "vectors.npy"
    _garbage(npy, 128, max(0, npy.stat().st_size - 256))
    run = s.ragx("status", "--deep", "--root", str(s.corpus))
    s.record("corrupt vectors.npy", "ragx status --deep", run, check_intact=False, contains=("INCONSISTENT",), one_line=False)
    run = s.ragx("index", "--full", "--root", str(s.corpus))
    q = s.ragx("query", "wings", "--root", str(s.corpus), "--json")
    info = s.status()
    ok = run.code == 0 and q.code == 0 and bool(info.get("consistent"))
    s.rows.append(Row("corrupt vectors.npy", "ragx index --full, then ragx query", q.code, q.message, None, bool(info.get("consistent")),
                      ok))
    s.restore(backup)


def plant_deleted_entries(index_dir: Path, ghosts: int = 500) -> None:
    """Make the current generation's ANN file hold deleted entries, as a compacting run that removed
    more chunks than it added wrote it before issue 42: `ghosts` entries under ids no chunk has are
    added, then removed; the new checksum is recorded where the writer records it (manifest,
    verified.json), so the file is what a writer wrote as far as every check can tell."""
    from usearch.index import Index

    from ragx.index.verified import file_checksum, record

    con = sqlite3.connect(index_dir / "index.sqlite")
    try:
        manifest = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM manifest")}
        folder = index_dir / f"gen-{int(manifest['generation']):06d}"
        index = Index.restore(str(folder / "vectors.hnsw"))
        ids = np.arange(10**9, 10**9 + ghosts)
        index.add(ids, np.random.default_rng(5).standard_normal((ghosts, index.ndim)).astype(np.float32))
        index.remove(ids)
        index.save(str(folder / "vectors.hnsw"))
        checksums = dict(manifest["checksums"], **{"vectors.hnsw": file_checksum(folder / "vectors.hnsw")})
        with con:
            con.execute("UPDATE manifest SET value = ? WHERE key = 'checksums'", (json.dumps(checksums, sort_keys=True),))
    finally:
        con.close()
    record(folder, checksums)


@case("ann-deleted-entries", "corruption")
def ann_deleted_entries(s: Suite) -> None:
    """Issue 42, item 0: an ANN file holding deleted entries (the swe-loc pytest replay) aborted every
    query and index run (SIGABRT) on d78b077."""
    backup = s.backup()
    plant_deleted_entries(s.index_dir)
    for args in (("query", "wings", "--json"), ("status", "--deep")):
        run = s.ragx(*args, "--root", str(s.corpus), fresh=True)
        s.record("vectors.hnsw holding 500 deleted entries", "ragx " + " ".join(args), run, expect=0, check_intact=False)
    undo = _change_a_file(s)
    run = s.ragx("index", "--root", str(s.corpus), fresh=True)
    undo()
    s.record("vectors.hnsw holding 500 deleted entries", "ragx index (a file changed)", run, expect=0, check_intact=False)
    s.restore(backup)


@case("label-terms-damaged", "corruption")
def label_terms_damaged(s: Suite) -> None:
    """Issue 42, item 1: a damaged .ragx/label-terms.npz made every index run, --full too, exit 2."""
    backup = s.backup()
    cache = s.index_dir / "label-terms.npz"
    size = cache.stat().st_size
    for label, damage in (("truncated", lambda: os.truncate(cache, size // 2)), ("a flipped bit in", lambda: _flip(cache, size // 2))):
        damage()
        run = s.ragx("index", "--full", "--root", str(s.corpus))
        s.record(f"{label} label-terms.npz", "ragx index --full", run, expect=0, check_intact=False)
        s.restore(backup)


@case("manifest-bad-value", "corruption")
def manifest_bad_value(s: Suite) -> None:
    """Issue 42, item 3: a manifest value ragx did not write was `internal error: ValueError`."""
    backup = s.backup()
    con = sqlite3.connect(s.index_dir / "index.sqlite")
    with con:
        con.execute("UPDATE manifest SET value = ? WHERE key = 'generation'", ('"x"',))
    con.close()
    for args in (("query", "wings"), ("status",), ("index",)):
        run = s.ragx(*args, "--root", str(s.corpus))
        s.record('manifest generation = "x"', "ragx " + " ".join(args), run, contains=("generation", "ragx index --full"),
                 absent=("internal error",), check_intact=False)
    run = s.ragx("index", "--full", "--root", str(s.corpus))
    s.record('manifest generation = "x"', "ragx index --full (the repair)", run, expect=0, check_intact=False)
    s.restore(backup)


def _sql(s: Suite, statement: str, args: tuple = ()) -> list[tuple]:
    con = sqlite3.connect(s.index_dir / "index.sqlite")
    try:
        with con:
            return con.execute(statement, args).fetchall()
    finally:
        con.close()


@case("chunk-text-edited", "corruption")
def chunk_text_edited(s: Suite) -> None:
    """Issue 42, item 6: a chunk's text edited inside index.sqlite passed integrity_check and
    `status --deep`, and queries returned text that is in no file."""
    backup = s.backup()
    top = s.ragx("query", "wings", "--json", "--root", str(s.corpus))
    chunk = json.loads(top.out)["results"][0]["chunk_id"]
    _sql(s, "UPDATE chunks SET text = text || ' planted words' WHERE id = ?", (chunk,))
    label = f"chunk {chunk}'s text edited inside index.sqlite"
    run = s.ragx("status", "--deep", "--root", str(s.corpus))
    s.record(label, "ragx status --deep", run, contains=("INCONSISTENT", "checksums", "ragx index --full"), one_line=False,
             check_intact=False)
    run = s.ragx("query", "wings", "--json", "--root", str(s.corpus))
    s.record(label, "ragx query", run, contains=("checksums", "ragx index --full"), absent=("planted",), check_intact=False)
    run = s.ragx("index", "--full", "--root", str(s.corpus))
    info = s.status()
    s.rows.append(Row(label, "ragx index --full (the repair)", run.code, run.message, None, bool(info.get("consistent")),
                      run.code == 0 and bool(info.get("consistent"))))
    s.restore(backup)


def plant_infinities(index_dir: Path) -> None:
    """+inf and -inf in two columns of every stored vector, written in place with the file's device,
    inode, size and modification time kept: what a query trusts without hashing (verified.py)."""
    from ragx.index.verified import record

    con = sqlite3.connect(index_dir / "index.sqlite")
    try:
        manifest = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM manifest")}
    finally:
        con.close()
    folder = index_dir / f"gen-{int(manifest['generation']):06d}"
    record(folder, manifest["checksums"])  # the identities as the writer left them (a restored copy has new inodes)
    st = (folder / "vectors.npy").stat()
    vectors = np.load(folder / "vectors.npy", mmap_mode="r+")
    vectors[:, 0], vectors[:, 1] = np.inf, -np.inf
    vectors.flush()
    del vectors
    os.utime(folder / "vectors.npy", ns=(st.st_atime_ns, st.st_mtime_ns))


@case("vectors-flip-same-identity", "corruption")
def vectors_flip_same_identity(s: Suite) -> None:
    """Issue 42, item 6: damage that keeps vectors.npy's inode, size and mtime leaked numpy's 2-line
    RuntimeWarning before the error line (a query), and an index run committed it (internal error next)."""
    backup = s.backup()
    plant_infinities(s.index_dir)
    label = "vectors.npy holding infinities, inode/size/mtime kept"
    run = s.ragx("query", "wings", "--json", "--root", str(s.corpus), fresh=True)
    s.record(label, "ragx query", run, contains=("non-finite", "ragx index --full"), absent=("Warning",), check_intact=False)
    s.record(label, "ragx mcp: tools/call search", mcp_search(s, "wings"), expect=2, absent=("Warning",), one_line=False,
             check_intact=False)
    undo = _change_a_file(s)
    run = s.ragx("index", "--root", str(s.corpus), fresh=True)
    s.record(label, "ragx index (a file changed)", run, contains=("non-finite", "ragx index --full"), absent=("Warning",),
             check_intact=False)
    undo()
    run = s.ragx("index", "--full", "--root", str(s.corpus), fresh=True)
    s.record(label, "ragx index --full (the repair)", run, expect=0, absent=("Warning",), check_intact=False)
    s.restore(backup)


@case("next-chunk-id", "corruption")
def next_chunk_id(s: Suite) -> None:
    """Issue 42, item 6: a next_chunk_id that went back was `internal error: IndexError`; a full run
    repairing a bad one restarted ids from 1, giving live chunks' ids to other texts."""
    backup = s.backup()
    for value, expect in (("3", 0), ("-4", 2), ("68719476737", 2)):
        old = {r[0] for r in _sql(s, "SELECT id FROM chunks")}
        _sql(s, "UPDATE manifest SET value = ? WHERE key = 'next_chunk_id'", (value,))
        undo = _change_a_file(s)
        run = s.ragx("index", "--root", str(s.corpus))
        args = ("index",) if expect == 0 else ("index", "--full")
        if expect:
            s.record(f"next_chunk_id = {value}", "ragx index", run, contains=("next_chunk_id", "ragx index --full"),
                     absent=("internal error",), check_intact=False)
            run = s.ragx(*args, "--root", str(s.corpus))
        new = {r[0] for r in _sql(s, "SELECT id FROM chunks")} - old
        fresh = bool(new) and min(new) > max(old)
        row = s.record(f"next_chunk_id = {value}", "ragx " + " ".join(args), run, expect=0, check_intact=False,
                       note=f"new ids {min(new, default=0)}..{max(new, default=0)}, old ids up to {max(old)}")
        row.ok = row.ok and fresh and s.status().get("consistent", False)
        undo()
        s.restore(backup)


def _flip(path: Path, offset: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)[0]
        fh.seek(offset)
        fh.write(bytes([byte ^ 0x10]))


# --------------------------------------------------------------------------------------------
# drift (item 5)

@case("not-utf8-drift", "drift")
def not_utf8_drift(s: Suite) -> None:
    bad = s.corpus / "latin1.md"
    bad.write_bytes(b"# caf\xe9 cr\xe8me\n\nwings\n")
    first = s.ragx("index", "--root", str(s.corpus))
    gens = [s.status().get("generation")]
    for _ in range(2):
        s.ragx("index", "--root", str(s.corpus))
        gens.append(s.status().get("generation"))
    info = s.status()
    drift = info.get("drift") or {}
    ok = first.code == 0 and len(set(gens)) == 1 and drift.get("new") == 0 and info.get("skipped", 0) >= 1
    s.rows.append(Row("a file that is not UTF-8", "ragx index x3, ragx status", first.code,
                      next((ln for ln in first.err.splitlines() if "latin1.md" in ln), "")[:100], None, bool(info.get("consistent")), ok,
                      note=f"generations after runs 1-3: {gens}; drift {drift}; skipped {info.get('skipped')}"))
    bad.unlink()
    s.ragx("index", "--root", str(s.corpus))
    s.rebaseline()


# --------------------------------------------------------------------------------------------
# the race (item 1)

@case("race", "race")
def race(s: Suite, queries: int = 60) -> None:
    """`ragx index` in a loop (each run appends to doc1.md) while `ragx query --json` runs: errors, and
    results whose file, lines or text differ from what the store held for that chunk id (ids are never
    reused and a chunk's row never changes, so one map of every id ever committed is the truth; a thread
    keeps it, reading the store every 20 ms)."""
    import threading

    truth: dict[int, tuple] = {}
    done_flag = threading.Event()

    def remember() -> None:
        try:
            con = sqlite3.connect(f"file:{s.index_dir / 'index.sqlite'}?mode=ro", uri=True)
            try:
                rows = con.execute("SELECT c.id, f.path, c.line_start, c.line_end, c.text FROM chunks c JOIN files f ON f.id = c.file_id")
                truth.update({r[0]: r[1:] for r in rows})
            finally:
                con.close()
        except sqlite3.Error:
            pass  # busy for a moment: the next poll reads it

    def poll() -> None:
        while not done_flag.wait(0.02):
            remember()

    remember()
    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    original = (s.corpus / "doc1.md").read_bytes()
    stop = time.monotonic() + 900
    writer = subprocess.Popen(
        ["bash", "-c", 'for i in $(seq 1 2000); do echo "x $RANDOM wing pressure" >> doc1.md; "$@" index --root . >/dev/null 2>&1; done',
         "bash", *s.ragx_cmd], cwd=s.corpus, env=s.env)
    errors = mislabelled = unverified = done = results_seen = 0
    messages: dict[str, int] = {}
    gen_before = s.status().get("generation") or 0
    try:
        while done < queries and time.monotonic() < stop:
            run = s.ragx("query", "pressure distribution on wings", "--root", str(s.corpus), "--json", "--top", "20", fresh=True)
            done += 1
            try:
                results = json.loads(run.out)["results"] if run.code in (0, 1) else None
            except (json.JSONDecodeError, KeyError):
                results = None
            if results is None:
                errors += 1
                key = run.message[:120] or f"exit {run.code}"
                messages[key] = messages.get(key, 0) + 1
                continue
            remember()
            for r in results:
                results_seen += 1
                want = truth.get(r["chunk_id"])
                if want is None:
                    unverified += 1
                elif want[:3] != (r["file"], r["line_start"], r["line_end"]) or not want[3].startswith(r["text"][:200]):
                    mislabelled += 1
    finally:
        writer.terminate()
        writer.wait()
        done_flag.set()
        poller.join()
        commits = (s.status().get("generation") or 0) - gen_before
        (s.corpus / "doc1.md").write_bytes(original)
        s.ragx("index", "--root", str(s.corpus))
        s.rebaseline()
    s.rows.append(Row(f"queries during index commits ({done} CLI queries, {commits} commits)", "ragx index loop + ragx query --json", None,
                      f"{errors} errors, {mislabelled} mislabelled of {results_seen} results ({unverified} unverifiable)", None,
                      s.intact(), errors == 0 and mislabelled == 0, "",
                      note="; ".join(f"{n}x {m}" for m, n in sorted(messages.items(), key=lambda kv: -kv[1])[:2])))


# --------------------------------------------------------------------------------------------

def table(rows: list[Row]) -> str:
    def cell(value) -> str:
        text = "" if value is None else ("yes" if value is True else "no" if value is False else str(value))
        return text.replace("|", "\\|").replace("\n", " ").replace("\x1b", "\\x1b")[:180]

    lines = ["| case | command | exit | message | one line | index intact | ok | needs | note |", "|---|---|---:|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| " + " | ".join(cell(v) for v in (r.case, f"`{r.command}`", r.code, r.message, r.one_line, r.intact,
                                                           "**ok**" if r.ok else "FAIL", "core" if r.needs else "", r.note)) + " |")
    return "\n".join(lines)


def run_suite(ragx_cmd: list[str], work: Path, env: dict[str, str], *, toml_base: str = "", only: list[str] | None = None,
              race_queries: int = 60) -> Suite:
    suite = Suite(ragx_cmd, work, env, toml_base)
    build_corpus(suite.corpus)
    suite.write_toml()
    first = suite.ragx("index", "--root", str(suite.corpus))
    if first.code != 0:
        raise SystemExit(f"could not index the test corpus: {first.err[-2000:]}")
    suite.rebaseline()
    for name, _, fn in CASES:
        if only and name not in only:
            continue
        if name == "race":
            race(suite, race_queries)
        else:
            fn(suite)
    return suite


# The bounded form (CI): the real CLI entry point with a hashing embedder registered (tests/fakes.py).
HASH_CLI = (
    "import sys; sys.path.insert(0, {tests!r}); import fakes_registration; "
    "from ragx.cli.main import run; run()"
)
HASH_TOML = '[embeddings]\nengine = "test-hash"\n'


def hash_engine_cli() -> list[str]:
    return [sys.executable, "-c", HASH_CLI.format(tests=str(REPO / "tests"))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ragx", default=str(REPO / ".venv" / "bin" / "ragx"), help="the ragx executable")
    ap.add_argument("--out", type=Path, default=REPO / "reports" / "fault-suite.md")
    ap.add_argument("--only", nargs="*", help=f"cases: {', '.join(n for n, _, _ in CASES)}")
    ap.add_argument("--race-queries", type=int, default=200)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--engine", choices=("real", "test-hash"), default="real",
                    help="test-hash: a hashing embedder instead of the model (what CI runs)")
    args = ap.parse_args()
    env = dict(os.environ, RAGX_RC=os.environ.get("RAGX_RC", "/nonexistent/ragxrc"), NO_COLOR="1", COLUMNS="200")
    work = Path(tempfile.mkdtemp(prefix="ragx-faults-"))
    t0 = time.perf_counter()
    try:
        cmd, toml = ([args.ragx], "") if args.engine == "real" else (hash_engine_cli(), HASH_TOML)
        suite = run_suite(cmd, work, env, toml_base=toml, only=args.only, race_queries=args.race_queries)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    seconds = time.perf_counter() - t0
    md = table(suite.rows)
    failed = [r for r in suite.rows if not r.ok]
    head = (
        f"# Fault suite (issue 11)\n\n`python scripts/check/fault_suite.py --race-queries {args.race_queries}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {seconds:.0f} s, "
        f"{'the real model' if args.engine == 'real' else 'the test-hash embedder'}. "
        f"{len(suite.rows) - len(failed)} of {len(suite.rows)} rows ok; rows marked `core` need {CORE}.\n\n"
        "*one line*: exactly one `ragx: error:` line on stderr and no traceback. *index intact*: `ragx status --deep` "
        "consistent, same generation and chunk count as before the case.\n\n"
    )
    print(md)
    print(f"\n{len(suite.rows) - len(failed)}/{len(suite.rows)} ok in {seconds:.0f} s", file=sys.stderr)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(head + md + "\n", encoding="utf-8")
    sys.exit(0 if not [r for r in failed if not r.needs] else 1)


if __name__ == "__main__":
    main()
