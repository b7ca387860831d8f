"""Corpora the lab sweeps over: a dataset materialised as files, and one index build per setting.

The base build is the very folder `ragx eval beir` uses. Another build (other graph or chunking
settings) is a folder of hard links to the same files with its own ragx.toml, seeded with a copy of
the base index so that `ragx index --full` reuses every vector whose chunk text is unchanged
(graph-only builds cost no embedding at all).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import tomlkit

from ragx.api import Corpus, open_collection
from ragx.config import INDEX_DIR, PROJECT_FILE
from ragx.errors import IndexBusyError
from ragx.eval.beir import cache_dir_for
from ragx.eval.queries import LabelledQuery, load_queries


def dataset_folder(dataset: dict[str, Any]) -> Path:
    return Path(dataset["cache"]) if dataset.get("cache") else cache_dir_for(Path(dataset["data_dir"]))


def prepare(dataset: dict[str, Any], split: str, reporter=None) -> tuple[Corpus, list[LabelledQuery]]:
    """Materialise and (incrementally) index the base build, as `ragx eval beir` does; the split's labelled queries."""
    corpus, made, _ = open_collection(Path(dataset["data_dir"]), dataset_folder(dataset), split,
                                      index=lambda c: index_when_free(c, reporter))
    return corpus, load_queries(made.queries[split])


def index_when_free(corpus: Corpus, reporter=None, **kwargs) -> None:
    """Index, waiting while another worker of the same study holds the corpus's index lock."""
    while True:
        try:
            corpus.index(reporter=reporter, **kwargs)
            return
        except IndexBusyError:
            time.sleep(1.0)


def build(base: Corpus, name: str, settings: dict[str, Any], folder: Path, reporter=None) -> Corpus:
    if not settings:
        return base
    root = folder / name
    root.mkdir(parents=True, exist_ok=True)
    _link_tree(base.root, root)
    doc = tomlkit.document()
    for section, values in settings.items():
        table = tomlkit.table()
        for key, value in values.items():
            table[key] = value
        doc[section] = table
    wanted = tomlkit.dumps(doc)
    project = root / PROJECT_FILE
    fresh = not (root / INDEX_DIR).exists()
    if fresh:
        shutil.copytree(base.root / INDEX_DIR, root / INDEX_DIR)
    if fresh or not project.exists() or project.read_text() != wanted:
        project.write_text(wanted)
        index_when_free(Corpus.open(root), reporter, full=True)
    corpus = Corpus.open(root)
    index_when_free(corpus, reporter)  # picks up corpus changes like the base does
    return corpus


def _link_tree(src: Path, dst: Path) -> None:
    """Hard-link every corpus file of `src` into `dst` (no copies), dropping files gone from `src`."""
    wanted = set()
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            if name == PROJECT_FILE and rel == Path("."):
                continue
            target = dst / rel / name
            wanted.add(target)
            source = Path(dirpath) / name
            if target.exists() and os.path.samefile(source, target):
                continue
            if target.exists():
                target.unlink()
            os.link(source, target)
    for dirpath, dirnames, filenames in os.walk(dst):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            path = Path(dirpath) / name
            if path not in wanted and not (name == PROJECT_FILE and Path(dirpath) == dst):
                path.unlink()
