"""`ragx data beir`: a BEIR-layout collection as a folder of files plus judged queries."""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import schemas
from ..eval.beir import materialise
from .app import JsonOpt, app, emit_json, err

data_app = typer.Typer(help="Benchmark collections as folders ragx can index.", no_args_is_help=True)
app.add_typer(data_app, name="data")


@data_app.command("beir")
def data_beir(
    data_dir: Annotated[Path, typer.Argument(help="Folder with corpus.jsonl, queries.jsonl, qrels/<split>.tsv.")],
    out_dir: Annotated[Path, typer.Argument(help="Where to write corpus/<id>.md and queries/<split>.jsonl.")],
    split: Annotated[Optional[list[str]], typer.Option("--split", help="Split(s) to write (default: every qrels file).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Write one markdown file per document and each split's queries with their relevant files."""
    made = materialise(data_dir, out_dir, split)
    err.print(
        f"{made.documents} documents in {made.corpus_dir} ({made.written} written); "
        + ", ".join(f"{s}: {n} queries" for s, n in made.query_counts.items())
    )
    if json_out:
        emit_json(
            schemas.DATA,
            {
                "corpus": str(made.corpus_dir),
                "documents": made.documents,
                "written": made.written,
                "queries": {s: str(p) for s, p in made.queries.items()},
                "query_counts": made.query_counts,
            },
        )
