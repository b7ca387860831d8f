"""`ragx eval snapshots`: file localisation over repository snapshots (ragx/eval/snapshots.py), with the
harness every other eval uses.

For each repository, its instances in commit order: the one working folder is moved to the instance's
tree (only changed files written), the incremental index runs (timed; chunks embedded counted), and the
issue text is evaluated as one labelled query under every configuration (`Corpus.evaluate`: one
retrieval pass, equal budgets, `bm25-ref` over the same files). The per-instance results are then pooled
per repository, per split and over everything, with the paired tests of ragx/eval/compare.py.

Chunk vectors are kept by text in `<cache>/vectors` (ragx/eval/vector_cache.py), so a second run over
the same working folders, which must walk back to the first tree, embeds nothing it embedded before.
Each step records the chunks its index asked to embed (what a user's incremental run embeds) and how
many of them came from that cache; timings are a cold run's only in a fresh `--cache` folder.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any, Callable

from .compare import add_comparisons
from .metrics import CODE_METRIC_NAMES
from .queries import LabelledQuery
from .snapshots import Checkout, Instance, Move, bundle_path

TOP = 100  # files (with scores) kept per instance and configuration in the document: what ranked where


def folder_for(cache: Path, repo: str) -> Path:
    return Path(cache) / repo.replace("/", "__")


def replay(data_dir: Path, repo: str, instances: list[Instance], cache: Path, configs: list, open_corpus: Callable[[Path], Any],
           progress: Callable[[int], None] | None = None, reporter=None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(one eval document per instance, one step record per instance), in commit order. `open_corpus`
    is api.Corpus.open, given by the caller: eval sits below api and never imports it."""
    from .vector_cache import CachedEmbedder

    checkout = Checkout(bundle_path(data_dir, repo), folder_for(cache, repo))
    docs, steps = [], []
    corpus = None
    try:
        for inst in instances:
            move = checkout.move_to(inst.tag)
            if corpus is None:
                corpus = open_corpus(checkout.folder)
                embedder = CachedEmbedder(corpus.embedder, Path(cache) / "vectors")
                corpus.use_embedder(embedder)
            fresh, hits = not corpus.layout.exists(), embedder.hits
            report = corpus.index(reporter=reporter)
            t0 = time.perf_counter()
            query = LabelledQuery(inst.id, inst.query, {p: 1 for p in inst.gold})
            doc = corpus.evaluate([query], configs, metrics="code", top=TOP)
            steps.append(_step(inst, move, report, fresh, time.perf_counter() - t0) | {"vectors_from_cache": embedder.hits - hits})
            docs.append(doc)
            if progress:
                progress(1)
    finally:
        if corpus is not None:
            corpus.close()
    return docs, steps


def _step(inst: Instance, move: Move, report, fresh: bool, eval_seconds: float) -> dict[str, Any]:
    return {
        "instance": inst.id, "tag": inst.tag, "split": inst.split, "fresh": fresh,
        "tree": {"added": move.added, "modified": move.modified, "deleted": move.deleted},
        "index": {"seconds": report.seconds, "embed_seconds": report.embed_seconds, "files": report.files,
                  "chunks": report.chunks, "new": report.new, "changed": report.changed, "deleted": report.deleted,
                  "embedded_chunks": report.embedded_chunks, "reused_chunks": report.reused_chunks,
                  "embedded_files": len(report.embedded_files)},
        "eval_seconds": eval_seconds,
    }


def pool(name: str, split: str, docs: list[dict[str, Any]], reference: str | None) -> dict[str, Any]:
    """One document over several instances' documents (one query each): per-query figures side by side,
    means, mean budgets, and the paired tests against the reference over all of them."""
    first = docs[0]
    names = list(first["files"]["means"])
    per_query = {cfg: {q: m for d in docs for q, m in d["files"]["per_query"][cfg].items()} for cfg in names}
    means = {cfg: {m: statistics.fmean(r[m] for r in rows.values()) for m in CODE_METRIC_NAMES} for cfg, rows in per_query.items()}
    doc: dict[str, Any] = {
        "dataset": name, "split": split, "n_queries": sum(d["n_queries"] for d in docs), "metrics": list(CODE_METRIC_NAMES),
        "configs": first["configs"], "budgets": _budgets(docs, names),
        "files": {"means": means, "per_query": per_query},
        "top_files": {cfg: {q: t for d in docs for q, t in d.get("top_files", {}).get(cfg, {}).items()} for cfg in names},
        "n_files": [d["n_files"] for d in docs], "n_chunks": [d["n_chunks"] for d in docs],
    }
    return add_comparisons(doc, reference)


def _budgets(docs: list[dict[str, Any]], names: list[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for cfg in names:
        rows = [d["budgets"][cfg] for d in docs]
        out[cfg] = {"unit": rows[0]["unit"], "candidates": statistics.fmean(r["candidates"] for r in rows),
                    "candidates_min": min(r["candidates_min"] for r in rows), "candidates_max": max(r["candidates_max"] for r in rows),
                    "files": statistics.fmean(r["files"] for r in rows)}
    return out


def run(data_dir: Path, chosen: dict[str, list[Instance]], cache: Path, configs: list, reference: str | None,
        open_corpus: Callable[[Path], Any], progress: Callable[[int], None] | None = None, reporter=None) -> dict[str, Any]:
    """Every chosen repository replayed; documents per repository, per split and pooled over all."""
    per_instance: dict[str, dict[str, Any]] = {}
    repos, steps = [], {}
    for repo, instances in chosen.items():
        docs, steps[repo] = replay(data_dir, repo, instances, cache, configs, open_corpus, progress, reporter)
        per_instance.update({i.id: d for i, d in zip(instances, docs)})
        repos.append(pool(repo, _split_of(instances), docs, reference))
    everything = [i for instances in chosen.values() for i in instances]
    pooled = []
    for split in ("train", "test"):
        members = [per_instance[i.id] for i in everything if i.split == split]
        if members and len(members) < len(everything):
            pooled.append(pool(f"pooled {split}", split, members, reference))
    if len(chosen) > 1:
        pooled.append(pool("pooled all", "all", [per_instance[i.id] for i in everything], reference))
    return {"data": str(Path(data_dir)), "cache": str(cache), "repositories": repos, "pooled": pooled, "steps": steps,
            "reference": repos[0]["comparisons"]["reference"]}


def _split_of(instances: list[Instance]) -> str:
    splits = sorted({i.split for i in instances})
    return splits[0] if len(splits) == 1 else "+".join(splits)
