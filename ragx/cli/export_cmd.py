"""`ragx export FILE` / `ragx import FILE`: move an index between machines, with its fingerprint."""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

from pathlib import Path
from typing import Annotated

import typer

from .. import schemas
from ..api import Corpus
from .app import JsonOpt, RootOpt, app, emit_json, err, escape, one_line, out


@app.command("export")
def export_command(
    file: Annotated[str, typer.Argument(help="Archive to write (a .tar.gz).")],
    root: RootOpt = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Replace an existing FILE (inside the corpus folder only an earlier export; never its "
                        "config, one of its files or anything in its .ragx folder).")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Write the index and its fingerprint (model, chunking, graph, file hashes) to one archive.

    An existing FILE is kept unless --force is given; inside the corpus folder only an earlier export is
    ever replaced.
    """
    corpus = Corpus.open(root, need_index=True)
    doc = corpus.export_index(Path(file).expanduser().resolve(), force=force)
    if json_out:
        emit_json(schemas.EXPORT, doc)
        return
    c = doc["counts"]
    out.print(f"exported {c['files']} files, {c['chunks']} chunks ({doc['identity']['embedder']}) to {escape(doc['file'])} "
              f"({doc['bytes'] / 1e6:.1f} MB)")


@app.command("import")
def import_command(
    file: Annotated[str, typer.Argument(help="An archive written by `ragx export`.")],
    root: RootOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing index.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Install an exported index here; list the files that differ (the next `ragx index` redoes only those)."""
    corpus = Corpus.open(root)
    doc = corpus.import_index(Path(file).expanduser().resolve(), force=force)
    if json_out:
        emit_json(schemas.IMPORT, doc)
        return
    d = doc["differs"]
    n = sum(len(v) for v in d.values())
    out.print(f"imported {doc['counts']['files']} files, {doc['counts']['chunks']} chunks into {escape(doc['root'])}; "
              f"{doc['same']} files as exported, {n} differ")
    for kind in ("changed", "new", "deleted"):
        for path in d[kind]:
            out.print(f"  {kind:<8} {escape(one_line(path))}")
    if n:
        err.print(f"run `ragx index` to re-index the {n} files that differ")
