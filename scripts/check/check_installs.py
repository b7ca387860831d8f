"""Each install path README.md shows, run exactly as the README writes it, then `ragx index` and
`ragx query` from that install in a folder outside the repository (what a new user does first).

    python scripts/check/check_installs.py [full] [light] [pipx] [uv] [--keep]     (default: all four)

The commands of a path are the fenced block right after its `<!-- install: NAME -->` marker in
README.md, run with bash, line by line as written (`set -euo pipefail`), from a copy of the repository
(its tracked and not-ignored files), with HOME, pipx's and uv's tool folders and the model cache in a
fresh temporary folder. pipx and uv come from PyPI into a throwaway venv when they are not on PATH.
`full` is scripts/install/bootstrap, which .ci/run itself runs first in the checkout: here its block must be
among .ci/run's lines as written, and the checkout's .venv/bin/ragx answers the query.

Prints `[install:NAME] ...` lines (the commands, then index and query figures); exits 1 on the first
failure with the failing step's output. A test (tests/test_readme_commands.py) checks that every
marked block is one this script knows how to find the `ragx` of.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!-- install: (\w+) -->\s*\n```bash\n(.*?)```", re.S)
# Where each path's `ragx` ends up, relative to the copy of the repository or to the tool bin folder.
# pipx and uv each get a bin folder of their own: both would put a `ragx` there, and uv refuses to overwrite.
WHERE = {"full": "checkout:.venv/bin/ragx", "light": "copy:.venv-light/bin/ragx", "pipx": "bin-pipx:ragx", "uv": "bin-uv:ragx"}
# Each path's environment (its size is printed), relative to the copy or to the temporary folder; the
# torch-free paths are checked to have no torch.
ENV_DIR = {"light": "copy:.venv-light", "pipx": "work:pipx/venvs/ragx", "uv": "work:uv-tools/ragx"}
NOTES = {
    "alpha.md": "# Lighthouse\n\nThe lamp of the northern lighthouse failed in the November gale.\n",
    "beta.md": "# Budget\n\nDues were raised by two percent and the dredging contract renewed.\n",
    "gamma.md": "# Garden\n\nPrune roses in winter, just above an outward-facing bud.\n",
}
QUESTION, EXPECTED = "when did the lighthouse lamp stop working", "alpha.md"
PDF_TEXT = "Harbour board minutes: the dredging contract was renewed for five years."
# The paths that read PDFs (pypdf installed); the tool installs list the PDF as skipped, with the reason.
READS_PDF = {"full", "light"}


def tiny_pdf(text: str) -> bytes:
    """A one-page PDF showing `text` (Helvetica), written by hand so this script needs no pypdf."""
    stream = f"BT /F1 11 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def install_blocks(readme: Path = ROOT / "README.md") -> dict[str, str]:
    """{path name: its commands} for every `<!-- install: NAME -->` block of the README."""
    return {name: body for name, body in MARKER.findall(readme.read_text(encoding="utf-8"))}


def say(name: str, line: str) -> None:
    print(f"[install:{name}] {line}", flush=True)


def run(name: str, cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 1200) -> str:
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        say(name, f"FAILED (exit {proc.returncode}): {' '.join(cmd)}")
        sys.stdout.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(1)
    say(name, f"ok in {time.monotonic() - t0:.0f} s: {' '.join(cmd)[:160]}")
    return proc.stdout


def copy_repository(dest: Path) -> None:
    """The repository as a fresh clone has it, plus uncommitted edits (tracked and not ignored files)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True)
    for rel in filter(None, listed.stdout.decode().split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def tools_on_path(work: Path, env: dict[str, str]) -> None:
    """pipx and uv on PATH: the machine's own, else fresh from PyPI in a throwaway venv."""
    if all(shutil.which(tool, path=env["PATH"]) for tool in ("pipx", "uv")):
        return
    venv = work / "tools"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "pipx", "uv"], check=True, env=env)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"


