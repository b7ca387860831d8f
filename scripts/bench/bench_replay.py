#!/usr/bin/env python
"""Replay real repository history through incremental index runs: every swe-loc instance's tree, in
commit order, written into one folder per repository, `ragx index` after each, then a query.

    nice -n 10 python scripts/bench/bench_replay.py [--data ../shared/data/swe-loc] [--repo pytest-dev/pytest ...]
        [--out reports/replay.md] [--engine real|test-hash] [--vector-cache DIR]

For each repository of ../shared/data/swe-loc (git bundles, README there), the instances are taken in
base-commit time order. Each tree is archived from the bundle and synced into the same folder the
way a checkout moves: files whose bytes differ are written, files the new tree lacks are deleted,
the rest are left alone (so their mtimes stay and the run re-reads only what changed). Then
`ragx index` (incremental: only the changed files are chunked and embedded) and `ragx query` with
the instance's issue text (its first 300 characters), both as real CLI processes. A process killed
by a signal (an abort: exit 134 / -6, a segfault: -11) is counted as an abort; any other non-zero
exit as an error. The issue 42 abort appeared here (pytest: 5221, 5227, 5103, 5413 in one folder).

The first run of each repository embeds its whole tree (a few thousand chunks with the real model);
later runs embed only what changed. `--vector-cache DIR` takes the vectors the same model already
produced for the same texts from an eval vector cache (`ragx eval snapshots` fills one), so a replay
of the real model's index runs finishes in minutes; every index run and query is still a ragx process
of its own. Writes a markdown table (one row per run) and prints a summary;
exits 1 if any run aborted or failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# ../shared beside the main checkout, or beside the folder of worktrees
DATA = next((p / "shared" / "data" / "swe-loc" for p in (REPO.parent, REPO.parent.parent) if (p / "shared").is_dir()),
            REPO.parent / "shared" / "data" / "swe-loc")
HASH_CLI = "import sys; sys.path.insert(0, {tests!r}); import fakes_registration; from ragx.cli.main import run; run()"
# The real CLI, its configured embedder wrapped in eval's vector cache (ragx/eval/vector_cache.py): texts
# whose vectors the cache holds (by model identity and text key) are not embedded again. The index is
# the one the engine would build; queries pass through to the model.
CACHED_CLI = (
    "from pathlib import Path; from ragx import api; from ragx.eval.vector_cache import CachedEmbedder; "
    "made = api.Corpus._make_embedder; api.Corpus._make_embedder = lambda self: CachedEmbedder(made(self), Path({cache!r})); "
    "from ragx.cli.main import run; run()"
)
HASH_TOML = '[embeddings]\nengine = "test-hash"\n'
QUERY_CHARS = 300


def instances(data: Path, repos: list[str] | None) -> dict[str, list[dict]]:
    """Instances per repository (in the order of `repos` when given), each in base-commit time order."""
    by_repo: dict[str, list[dict]] = defaultdict(list)
    with open(data / "instances.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if not repos or row["repo"] in repos:
                by_repo[row["repo"]].append(row)
    order = repos or sorted(by_repo)  # the order asked for (the longest history first, say), else by name
    return {repo: sorted(by_repo[repo], key=lambda r: (r["base_commit_time"], r["instance_id"])) for repo in order if repo in by_repo}


def archive(git_dir: Path, tag: str, target: Path) -> None:
    target.mkdir(parents=True)
    tar = subprocess.run(["git", "-C", str(git_dir), "archive", tag], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=tar, check=True)


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".ragx" not in p.relative_to(root).parts
            and p.name != "ragx.toml"}


def sync(tree: Path, work: Path) -> tuple[int, int]:
    """Make `work` hold `tree`'s files (its own .ragx and ragx.toml aside): (files written, files deleted)."""
    new, old = files_under(tree), files_under(work)
    written = 0
    for rel in sorted(new):
        source, dest = tree / rel, work / rel
        data = source.read_bytes()
        if rel in old and dest.read_bytes() == data:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        written += 1
    for rel in sorted(old - new):
        (work / rel).unlink()
    return written, len(old - new)


