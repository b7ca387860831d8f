"""`ragx inspect chunk|file|neighbors|communities|community`: look inside the index."""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

from typing import Annotated, Optional

import typer

from .. import schemas
from ..api import Corpus
from ..inspect_args import checked
from .app import JsonOpt, RootOpt, app, emit_json, escape, one_line, out


@app.command("inspect")
def inspect_command(
    what: Annotated[str, typer.Argument(help="chunk ID | file PATH | neighbors ID | communities | community N")],
    arg: Annotated[Optional[str], typer.Argument(help="The chunk id, file path or community number.")] = None,
    root: RootOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Show a chunk, a file's chunks, a chunk's graph neighbours, or the Leiden communities."""
    what = checked(what, arg, "ragx inspect")[0]  # one clear line for a missing or impossible argument, before the index is opened
    corpus = Corpus.open(root, need_index=True)
    doc = corpus.inspect(what, arg)
    if json_out:
        emit_json(schemas.INSPECT, doc)
        return
    loc = lambda r: f"{escape(one_line(r['file']))}:{r['line_start']}-{r['line_end']}" + ("  [yellow](stale)[/]" if r.get("stale") else "")  # noqa: E731
    if doc.get("stale"):
        out.print("[yellow]the file changed since it was indexed: these lines may no longer hold this text (run `ragx index`)[/]")
    if what == "chunk":
        out.print(f"[bold]chunk {doc['chunk_id']}[/]  {loc(doc)}  {doc['kind']}, {doc['n_tokens']} tokens, "
                  f"community {doc['community']}, {doc['degree']} neighbours")
        out.print(escape(doc["text"]), highlight=False)
    elif what == "file":
        for c in doc["chunks"]:
            out.print(f"chunk {c['chunk_id']:>7}  lines {c['line_start']}-{c['line_end']}  {c['n_tokens']} tokens  community {c['community']}")
    elif what == "neighbors":
        for n in doc["neighbors"]:
            out.print(f"{n['weight']:.4f}  chunk {n['chunk_id']:>7}  {loc(n)}  community {n['community']}")
    elif what == "communities":
        for c in doc["communities"]:
            out.print(f"community {c['community']:>4}: [bold]{escape(c.get('label') or '(no label)')}[/]  {c['chunks']} chunks in {c['files']} files  e.g. {escape(', '.join(map(one_line, c['top_files'])))}")
        out.print(f"{doc['isolated_chunks']} chunks have no edges")
    elif what == "community":
        for c in doc["chunks"]:
            out.print(f"chunk {c['chunk_id']:>7}  {loc(c)}")