def environment(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON", "PIPX_", "UV_"))}
    env |= {
        "HOME": str(work / "home"), "PIPX_HOME": str(work / "pipx"), "PIPX_BIN_DIR": str(work / "bin-pipx"),
        "UV_TOOL_DIR": str(work / "uv-tools"), "UV_TOOL_BIN_DIR": str(work / "bin-uv"),
        "UV_PYTHON_DOWNLOADS": "never",  # the machine's Python; no interpreter downloads (registries only)
        "RAGX_CACHE_DIR": str(work / "model-cache"), "RAGX_PROGRESS": "plain",
    }
    (work / "home").mkdir()
    return env


def first_use(name: str, ragx: Path, work: Path, env: dict[str, str]) -> None:
    """`ragx index` and `ragx query` from the installed ragx, in a folder outside the repository."""
    corpus, elsewhere = work / f"corpus-{name}", work / f"cwd-{name}"
    corpus.mkdir()
    elsewhere.mkdir()
    for file, text in NOTES.items():
        (corpus / file).write_text(text, encoding="utf-8")
    (corpus / "minutes.pdf").write_bytes(tiny_pdf(PDF_TEXT))
    report = json.loads(run(name, [str(ragx), "index", "--root", str(corpus), "--json"], elsewhere, env))
    say(name, f"index: {report['files']} files, {report['chunks']} chunks in {report['seconds']:.1f} s")
    check_pdf(name, ragx, corpus, elsewhere, env)
    doc = json.loads(run(name, [str(ragx), "query", QUESTION, "--root", str(corpus), "--json", "--top", "3"], elsewhere, env))
    top = doc["results"][0]["file"] if doc["results"] else None
    say(name, f"query {QUESTION!r}: top result {top}")
    if top != EXPECTED:
        say(name, f"FAILED: expected {EXPECTED}")
        raise SystemExit(1)


def check_pdf(name: str, ragx: Path, corpus: Path, elsewhere: Path, env: dict[str, str]) -> None:
    """Indexed where pypdf is installed; elsewhere skipped with the reason, and no drift left behind."""
    status = json.loads(run(name, [str(ragx), "status", "--root", str(corpus), "--json"], elsewhere, env))
    skipped = {row["path"]: row["reason"] for row in status.get("not_indexed", {}).get("skipped", [])}
    indexed = status["files"] == len(NOTES) + 1
    expected = name in READS_PDF
    if status["drift"]["new"] or indexed != expected or (not expected and "pypdf" not in skipped.get("minutes.pdf", "")):
        say(name, f"FAILED: the PDF: files {status['files']}, drift {status['drift']}, skipped {skipped}")
        raise SystemExit(1)
    say(name, "PDF indexed" if indexed else f"PDF skipped, no drift: {skipped['minutes.pdf']}")


def check_full(block: str, work: Path, env: dict[str, str]) -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for line in filter(None, (raw.split("#")[0].strip() for raw in block.splitlines())):
        if line not in ci:
            say("full", f"FAILED: .ci/run does not run the README's {line!r}")
            raise SystemExit(1)
        say("full", f"run by .ci/run as written: {line}")
    first_use("full", ROOT / ".venv" / "bin" / "ragx", work, env)


def check(name: str, block: str, work: Path, env: dict[str, str]) -> None:
    if name == "full":
        return check_full(block, work, env)
    copy = work / f"repo-{name}"
    copy.mkdir()
    copy_repository(copy)
    for line in block.strip().splitlines():
        say(name, f"$ {line}")
    run(name, ["bash", "-euo", "pipefail", "-c", block], copy, env)
    base, rel = WHERE[name].split(":")
    first_use(name, (copy if base == "copy" else work / base) / rel, work, env)
    base, rel = ENV_DIR[name].split(":")
    venv = (copy if base == "copy" else work) / rel
    if subprocess.run([str(venv / "bin" / "python"), "-c", "import torch"], capture_output=True).returncode == 0:
        say(name, "FAILED: torch is installed; this path promises the model without it")
        raise SystemExit(1)
    mb = subprocess.run(["du", "-sm", str(venv)], capture_output=True, text=True).stdout.split()[0]
    say(name, f"no torch; the environment holds {mb} MB after first use")


def main(argv: list[str]) -> int:
    keep = "--keep" in argv
    blocks = install_blocks()
    names = [a for a in argv if not a.startswith("--")] or list(blocks)
    unknown = [n for n in names if n not in blocks or n not in WHERE]
    if unknown:
        print(f"check_installs: no install block or no known ragx location for {unknown}; README has {list(blocks)}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="ragx-installs-"))
    env = environment(work)
    if {"pipx", "uv"} & set(names):
        tools_on_path(work, env)
    try:
        for name in names:
            t0 = time.monotonic()
            check(name, blocks[name], work, env)
            say(name, f"PASSED in {time.monotonic() - t0:.0f} s")
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
