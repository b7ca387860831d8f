"""The vector journal: vectors embedded during an index run, kept as they arrive, so a killed or failed
run's next start embeds only what was not embedded yet.

One append-only file per model identity beside the index (`.ragx/journal-<id>.vec`), keyed by the
text's key (ragx.text_keys). Each record is one embedded batch (its keys, its float32 vectors, a CRC of
both) written with one `write` call: a run killed mid-write leaves at most a torn last record, which
the CRC rejects and the next open cuts off. The journal is never part of the committed index: the run
that commits a generation deletes it (its vectors are in the index then).
"""

from __future__ import annotations

import os
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import xxhash

MAGIC = b"RAGXVJ1\n"
RECORD = struct.Struct("<4sIIi")  # record magic, rows, CRC32 of keys + vectors, 0 (16 bytes: keys stay 8-aligned)
RECORD_MAGIC = b"VJR1"
SYNC_SECONDS = 1.0  # fsync at most this often: a kill needs none (the kernel has the write), power loss does


def journal_paths(folder: Path) -> list[Path]:
    return sorted(folder.glob("journal-*.vec"))


def discard_journals(folder: Path) -> None:
    """After a commit: every vector a journal held that the index still needs is in the index now."""
    for path in journal_paths(folder):
        path.unlink(missing_ok=True)


class VectorJournal:
    """The journal of one model identity (the embedder's name and dimension)."""

    def __init__(self, folder: Path, identity: str, dim: int):
        self.identity, self.dim = identity, int(dim)
        tag = xxhash.xxh3_64_hexdigest(f"{identity}|{dim}".encode())
        self.path = folder / f"journal-{tag}.vec"
        name = identity.encode()
        pad = -(len(MAGIC) + 8 + len(name)) % 8  # records start 8-aligned: keys and vectors are viewed in place
        self._header = MAGIC + struct.pack("<II", len(name), self.dim) + name + b"\0" * pad
        self._fd: int | None = None
        self._synced = 0.0

    def recorded(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, vectors) of every whole record, keys sorted; a torn or damaged tail is cut off the file."""
        empty = np.empty(0, np.uint64), np.empty((0, self.dim), np.float32)
        try:
            data = np.fromfile(self.path, dtype=np.uint8)
        except FileNotFoundError:
            return empty
        if data[: len(self._header)].tobytes() != self._header:  # another identity's file (a hash collision) or damage
            self.path.unlink(missing_ok=True)
            return empty
        keys, starts, good_end = self._scan(data)
        if good_end < len(data):
            os.truncate(self.path, good_end)
        if not keys:
            return empty
        all_keys = np.concatenate(keys)
        rows = np.concatenate(starts)[:, None] + np.arange(self.dim)
        vectors = data[: good_end - good_end % 4].view(np.float32)[rows]
        order = np.argsort(all_keys, kind="stable")
        return all_keys[order], vectors[order]

    def _scan(self, data: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray], int]:
        """Per whole record: its keys and the float32 offset of each vector; the end of the last good record."""
        keys: list[np.ndarray] = []
        starts: list[np.ndarray] = []
        at, width = len(self._header), self.dim * 4
        while at + RECORD.size <= len(data):
            magic, n, crc, _ = RECORD.unpack(data[at : at + RECORD.size].tobytes())
            body = at + RECORD.size
            end = body + n * (8 + width)
            if magic != RECORD_MAGIC or end > len(data) or zlib.crc32(data[body:end].data) != crc:
                break
            keys.append(data[body : body + 8 * n].view(np.uint64).copy())
            starts.append((body + 8 * n) // 4 + self.dim * np.arange(n, dtype=np.int64))
            at = end
        return keys, starts, at

    def append(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """One batch, in one write (the file is created with its header on the first)."""
        body = np.ascontiguousarray(keys, dtype=np.uint64).tobytes() + np.ascontiguousarray(vectors, dtype=np.float32).tobytes()
        record = RECORD.pack(RECORD_MAGIC, len(keys), zlib.crc32(body), 0) + body
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            if os.fstat(self._fd).st_size == 0:
                os.write(self._fd, self._header)
        if os.write(self._fd, record) != len(record):  # a full disk: the torn record is cut off next time
            raise OSError(f"could not write the whole vector journal record to {self.path}")
        now = time.monotonic()
        if now - self._synced >= SYNC_SECONDS:
            os.fsync(self._fd)
            self._synced = now

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
