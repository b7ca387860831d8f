"""`ragx query --global TEXT`: communities (topics) ranked for a corpus-level question."""

from __future__ import annotations

import typer
from rich.markup import escape

from .. import schemas
from ..errors import EXIT_EMPTY
from .app import emit_json, out

DEFAULT_TOP = 5        # communities shown when --top is not given
CHUNKS_PER_TOPIC = 3   # best chunks listed under each community


def run_global(corpus, text: str, top: int | None, json_out: bool) -> None:
    doc = corpus.global_query(text, top=top or DEFAULT_TOP, chunks=CHUNKS_PER_TOPIC)
    if json_out:
        emit_json(schemas.GLOBAL, doc)
    else:
        for c in doc["communities"]:
            b = c["breakdown"]
            out.print(
                f"[bold]{c['rank']:>3}. {escape(c['label'] or '(no label: run ragx index)')}[/]  community {c['community']}, "
                f"{c['size']} chunks in {c['files']} files  score {c['score']:.3f}  "
                f"[dim](centroid {b['centroid']:.3f}, best {b['best']:.3f}, keywords {b['keywords']:.2f})[/]"
            )
            out.print(f"     keywords: {escape(', '.join(c['keywords']))}", highlight=False)
            for ch in c["chunks"]:
                snippet = " ".join(ch["text"].split())[:160]
                out.print(f"     {escape(ch['file'])}:{ch['line_start']}-{ch['line_end']}  {escape(snippet)}", highlight=False)
    if not doc["communities"]:
        if not json_out:
            out.print("no communities (the graph has no edges yet)")
        raise typer.Exit(EXIT_EMPTY)
