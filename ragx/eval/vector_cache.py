"""A cache of chunk vectors per embedding model, so a model study (lab/models.py) or a replay of
repository snapshots (ragx/eval/snapshot_run.py) embeds each text once.

Keyed by (model identity, text hash): the identity is the embedder's `name` (what the index manifest
records, e.g. `embedded:all-MiniLM-L6-v2@468e4cf3+int8`), the hash is ragx's own xxh3-64 of the exact
text embedded (`ragx.text_keys`, the key ragx uses to reuse vectors inside one index).
One folder per identity holds shards: every slab of up to SLAB texts embedded appends one `.npz`
(keys, vectors, seconds it took), written to a temporary name and renamed, so an interrupted run loses
at most its last slab and a reader never sees half a shard. Two workers filling the same
identity at once only write duplicate rows (the lookup takes the first).

`CachedEmbedder` wraps any ragx embedder: same name, dimension, window and token counter (so the index
it builds is exactly the one the wrapped engine would build), but documents whose text is cached are
not embedded again. Queries pass through (their latency is what a study measures).
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xxhash

from ..text_keys import text_keys

SLAB = 512  # texts embedded (and stored as one shard) at a time


def identity_folder(root: Path, identity: str) -> Path:
    """A readable, collision-free folder name for a model identity."""
    slug = re.sub(r"[^A-Za-z0-9._+-]+", "_", identity)[:80]
    return root / f"{slug}-{xxhash.xxh3_64_hexdigest(identity.encode())[:12]}"


class VectorCache:
    """Vectors of one model identity, keyed by text hash."""

    def __init__(self, root: Path, identity: str, dim: int):
        self.identity, self.dim = identity, dim
        self.folder = identity_folder(Path(root), identity)
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "identity.txt").write_text(identity + "\n", encoding="utf-8")
        self.embedded = 0          # texts embedded (and stored) over the cache's whole life
        self.seconds = 0.0         # the time those took
        self._keys = np.empty(0, np.uint64)
        self._vecs = np.empty((0, dim), np.float32)
        self._load()

    def __len__(self) -> int:
        return len(self._keys)

    def _load(self) -> None:
        keys, vecs = [], []
        for shard in sorted(self.folder.glob("*.npz")):
            with np.load(shard) as z:
                if z["vectors"].shape[1] != self.dim:
                    raise ValueError(f"{shard}: vectors of dimension {z['vectors'].shape[1]}, the model gives {self.dim}")
                keys.append(z["keys"])
                vecs.append(z["vectors"])
                self.embedded += len(z["keys"])
                self.seconds += float(z["seconds"])
        if keys:
            all_keys, all_vecs = np.concatenate(keys), np.concatenate(vecs)
            uniq, first = np.unique(all_keys, return_index=True)
            self._keys, self._vecs = uniq, all_vecs[first]

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hit mask, vectors of the hits in order)."""
        if not len(self._keys):
            return np.zeros(len(keys), bool), np.empty((0, self.dim), np.float32)
        pos = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        hit = self._keys[pos] == keys
        return hit, self._vecs[pos[hit]]

    def add(self, keys: np.ndarray, vectors: np.ndarray, seconds: float) -> None:
        if not len(keys):
            return
        name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        tmp = self.folder / f".{name}.tmp.npz"
        np.savez(tmp, keys=keys.astype(np.uint64), vectors=vectors.astype(np.float32), seconds=np.float64(seconds))
        os.replace(tmp, self.folder / f"{name}.npz")
        self.embedded += len(keys)
        self.seconds += seconds
        merged_keys = np.concatenate([self._keys, keys.astype(np.uint64)])
        merged_vecs = np.concatenate([self._vecs, vectors.astype(np.float32)])
        uniq, first = np.unique(merged_keys, return_index=True)
        self._keys, self._vecs = uniq, merged_vecs[first]


class CachedEmbedder:
    """A ragx embedder whose document vectors come from a VectorCache where it has them."""

    def __init__(self, inner, root: Path):
        self.inner = inner
        self.cache = VectorCache(root, inner.name, inner.dim)
        self.hits = 0
        self.misses = 0
        self.embed_seconds = 0.0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def max_tokens(self) -> int:
        return self.inner.max_tokens

    def token_counter(self):
        return self.inner.token_counter()

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)

    def stream(self, batches: Sequence[Sequence[str]]):
        """(batch number, vectors) per batch, as ragx's index run asks (ragx/models/pool.py): cached texts
        at once, the others as their own batches through the wrapped engine (concurrently when it is a pool
        of servers), stored a slab at a time."""
        from ragx.models.pool import stream_batches

        keys = [text_keys(list(b)) for b in batches]
        looked = [self.cache.lookup(k) for k in keys]
        misses = [np.flatnonzero(~hit) for hit, _ in looked]
        waiting = [i for i, m in enumerate(misses) if len(m)]
        for i in (i for i, m in enumerate(misses) if not len(m)):
            self.hits += len(keys[i])
            yield i, looked[i][1]
        slab_keys, slab_vecs, t0 = [], [], time.perf_counter()
        for j, vecs in stream_batches(self.inner, [[batches[i][int(m)] for m in misses[i]] for i in waiting]):
            i = waiting[j]
            hit, cached = looked[i]
            out = np.empty((len(keys[i]), self.dim), np.float32)
            out[hit], out[~hit] = cached, vecs
            self.hits, self.misses = self.hits + int(hit.sum()), self.misses + len(vecs)
            slab_keys.append(keys[i][~hit])
            slab_vecs.append(vecs)
            if sum(map(len, slab_keys)) >= SLAB or j == len(waiting) - 1:
                seconds = time.perf_counter() - t0
                self.cache.add(np.concatenate(slab_keys), np.concatenate(slab_vecs), seconds)
                self.embed_seconds += seconds
                slab_keys, slab_vecs, t0 = [], [], time.perf_counter()
            yield i, out

    def embed_documents(self, texts: Sequence[str], batch_size: int = 32, progress=None) -> np.ndarray:
        out = np.empty((len(texts), self.dim), np.float32)
        if not len(texts):
            return out
        keys = text_keys(list(texts))
        hit, vecs = self.cache.lookup(keys)
        out[hit] = vecs
        self.hits += int(hit.sum())
        if progress is not None and hit.any():
            progress(int(hit.sum()))
        miss = np.flatnonzero(~hit)
        if len(miss):
            uniq, first, inverse = np.unique(keys[miss], return_index=True, return_inverse=True)  # a repeated text once
            todo = miss[first]
            fresh = np.empty((len(todo), self.dim), np.float32)
            # One shard per slab, so an interrupted run keeps what it embedded before the interruption.
            for start in range(0, len(todo), SLAB):
                part = todo[start : start + SLAB]
                t0 = time.perf_counter()
                fresh[start : start + len(part)] = self.inner.embed_documents([texts[int(i)] for i in part], batch_size=batch_size)
                seconds = time.perf_counter() - t0
                self.cache.add(uniq[start : start + len(part)], fresh[start : start + len(part)], seconds)
                self.embed_seconds += seconds
                if progress is not None:
                    progress(len(part))
            out[miss] = fresh[inverse]
            if progress is not None and len(miss) > len(todo):
                progress(len(miss) - len(todo))
            self.misses += len(todo)
        return out
