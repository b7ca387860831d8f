"""Human output of `ragx query`: results grouped by file, best chunk first.

One entry per file, in the order of its best chunk: the file with that chunk's lines, its date and
score, one short line saying why it matched (the signals that found it), the chunk's opening words,
then "+2 more in this file (lines ...)" for the file's other chunks among the results. `--json` is
not touched: it lists every chunk as before.
"""

from __future__ import annotations

from typing import Any, Callable

from ..schemas import group_by_file

MORE_SHOWN = 4  # line ranges named in "+N more in this file"


def _lines(r: dict[str, Any]) -> str:
    page = f"page {r['page']} " if "page" in r else ""  # a PDF chunk: lines within that page
    return f"{page}{r['line_start']}-{r['line_end']}"


def why_matched(r: dict[str, Any], graph: bool) -> str:
    """The signals behind a result, shortest first: meaning (dense cosine), words (BM25), and what else moved it."""
    b = r["breakdown"]
    parts = [f"meaning {b['dense']:.2f}"]
    parts.append(f"words bm25 {b['lexical']:.2f}" if b["lexical"] else "no shared words")
    parts.append(f"heat {b['heat']:.4f}, hop {r['hop']}" if graph else f"fused {b['fused']:.4f}")
    if b.get("rerank") is not None:
        parts.append(f"rerank {b['rerank']:.3f}")
    if b.get("anchor_dense") is not None:
        parts.append(f"linking notes {b['anchor_dense']:.2f}/{b['anchor_lexical']:.2f}")
    if r.get("time_boost"):
        parts.append(f"date boost +{r['time_boost']:.2f}")
    return " · ".join(parts)


def _more(rest: list[dict[str, Any]]) -> str:
    shown = ", ".join(_lines(r) for r in rest[:MORE_SHOWN])
    return f"+{len(rest)} more in this file (lines {shown}{', …' if len(rest) > MORE_SHOWN else ''})"


def print_grouped(doc: dict[str, Any], show: Callable[..., None], escape: Callable[[str], str], one_line: Callable[[str], str],
                  explain_path: Callable[[list], None] | None = None) -> None:
    """Print `doc`'s chunk results grouped by file through `show` (a rich Console's print)."""
    graph = doc["params"]["hops"] > 0  # without hops "heat" is only the seeds' fused score, and every hop 0
    for rank, group in enumerate(group_by_file(doc["results"]), 1):
        r = group[0]
        date = f"  {r['date'][:10]}" if r.get("date") else ""
        stale = "  [yellow](file changed since indexed)[/]" if r.get("stale") else ""
        show(f"[bold]{rank:>3}. {escape(one_line(r['file']))}:{_lines(r)}[/]{date}  score {r['score']:.3f}{stale}")
        show(f"     [dim]why: {why_matched(r, graph)}[/]", highlight=False)
        snippet = " ".join(r["text"].split())[:200]
        show(f"     {escape(snippet)}{'…' if r['truncated'] or len(snippet) == 200 else ''}", highlight=False)
        if len(group) > 1:
            show(f"     [dim]{_more(group[1:])}[/]", highlight=False)
        if explain_path is not None:
            explain_path(r["path"])
