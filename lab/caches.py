"""Pass caches addressed by content, shareable between workers and machines.

A cache's folder is named by a hash of what its passes depend on: the index manifest, the caps, the
hash of ragx's code and the labelled queries. A cache that exists under its key is therefore fresh
by construction (a changed index or code simply has another key), and any worker that can read the
folder (a local disk, NFS, a shared mount) can use it.

Writing is atomic: the one builder holds an exclusive lock on `<key>.lock` (other workers wanting
the same key wait on it and then read the finished cache instead of computing it again), builds
into a private temporary folder and renames it to its final name. A reader never sees a half-written
cache: the final folder either does not exist or is complete. Should a lock not be honoured (a
filesystem without working locks), the rename still keeps the first complete cache and the second
builder discards its own copy.

A ref (`refs/<dataset>-<split>-<build>`, one line: the key) names the latest cache of a dataset
split and build, so that a worker on a machine without the dataset's index can load the passes
alone (`passes_from=shared`).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
from dataclasses import asdict
from pathlib import Path
from typing import Any

import xxhash

from ragx.scoring.candidates import PassCaps

from .passes import build_cache, code_hash, index_fingerprint


def content_key(index: dict[str, Any], caps: PassCaps, code: str, queries) -> str:
    """Hash of everything the passes are a function of (and nothing else: no paths, no clocks)."""
    payload = {
        "index": index,
        "caps": asdict(caps),
        "code": code,
        "queries": [[q.id, q.text, q.files] for q in queries],
    }
    return xxhash.xxh3_128_hexdigest(json.dumps(payload, sort_keys=True).encode())


def cache_folder(root: Path, name: str, key: str) -> Path:
    return root / f"{name}-{key}"


def shared_passes(corpus, queries, caps: PassCaps, root: Path, name: str, build=build_cache) -> tuple[Path, bool]:
    """The folder of the passes of `queries` over `corpus`, built under a lock if no worker has yet.

    Returns (folder, built_here). `build(corpus, queries, caps, folder)` writes a cache into a folder.
    """
    root.mkdir(parents=True, exist_ok=True)
    key = content_key(index_fingerprint(corpus), caps, code_hash(), queries)
    final = cache_folder(root, name, key)
    built = False
    if not final.exists():
        built = _build_locked(final, lambda tmp: _shown(build, corpus, queries, caps, tmp, name))
    write_ref(root, name, key)
    return final, built


def _shown(build, corpus, queries, caps: PassCaps, folder: Path, name: str):
    """`build` with its queries counted on stderr when it takes a progress callback (build_cache does)."""
    if build is not build_cache:
        return build(corpus, queries, caps, folder)
    from .shown import counted

    return counted(f"caching passes of {name}", len(queries), "queries", lambda progress: build(corpus, queries, caps, folder, progress))


def _build_locked(final: Path, build) -> bool:
    with open(final.with_name(final.name + ".lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # blocks while another worker builds this very key
        try:
            if final.exists():
                return False  # built by the worker we waited for
            _remove_dead_builds(final)
            tmp = final.with_name(f"{final.name}.tmp-{socket.gethostname()}-{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            build(tmp)
            _fsync_tree(tmp)
            try:
                os.rename(tmp, final)  # atomic; fails if another (lock-less) builder got there first
            except OSError:
                if not final.exists():
                    raise
                shutil.rmtree(tmp, ignore_errors=True)
                return False
            return True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _remove_dead_builds(final: Path) -> None:
    """The temporary folders of pass-cache builds killed on this host (any key: their process is gone, so
    nothing owns them, and nothing else would ever remove them). Another machine's are left alone."""
    marker = f".tmp-{socket.gethostname()}-"
    for tmp in final.parent.glob(f"*{marker}*"):
        pid = tmp.name.rsplit(marker, 1)[1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(tmp, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def _fsync_tree(folder: Path) -> None:
    """Flush the files before the rename publishes them (a crash must not leave a renamed empty file)."""
    for path in folder.iterdir():
        with open(path, "rb") as fh:
            os.fsync(fh.fileno())


def write_ref(root: Path, name: str, key: str) -> None:
    refs = root / "refs"
    refs.mkdir(exist_ok=True)
    tmp = refs / f".{name}.{socket.gethostname()}-{os.getpid()}"
    tmp.write_text(key + "\n", encoding="utf-8")
    os.replace(tmp, refs / name)


def read_ref(root: Path, name: str) -> Path:
    """The cache folder a ref names (for workers that load passes without an index)."""
    ref = root / "refs" / name
    if not ref.exists():
        raise FileNotFoundError(f"no shared pass cache named {name} under {root}: run `python -m lab cache` first")
    return cache_folder(root, name, ref.read_text(encoding="utf-8").strip())
