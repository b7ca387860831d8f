"""Read-only views of an index for `ragx inspect` and the MCP server: chunks, files, neighbours,
communities. Everything is read in a handful of set-based queries."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UsageError
from .snapshot import Snapshot
from .store import Store, chunk_location


def _communities_of(store: Store, ids: list[int]) -> dict[int, int]:
    return store.communities_of(ids)


def chunk(store: Store, snap: Snapshot, chunk_id: int) -> dict[str, Any]:
    rows = store.chunks([chunk_id])
    if not rows:
        raise UsageError(f"no chunk {chunk_id} in the index")
    row = rows[0]
    nbr, _ = snap.graph.neighbors(chunk_id)
    return {
        **chunk_location(row),
        "ordinal": row["ordinal"],
        "kind": row["kind"],
        "n_tokens": row["n_tokens"],
        "community": _communities_of(store, [chunk_id]).get(chunk_id),
        "degree": int(len(nbr)),
        "text": row["text"],
    }


def file(store: Store, path: str) -> dict[str, Any]:
    rows = store.file_chunks(path)
    if not rows:
        if not store.has_file(path):
            raise UsageError(f"no file {path!r} in the index (paths are relative to the corpus root)")
    comms = _communities_of(store, [r["id"] for r in rows])
    return {
        "file": path,
        "chunks": [
            {**chunk_location(r), "ordinal": r["ordinal"], "kind": r["kind"], "n_tokens": r["n_tokens"], "community": comms.get(r["id"])}
            for r in rows
        ],
    }


def neighbors(store: Store, snap: Snapshot, chunk_id: int) -> dict[str, Any]:
    if not store.chunks([chunk_id], ("id",)):
        raise UsageError(f"no chunk {chunk_id} in the index")
    nbr, weight = snap.graph.neighbors(chunk_id)
    order = np.lexsort((nbr, -weight))
    nbr, weight = nbr[order], weight[order]
    rows = store.chunks(nbr)
    comms = _communities_of(store, [chunk_id, *nbr.tolist()])
    return {
        "chunk_id": chunk_id,
        "community": comms.get(chunk_id),
        "neighbors": [
            {**chunk_location(r), "weight": float(w), "community": comms.get(r["id"])}
            for r, w in zip(rows, weight.tolist())
        ],
    }


def communities(store: Store, top_files: int = 3) -> dict[str, Any]:
    rows = store.community_sizes()
    files = store.community_files()
    tops: dict[int, list[str]] = {}
    for comm, path, _ in files:
        bucket = tops.setdefault(comm, [])
        if len(bucket) < top_files:
            bucket.append(path)
    isolated = store.isolated_chunks()
    return {
        "communities": [{"community": c, "chunks": n, "files": nf, "top_files": tops.get(c, [])} for c, n, nf in rows],
        "isolated_chunks": isolated,
    }


def community(store: Store, number: int) -> dict[str, Any]:
    ids = store.community_members(number)
    if not ids:
        raise UsageError(f"no community {number} (see `ragx inspect communities`)")
    rows = store.chunks(ids)
    return {"community": number, "chunks": [chunk_location(r) for r in rows]}
