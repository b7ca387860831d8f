"""`ragx query --global TEXT`: communities (topics) ranked for a corpus-level question."""

from __future__ import annotations

import typer

from .. import schemas
from ..errors import EXIT_EMPTY
from .app import emit_json, escape, one_line, out, print_weak_evidence

DEFAULT_TOP = 5        # communities shown when --top is not given
CHUNKS_PER_TOPIC = 3   # best chunks listed under each community


def run_global(corpus, text: str, top: int | None, json_out: bool, evidence_check: bool = True) -> None:
    doc = corpus.global_query(text, top=DEFAULT_TOP if top is None else top, chunks=CHUNKS_PER_TOPIC, evidence_check=evidence_check)
    if json_out:
        emit_json(schemas.GLOBAL, doc)
    else:
        print_weak_evidence(doc, "communities")
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
                stale = "  [yellow](file changed since indexed)[/]" if ch.get("stale") else ""
                out.print(f"     {escape(one_line(ch['file']))}:{ch['line_start']}-{ch['line_end']}{stale}  {escape(snippet)}", highlight=False)
    if not doc["communities"]:
        if not json_out:
            reason = doc["evidence"].get("reason")
            if doc.get("reason"):  # nothing to rank whatever the question (no community in the index)
                why = doc["reason"]
            elif reason and doc["evidence"]["enforced"]:
                why = f"{reason}; --no-evidence-check shows the closest anyway"
            else:
                why = "no community matched"
            out.print(f"no communities ({escape(why)})")
        raise typer.Exit(EXIT_EMPTY)