def run_cli(cmd: list[str], args: list[str], env: dict[str, str]) -> tuple[int, float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    last = next((line for line in reversed(proc.stderr.splitlines()) if line.strip()), "")
    return proc.returncode, time.perf_counter() - t0, last


def aborted(code: int) -> bool:
    """Killed by a signal: a negative code from subprocess, or 128 + signal from a shell."""
    return code < 0 or code in (134, 139)


def replay_repository(repo: str, rows: list[dict], data: Path, scratch: Path, cmd: list[str], env: dict[str, str],
                      toml: str) -> list[dict]:
    git_dir, work = scratch / "git", scratch / "work"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(data / "bundles" / f"{repo.replace('/', '__')}.bundle"), str(git_dir)],
                   check=True)
    work.mkdir()
    if toml:
        (work / "ragx.toml").write_text(toml, encoding="utf-8")
    results = []
    for row in rows:
        tree = scratch / "tree"
        shutil.rmtree(tree, ignore_errors=True)
        archive(git_dir, f"refs/tags/swe/{row['instance_id']}", tree)
        written, deleted = sync(tree, work)
        index_code, index_s, index_msg = run_cli(cmd, ["index", "--root", str(work)], env)
        query_code, query_s, query_msg = run_cli(cmd, ["query", row["query"][:QUERY_CHARS], "--root", str(work), "--json"], env)
        results.append({"repo": repo, "instance": row["instance_id"], "written": written, "deleted": deleted,
                        "index_exit": index_code, "index_s": index_s, "index_msg": index_msg,
                        "query_exit": query_code, "query_s": query_s, "query_msg": query_msg if query_code else ""})
        print(f"{row['instance_id']}: {written} written, {deleted} deleted; index exit {index_code} ({index_s:.1f} s), "
              f"query exit {query_code} ({query_s:.1f} s)", file=sys.stderr, flush=True)
    return results


def table(results: list[dict]) -> str:
    lines = ["| instance | files written | deleted | index exit | index s | query exit | query s | last index line |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        msg = r["index_msg"].replace("|", "\\|")[:140]
        lines.append(f"| {r['instance']} | {r['written']} | {r['deleted']} | {r['index_exit']} | {r['index_s']:.1f} | "
                     f"{r['query_exit']} | {r['query_s']:.1f} | {msg} |")
    return "\n".join(lines)


def summary(results: list[dict]) -> dict[str, int]:
    codes = [c for r in results for c in (r["index_exit"], r["query_exit"])]
    return {"runs": len(results), "aborts": sum(aborted(c) for c in codes),
            "errors": sum(c != 0 and not aborted(c) for c in codes)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--repo", nargs="*", help="owner/name, replayed in this order (default: all four, by name)")
    ap.add_argument("--ragx", default=str(REPO / ".venv" / "bin" / "ragx"))
    ap.add_argument("--engine", choices=("real", "test-hash"), default="real",
                    help="test-hash: a hashing embedder instead of the model (a quick check of the replay itself)")
    ap.add_argument("--out", type=Path, default=REPO / "reports" / "replay.md")
    ap.add_argument("--vector-cache", type=Path, help="real engine: take chunk vectors the model already produced from this "
                    "eval vector cache (e.g. <RAGX_CACHE_DIR>/snapshots/swe-loc-*/vectors, filled by `ragx eval snapshots`); "
                    "new texts are embedded and added to it")
    args = ap.parse_args()
    cmd, toml = ([args.ragx], "") if args.engine == "real" else (
        [sys.executable, "-c", HASH_CLI.format(tests=str(REPO / "tests"))], HASH_TOML)
    if args.vector_cache and args.engine == "real":
        cmd = [sys.executable, "-c", CACHED_CLI.format(cache=str(args.vector_cache.resolve()))]
    env = dict(os.environ, NO_COLOR="1", RAGX_RC=os.environ.get("RAGX_RC", "/nonexistent/ragxrc"))
    t0, results = time.perf_counter(), []
    for repo, rows in instances(args.data, args.repo).items():
        with tempfile.TemporaryDirectory(prefix="ragx-replay-") as scratch:
            results += replay_repository(repo, rows, args.data, Path(scratch), cmd, env, toml)
    seconds, counts = time.perf_counter() - t0, summary(results)
    head = (f"# Replay of swe-loc repository history\n\n`{' '.join(sys.argv)}` ({args.engine} embedder) on "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {counts['runs']} instances, incremental index runs in one "
            f"folder per repository, a query after each; {counts['aborts']} aborts, {counts['errors']} errors; {seconds:.0f} s "
            f"(load average {os.getloadavg()[0]:.1f}).\n\n")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(head + table(results) + "\n", encoding="utf-8")
    print(head.strip())
    sys.exit(1 if counts["aborts"] or counts["errors"] else 0)


if __name__ == "__main__":
    main()
