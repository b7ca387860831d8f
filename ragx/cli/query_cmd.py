"""`ragx query`: ranked chunks (or files) for a question, with locations, scores and --explain paths."""

# No `from __future__ import annotations`: typer reads every parameter's annotation on each run, and
# evaluating them from strings (compile + eval per parameter) costs milliseconds of each start-up.

import sys
from typing import Annotated, Optional

import typer

from .. import schemas
from ..api import Corpus
from ..errors import EXIT_EMPTY, UsageError, require_utf8
from .app import JsonOpt, RootOpt, app, counted, emit_json, one_line, out, print_weak_evidence


@app.command("query")
def query_command(
    text: Annotated[str, typer.Argument(help="The question; - reads it from stdin.")],
    root: RootOpt = None,
    top: Annotated[Optional[int], typer.Option("--top", "-n", help="How many results (default: search.top).")] = None,
    files_only: Annotated[bool, typer.Option("--files-only", help="Rank files (sum of their best chunk scores).")] = False,
    json_out: JsonOpt = False,
    explain: Annotated[bool, typer.Option("--explain", help="Show why each result ranked: its seed ranks (and, with --graph, the edges that led to it).")] = False,
    graph: Annotated[Optional[bool], typer.Option(
        "--graph/--no-graph", help="Spread heat over the similarity graph (off by default: no measured gain, see docs/eval.md).")] = None,
    no_lexical: Annotated[bool, typer.Option("--no-lexical", help="No BM25 leg.")] = False,
    no_rerank: Annotated[bool, typer.Option("--no-rerank", help="Skip the cross-encoder.")] = False,
    no_expand: Annotated[bool, typer.Option("--no-expand", help="Skip LLM query expansion.")] = False,
    no_evidence_check: Annotated[bool, typer.Option(
        "--no-evidence-check", help="Show the best results even when nothing looks relevant (the verdict is still reported).")] = False,
    global_: Annotated[bool, typer.Option("--global", help="Rank communities (topics) for a corpus-level question (ragx.global.v1).")] = False,
    since: Annotated[Optional[str], typer.Option("--since", help="Only files dated on or after DATE (frontmatter, git, else mtime).")] = None,
    until: Annotated[Optional[str], typer.Option("--until", help="Only files dated on or before DATE.")] = None,
    recent: Annotated[bool, typer.Option("--recent", help="Favour recently dated files.")] = False,
    oldest: Annotated[bool, typer.Option("--oldest", help="Favour the oldest files.")] = False,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", help="Only notes with this frontmatter tag (repeatable: all of them).")] = None,
    path_globs: Annotated[Optional[list[str]], typer.Option("--path", help="Only files whose path (from the root) matches this glob (give it once).")] = None,
) -> None:
    """Search the corpus. Exit 0 with results, 1 with none, 2 on error."""
    if path_globs and len(path_globs) > 1:
        raise UsageError(f"--path is given {len(path_globs)} times: give one glob (a file passes when its path matches it)")
    path_glob = path_globs[0] if path_globs else None
    text = _read_stdin() if text == "-" else require_utf8(text, "the query")
    if not text.strip():
        raise UsageError("empty query")
    from ..file_context import time_options

    when = time_options(since, until, recent, oldest)
    if global_:
        _only_global_options({"--files-only": files_only, "--explain": explain, "--graph/--no-graph": graph is not None,
                              "--no-lexical": no_lexical, "--no-rerank": no_rerank, "--no-expand": no_expand,
                              "--since": since is not None, "--until": until is not None,
                              "--recent": recent, "--oldest": oldest, "--tag": bool(tag), "--path": path_glob is not None})
    corpus = Corpus.open(root, need_index=True)
    if global_:
        from .global_cmd import run_global

        return run_global(corpus, text.strip(), top, json_out, evidence_check=not no_evidence_check)
    doc = corpus.query(
        text.strip(), top=top, files_only=files_only, explain=explain,
        graph=graph, lexical=not no_lexical, rerank=not no_rerank, expand=not no_expand, time=when,
        tags=tuple(tag or ()), path_glob=path_glob, evidence_check=not no_evidence_check,
    )
    if json_out:
        emit_json(schemas.FILES if files_only else schemas.QUERY, doc)
    else:
        print_weak_evidence(doc)
        (_print_files if files_only else _print_chunks)(doc, explain)
    if not doc["results"]:
        if not json_out:
            out.print("no results" + _why_empty(doc))
        raise typer.Exit(EXIT_EMPTY)


def _only_global_options(given: dict[str, bool]) -> None:
    """--global ranks communities, not files or chunks: a filter or switch of the file search would be
    silently ignored, so it is refused instead."""
    ignored = [name for name, on in given.items() if on]
    if ignored:
        raise UsageError(f"--global ranks communities, not files: {', '.join(ignored)} cannot be used with it")


def _read_stdin() -> str:
    """The query piped in with `ragx query -`: stdin must be open and hold UTF-8 text."""
    if sys.stdin is None or sys.stdin.closed:
        raise UsageError("`ragx query -` reads the query from stdin, but stdin is closed")
    binary = getattr(sys.stdin, "buffer", None)  # None when stdin was replaced by a text stream
    try:
        data = binary.read() if binary is not None else sys.stdin.read()
    except (OSError, ValueError) as exc:
        raise UsageError(f"`ragx query -` cannot read stdin: {getattr(exc, 'strerror', None) or exc}") from None
    if isinstance(data, str):
        return require_utf8(data, "the query on stdin")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"the query on stdin is not valid UTF-8 (byte {exc.start})") from None


def _print_path(path: list[dict]) -> None:
    seed = path[0]
    legs = ", ".join(f"{k.split('_')[0]} #{v}" for k, v in seed.items() if k.endswith("_rank") and v)
    line = f"     seed {seed['chunk_id']} ({legs or 'expansion'})"
    for step in path[1:]:
        line += f" -> {step['chunk_id']} (w={step['edge_weight']:.3f}, hop {step['hop']})"
    out.print(line, highlight=False)


def _print_variants(doc: dict) -> None:
    from rich.markup import escape  # rich loads only for human-readable output

    if len(doc.get("variants", [])) > 1:
        out.print("query variants (expansion): " + " | ".join(escape(v) for v in doc["variants"][1:]), highlight=False)


def _print_chunks(doc: dict, explain: bool) -> None:
    """Chunks grouped by file, best first (ragx/cli/results_view.py); --json keeps every chunk."""
    from rich.markup import escape

    from .results_view import print_grouped

    if explain:
        _print_variants(doc)
    print_grouped(doc, out.print, escape, one_line, _print_path if explain else None)


def _print_files(doc: dict, explain: bool) -> None:
    from rich.markup import escape

    if explain:
        _print_variants(doc)
    for r in doc["results"]:
        best = r["best_chunk"]
        out.print(
            f"[bold]{r['rank']:>3}. {escape(one_line(r['file']))}:{best['line_start']}-{best['line_end']}[/]  "
            f"score {r['score']:.3f}  [dim]({counted(len(r['chunk_ids']), 'matching chunk')})[/]"
        )
        if explain:
            _print_path(r["path"])


def _why_empty(doc: dict) -> str:
    """[ranking] What emptied the result, when it was the evidence rule (and the way round it) or the
    --since/--until dates."""
    from rich.markup import escape

    reason = doc.get("evidence", {}).get("reason") or doc.get("time", {}).get("reason")
    if not reason:
        return ""
    hint = "; --no-evidence-check shows the closest anyway" if reason.startswith(schemas.NO_EVIDENCE) else ""
    return f" ({escape(reason)}{hint})"
