"""Pass cache: one retrieval pass per query under generous caps, stored as parquet (polars).

A cache records the index manifest, the caps and a hash of ragx's own source code; loading refuses
a cache whose index or code has changed since (its passes would no longer be what ragx computes).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import xxhash

import ragx
from ragx.api import Corpus
from ragx.eval.queries import LabelledQuery
from ragx.eval.report import git_commit
from ragx.scoring.candidates import CACHE_COLUMNS as ARRAY_COLUMNS
from ragx.scoring.candidates import Candidates, PassCaps

POLARS_TYPES = {np.int8: pl.Int8, np.int64: pl.Int64, np.float32: pl.Float32, np.float64: pl.Float64}


class StaleCacheError(RuntimeError):
    pass


def code_hash() -> str:
    """Hash of ragx's source: a pass cache is only valid for the code that computed it."""
    h = xxhash.xxh3_128()
    pkg = Path(ragx.__file__).parent
    for path in sorted(pkg.rglob("*.py")):
        h.update(path.relative_to(pkg).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def index_fingerprint(corpus: Corpus) -> dict[str, Any]:
    searcher = corpus.searcher
    searcher.refresh()
    m = searcher.manifest
    return {k: m.get(k) for k in ("embedder", "dim", "chunking", "graph", "generation", "updated_at", "schema_version")}


def build_cache(corpus: Corpus, queries: list[LabelledQuery], caps: PassCaps, folder: Path, progress=None) -> Path:
    """Run and store one pass per query. Returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    searcher = corpus.searcher
    rows: dict[str, list] = {"qid": [], "query": [], "variants": [], "dense_ids": [], "link_pairs": [], "lexical_ceiling": [],
                             **{c: [] for c in ARRAY_COLUMNS}}
    started = time.perf_counter()
    for q in queries:
        c = searcher.pass_with_caps(q.text, caps, expand=False)
        rows["qid"].append(q.id)
        rows["query"].append(q.text)
        rows["variants"].append(c.variants)
        rows["dense_ids"].append([ids.tolist() for ids in c.dense_ids])
        rows["link_pairs"].append(_flat_pairs(c.link_pairs))
        rows["lexical_ceiling"].append(c.lexical_ceiling)
        for col, values in c.cache_row().items():
            rows[col].append(values)
        if progress:
            progress(1)
    seconds = time.perf_counter() - started
    schema: dict[str, Any] = {"qid": pl.String, "query": pl.String, "variants": pl.List(pl.String), "dense_ids": pl.List(pl.List(pl.Int64))}
    schema["link_pairs"] = pl.List(pl.Int64)  # (m, 2) file pairs, flattened row-major
    schema["lexical_ceiling"] = pl.Float64
    schema |= {c: pl.List(POLARS_TYPES[t]) for c, t in ARRAY_COLUMNS.items()}
    pl.DataFrame(rows, schema=schema).write_parquet(folder / "passes.parquet")
    meta = {
        "caps": asdict(caps),
        "index": index_fingerprint(corpus),
        "corpus": str(corpus.root),
        "code_hash": code_hash(),
        "commit": git_commit(Path(__file__).parent),
        "queries": len(queries),
        "seconds": seconds,
        "labels": {q.id: q.files for q in queries},
        "paths": {str(fid): path for fid, path in searcher.store.file_paths().items()},
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return folder


def check_fresh(folder: Path, corpus: Corpus, caps: PassCaps) -> dict[str, Any]:
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    problems = []
    if meta["index"] != index_fingerprint(corpus):
        problems.append("the index changed since the passes were cached")
    if meta["code_hash"] != code_hash():
        problems.append("ragx's code changed since the passes were cached")
    wide = PassCaps(**meta["caps"])
    if not wide.covers(caps):
        problems.append(f"cached caps {wide} are narrower than asked {caps}")
    if problems:
        raise StaleCacheError(f"pass cache {folder} is stale: " + "; ".join(problems))
    return meta


def _flat_pairs(pairs: np.ndarray | None) -> list[int]:
    return [] if pairs is None else np.asarray(pairs, dtype=np.int64).reshape(-1).tolist()


def _split(flat: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    return np.split(flat, np.cumsum(lengths)[:-1]) if len(lengths) else []


def load_cache(folder: Path) -> tuple[list[Candidates], dict[str, Any]]:
    """Candidates per query, rebuilt as the same arrays the live pass produced (vectorised, no row loop over values)."""
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    df = pl.read_parquet(folder / "passes.parquet")
    caps = PassCaps(**meta["caps"])
    cols = {}
    for col, dtype in ARRAY_COLUMNS.items():
        if col not in df.columns:  # a cache written before the column existed: Candidates fills its default
            continue
        lengths = df[col].list.len().to_numpy()
        flat = df[col].explode().drop_nulls().to_numpy()  # an empty list explodes to one null
        cols[col] = _split(np.asarray(flat, dtype=dtype), lengths)
    pair_lengths = df["link_pairs"].list.len().to_numpy()
    pairs = _split(np.asarray(df["link_pairs"].explode().drop_nulls().to_numpy(), dtype=np.int64), pair_lengths)

    def arrays_of(i: int) -> dict[str, Any]:  # the array fields of Candidates, by name
        return {col: cols[col][i] for col in cols}

    out = []
    # a cache written before the column existed reads 0 (unknown): the lab refuses such a cache by its
    # code hash anyway; research studies that re-score their own signals still read it
    ceilings = df["lexical_ceiling"].to_list() if "lexical_ceiling" in df.columns else [0.0] * len(df)
    for i, (qid, query, variants, dense) in enumerate(zip(df["qid"], df["query"], df["variants"], df["dense_ids"])):
        out.append(
            Candidates(
                query=query,
                variants=list(variants),
                dense_ids=[np.asarray(d, dtype=np.int64) for d in dense],
                caps=caps,
                link_pairs=pairs[i].reshape(-1, 2),
                qid=qid,
                lexical_ceiling=ceilings[i],
                **arrays_of(i),
            )
        )
    meta["paths"] = {int(k): v for k, v in meta["paths"].items()}
    return out, meta
