"""One generation of an index's derived arrays, written whole before the commit that names it.

    gen-NNNNNN/chunks.npz    the chunks live when vectors.npy was written (its rows) and the file id of each
    gen-NNNNNN/chunks-delta.npz  the chunks deleted and added since (chunk_lists.py)
    gen-NNNNNN/vectors.npy   float16 unit vectors, row i = base_ids[i] (memory-mapped on load)
    gen-NNNNNN/delta.npy     float16 unit vectors added since vectors.npy was written (stored_vectors.py)

Vectors are stored in float16: half the disk and half the page cache of float32, and a query
process maps the file instead of holding a copy (the rows it scores are read and widened to
float32: retrieve.cosines, the exact rescoring of HNSW's candidates). Every vector is rounded to
float16 as soon as it is made (plan.py), so the graph weights and the file hold the very same
numbers whether a run is full or incremental. The HNSW file (usearch) holds the same float16 values
and is memory-mapped by readers too (vectors.py).
    gen-NNNNNN/graph.npz     CSR rows of the similarity graph (ids, indptr, nbr, weight): the base
    gen-NNNNNN/graph-delta.npz  the rows changed since graph.npz was written (graph.py: Graph)
    gen-NNNNNN/vectors.hnsw  the ANN index over vectors.npy's rows (labels = chunk ids), loaded on first search
    gen-NNNNNN/lexicon.npz   BM25's postings (lexicon.py): the base part
    gen-NNNNNN/lexicon-delta.npz  the postings of chunks added since lexicon.npz was written

chunks.npz, vectors.npy, vectors.hnsw, graph.npz and lexicon.npz may be hard links to the previous generation's
files (never modified in place: a file is only ever written whole under a temporary folder), so a small
incremental run writes only chunks-delta.npz, delta.npy, graph-delta.npz and lexicon-delta.npz.
"""

from __future__ import annotations

import io
import os
import shutil
import struct
import weakref
import zipfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import CorruptIndexError
from . import verified
from .chunk_lists import base_linkable, read_chunk_lists, write_chunk_lists
from .graph import Adjacency, Graph
from .lexicon import PART_ARRAYS, POSTINGS, Lexicon, LexiconPart
from .stored_vectors import StoredVectors
from .vectors import DeletedEntriesError, VectorIndex
from .verified import (
    CHUNK_LISTS,
    CHUNKS,
    DELTA,
    FILES,
    GRAPH,
    GRAPH_DELTA,
    HINT,
    HNSW,
    LEXICON,
    LEXICON_DELTA,
    READ_BY_SNAPSHOT,
    VECTORS_NPY,
    verify,
)

GRAPH_ARRAYS = ("indptr", "nbr", "weight")
VECTOR_DTYPE = np.float16
# An ANN file the library cannot open is replaced, for a reader, by an exact search of every chunk up to
# this many (200k x 384 float32: 300 MB, ~0.1 s a query); a larger index asks for `ragx index`.
EXACT_FALLBACK_MAX = 200_000
VECTORS_FORMAT = "float16+delta+usearch"  # the manifest's "vectors": an index stored otherwise is rebuilt once (vectors reused)


def as_stored(vectors: np.ndarray) -> np.ndarray:
    """float32 vectors holding exactly the values the vector file will hold."""
    return np.asarray(vectors, dtype=np.float32).astype(VECTOR_DTYPE).astype(np.float32)


@dataclass
class Snapshot:
    folder: Path
    file_ids: np.ndarray
    vectors: np.ndarray   # row i = ids[i], float16 (a LiveRows over base + delta; rows read are widened by their users)
    graph: Graph
    stored: StoredVectors
    lexicon: Lexicon | None = None  # None: a generation from before the postings (BM25 from FTS5)
    _vindex: VectorIndex | None = field(default=None, repr=False)

    @property
    def ids(self) -> np.ndarray:
        return self.graph.ids

    def positions(self, chunk_ids: np.ndarray) -> np.ndarray:
        """Row of each chunk id (ids must be live)."""
        return np.searchsorted(self.graph.ids, chunk_ids)

    @cached_property
    def vindex(self) -> VectorIndex:
        if self._vindex is not None:
            return self._vindex
        return self._load_ann()

    def _load_ann(self) -> VectorIndex:
        """The HNSW file, told which of its chunks are gone and which were added since (the delta).
        A file holding deleted entries (written before ragx stopped writing them) cannot be opened:
        up to EXACT_FALLBACK_MAX chunks are searched exactly instead, until the next index run
        rewrites the file."""
        dead = self.stored.dead(self.ids)
        try:
            index = VectorIndex.load(self.folder / HNSW, self.vectors.shape[1])
        except DeletedEntriesError:
            if len(self.ids) > EXACT_FALLBACK_MAX:
                raise
            return VectorIndex.exact(self.ids, np.asarray(self.vectors, dtype=np.float32))
        return index.attach(dead, self.stored.delta_ids, self.stored.delta, len(self.stored.base_ids) - len(dead))

    @classmethod
    def load(cls, folder: Path, *, with_ann: bool = False, checksums: dict[str, str] | None = None) -> "Snapshot":
        """`with_ann`: also load the HNSW file now, so the snapshot never reads its folder again
        (a writer may delete an old generation's folder while a reader still uses it).
        `checksums`: the manifest's; every file is verified against them before it is trusted.
        The BM25 postings are read with the HNSW file (a query needs both; an index run neither)."""
        verify(folder, checksums, FILES if with_ann else READ_BY_SNAPSHOT,
               trust_unchanged=True if with_ann else None)
        try:
            ids, file_ids, stored, slots = _read_vectors(folder)
            graph = Graph(ids, _adjacency(folder / GRAPH, ids), _adjacency(folder / GRAPH_DELTA, None))
            lexicon = load_lexicon(folder, ids) if with_ann else None
        except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise CorruptIndexError(f"index arrays in {folder} are unreadable ({exc}): run `ragx index --full`") from None
        if slots is None or len(file_ids) != len(ids) or not graph.check() or (lexicon is not None and not lexicon.check()):
            raise CorruptIndexError(f"index arrays in {folder} disagree in length: run `ragx index --full`")
        snap = cls(folder, file_ids, stored.rows(ids, slots), graph, stored, lexicon)
        if with_ann:
            try:
                snap._vindex = snap._load_ann()
            except (OSError, RuntimeError) as exc:
                raise CorruptIndexError(f"ANN index in {folder} is unreadable ({exc}): run `ragx index --full`") from None
        return snap

    @staticmethod
    def load_vectors(folder: Path, checksums: dict[str, str] | None) -> tuple[np.ndarray, np.ndarray]:
        """(sorted chunk ids, their vectors) of a generation, verified against its checksums: the
        only source vector reuse takes vectors from (the graph and HNSW files are not needed)."""
        verify(folder, checksums, (*CHUNK_LISTS, VECTORS_NPY, DELTA))
        try:
            ids, _, stored, slots = _read_vectors(folder)
        except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise CorruptIndexError(f"index arrays in {folder} are unreadable ({exc}): {HINT}") from None
        if stored.base.ndim != 2 or slots is None:
            raise CorruptIndexError(f"index arrays in {folder} disagree in length: {HINT}")
        return ids, stored.rows(ids, slots)

    @staticmethod
    def chunk_ids(folder: Path, checksums: dict[str, str] | None) -> np.ndarray:
        """A generation's sorted live chunk ids alone (chunk_lists.py, verified): CorruptIndexError or
        OSError when the folder is missing, damaged or unreadable."""
        return _chunk_arrays(folder, checksums, ("ids",))[0]

    @staticmethod
    def chunk_files(folder: Path, checksums: dict[str, str] | None) -> tuple[np.ndarray, np.ndarray]:
        """(sorted live chunk ids, the file id of each) of a generation, as `chunk_ids` reads them."""
        ids, file_ids = _chunk_arrays(folder, checksums, ("ids", "file_ids"))
        return ids, file_ids

    def write(
        self, target: Path, vindex: VectorIndex | None, base_from: tuple[Path, dict[str, str]] | None,
        graph_from: tuple[Path, dict[str, str]] | None, lexicon: "LexiconFiles",
    ) -> dict[str, str]:
        """Write every file into a temporary folder, fsync, then rename it to `target` in one step.

        `base_from` (a generation folder and its checksums): hard-link its vectors.npy and vectors.hnsw
        (their checksums carry over) instead of writing the base and `vindex`; `graph_from`: hard-link
        its graph.npz (this graph's base) instead of writing it; `lexicon`: the postings (its base
        part None: hard-linked from `lexicon.base_from`).
        Returns each file's checksum, for the manifest of the commit that names this generation."""
        tmp = target.with_name(f"tmp-{target.name}-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        checksums = self._write_chunk_lists(tmp, base_from)
        parts = {GRAPH_DELTA: self.graph.delta} if graph_from is not None else {GRAPH: self.graph.base, GRAPH_DELTA: self.graph.delta}
        for name, rows in parts.items():
            with open(tmp / name, "wb") as fh:
                save_mappable_npz(fh, ids=rows.ids, indptr=rows.indptr, nbr=rows.nbr, weight=rows.weight)
        with open(tmp / DELTA, "wb") as fh:
            np.save(fh, np.ascontiguousarray(self.stored.delta, dtype=VECTOR_DTYPE))
        checksums |= lexicon.write(tmp)
        if graph_from is not None:
            _link_or_copy(graph_from[0] / GRAPH, tmp / GRAPH)
            checksums[GRAPH] = graph_from[1][GRAPH]
        if base_from is not None:
            for name in (VECTORS_NPY, HNSW):
                _link_or_copy(base_from[0] / name, tmp / name)
                checksums[name] = base_from[1][name]
        else:
            with open(tmp / VECTORS_NPY, "wb") as fh:
                np.save(fh, np.ascontiguousarray(self.stored.base, dtype=VECTOR_DTYPE))
            assert vindex is not None, "a new base needs its HNSW index"
            vindex.save(tmp / HNSW)
        for name in FILES:
            if name not in checksums:
                with open(tmp / name, "rb") as fh:
                    os.fsync(fh.fileno())
                checksums[name] = verified.file_checksum(tmp / name)
        verified.record(tmp, checksums)
        if target.exists():  # an orphan of a run that crashed before its commit
            shutil.rmtree(target)
        os.replace(tmp, target)
        fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return checksums

    def _write_chunk_lists(self, tmp: Path, base_from: tuple[Path, dict[str, str]] | None) -> dict[str, str]:
        """chunks-delta.npz, and chunks.npz: linked with the vector base it describes (its checksum carried
        over, returned) unless that generation's is from before the chunk delta (then written once)."""
        linked = base_from is not None and base_linkable(base_from[0])
        if base_from is None:
            assert np.array_equal(self.stored.base_ids, self.graph.ids), "a new vector base holds every live chunk"
        write_chunk_lists(tmp, self.graph.ids, self.file_ids, self.stored.base_ids, self.stored.delta_ids, linked)
        if not linked:
            return {}
        assert base_from is not None
        _link_or_copy(base_from[0] / CHUNKS, tmp / CHUNKS)
        return {CHUNKS: base_from[1][CHUNKS]}


def _read_vectors(folder: Path) -> tuple[np.ndarray, np.ndarray, StoredVectors, np.ndarray | None]:
    """(live ids, file ids, stored vectors, the stored row of each live id or None if one is missing);
    a generation from before the delta has its base only."""
    lists = read_chunk_lists(folder)
    ids, file_ids, base_ids, delta_ids = lists.ids, lists.file_ids, lists.base_ids, lists.delta_ids
    base = np.load(folder / VECTORS_NPY, mmap_mode="r").view(np.ndarray)  # mapped; read as a plain array (see mapped_npz)
    delta = np.load(folder / DELTA) if (folder / DELTA).exists() else np.empty((0, base.shape[1]), VECTOR_DTYPE)
    if base.shape[0] != len(base_ids) or delta.shape[0] != len(delta_ids) or (len(delta) and delta.shape[1] != base.shape[1]):
        raise ValueError("vector files and their id lists disagree in length")
    stored = StoredVectors(base_ids, base, delta_ids, delta)
    # the lists' own rows (no search of a million ids), else searched (the lists held whole: older format)
    return ids, file_ids, stored, lists.slots if lists.slots is not None else stored.slots(ids)


@dataclass(frozen=True)
class LexiconFiles:
    """The postings a new generation writes: a new base part, or the previous generation's linked."""

    base: LexiconPart | None                    # None: hard-link base_from's lexicon.npz
    delta: LexiconPart
    base_from: tuple[Path, dict[str, str]] | None = None

    def write(self, tmp: Path) -> dict[str, str]:
        """Write (or link) both parts into the temporary folder; the checksums of linked files."""
        parts = {LEXICON_DELTA: self.delta} if self.base is None else {LEXICON: self.base, LEXICON_DELTA: self.delta}
        for name, part in parts.items():
            with open(tmp / name, "wb") as fh:
                save_mappable_npz(fh, **part.arrays())
        if self.base is not None:
            return {}
        assert self.base_from is not None, "a linked lexicon base needs the generation it comes from"
        _link_or_copy(self.base_from[0] / LEXICON, tmp / LEXICON)
        return {LEXICON: self.base_from[1][LEXICON]}


def _chunk_arrays(folder: Path, checksums: dict[str, str] | None, keys: tuple[str, ...]) -> list[np.ndarray]:
    """The named int64 lists of a generation (chunk_lists.ChunkLists fields), verified first."""
    verify(folder, checksums, CHUNK_LISTS)
    try:
        lists = read_chunk_lists(folder)
        return [np.asarray(getattr(lists, key), dtype=np.int64) for key in keys]
    except (KeyError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise CorruptIndexError(f"index arrays in {folder} are unreadable ({exc}): {HINT}") from None


def lexicon_parts(folder: Path) -> tuple[np.ndarray, LexiconPart]:
    """(the base part's chunk ids, the whole delta part) of a generation that has postings."""
    base = mapped_npz(folder / LEXICON, ("ids",))[0]  # mapped: its length is all a run needs
    return base, _lexicon_part(folder / LEXICON_DELTA)


def load_lexicon(folder: Path, live: np.ndarray) -> Lexicon | None:
    """The generation's postings, memory-mapped; None for a generation from before them."""
    if not (folder / LEXICON).exists():
        return None
    return Lexicon(_lexicon_part(folder / LEXICON, POSTINGS), _lexicon_part(folder / LEXICON_DELTA, POSTINGS), live)


def _lexicon_part(path: Path, read: tuple[str, ...] = ()) -> LexiconPart:
    """A postings file (its `read` arrays read slice by slice, the rest mapped); absent, an empty part."""
    return LexiconPart(*mapped_npz(path, PART_ARRAYS, read=read)) if path.exists() else LexiconPart.empty()


def graph_base_linkable(folder: Path) -> bool:
    """Whether a generation's graph.npz names its own rows, so a later generation can keep it as its base
    (one written before graph deltas existed holds the rows of that generation's live chunks only)."""
    try:
        with zipfile.ZipFile(folder / GRAPH) as zf:
            return "ids.npy" in zf.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def _adjacency(path: Path, ids_if_absent: np.ndarray | None) -> Adjacency:
    """Graph rows from an .npz file. A base written before graph deltas existed has no `ids`: its rows
    are the generation's live ids (`ids_if_absent`); a missing delta file is an empty delta."""
    if ids_if_absent is None and not path.exists():
        return Adjacency.empty()
    with zipfile.ZipFile(path) as zf:
        has_ids = "ids.npy" in zf.namelist()
    names = ("ids", *GRAPH_ARRAYS) if has_ids else GRAPH_ARRAYS
    arrays = mapped_npz(path, names)
    ids = np.asarray(arrays.pop(0)) if has_ids else ids_if_absent
    if ids is None:
        raise ValueError(f"{path.name} lists no chunk ids")
    return Adjacency(ids, *arrays)


ALIGN = 64  # where each array of a mapped .npz starts in its file (numpy pads .npy headers to this too)
_PAD_FIELD = 0x7061  # a zip "extra field" id no zip tool assigns a meaning to: padding before the data


def save_mappable_npz(fh: BinaryIO, **arrays: np.ndarray) -> None:
    """An .npz file (np.load reads it) whose arrays start at multiples of ALIGN bytes in the file.

    np.savez places each array wherever its zip entry happens to end, so a mapped member is mostly
    unaligned, and numpy then copies a whole unaligned array before a binary search in it (0.5 ms per
    `searchsorted` in the graph's 1M chunk ids: every query's graph walk did that several times).
    Here each entry's local header carries an extra field sized to put the array data on a boundary."""
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, array in arrays.items():
            array = np.ascontiguousarray(array)
            header = io.BytesIO()
            np.lib.format.write_array_header_2_0(header, np.lib.format.header_data_from_array_1_0(array))
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.file_size = header.tell() + array.nbytes
            zip64_field = 20  # zipfile adds one to the local header when forced (sizes of any length)
            data_at = fh.tell() + 30 + len(info.filename.encode()) + 4 + zip64_field + header.tell()
            info.extra = struct.pack("<HH", _PAD_FIELD, -data_at % ALIGN) + bytes(-data_at % ALIGN)
            with zf.open(info, "w", force_zip64=True) as out:
                out.write(header.getvalue())
                out.write(array.reshape(-1).view(np.uint8).data)  # bytes, not rows: zipfile counts len()


def mapped_npz(path: Path, names: tuple[str, ...], read: tuple[str, ...] = ()) -> list:
    """Arrays of an .npz file, memory-mapped where they lie (members are stored uncompressed, aligned
    when save_mappable_npz wrote them), so a reader holds only the pages it touches (the graph of a
    million chunks is ~200 MB); a compressed member is read whole. Members named in `read` are
    FileRows instead: read slice by slice, never mapped."""
    out: list = []
    opened = _OpenFile(path) if read else None
    with zipfile.ZipFile(path) as zf, open(path, "rb") as fh:
        for name in names:
            info = zf.getinfo(f"{name}.npy")
            if info.compress_type != zipfile.ZIP_STORED:
                with zf.open(info) as member:
                    out.append(np.lib.format.read_array(member))
                continue
            fh.seek(info.header_offset + 26)  # the local header's name and extra-field lengths
            name_len, extra_len = struct.unpack("<HH", fh.read(4))
            fh.seek(info.header_offset + 30 + name_len + extra_len)
            version = np.lib.format.read_magic(fh)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read_header(fh)
            if dtype.hasobject:
                raise ValueError(f"{name} holds Python objects")
            if int(np.prod(shape)) == 0:
                out.append(np.empty(shape, dtype))
                continue
            if name in read and len(shape) == 1:
                assert opened is not None
                out.append(FileRows(opened, fh.tell(), dtype, shape[0]))
                continue
            mapped = np.memmap(path, dtype=dtype, mode="r", offset=fh.tell(), shape=shape, order="F" if fortran else "C")
            out.append(mapped.view(np.ndarray))  # the same pages; a plain array's item is ~10x cheaper to read
    return out


class _OpenFile:
    """A file descriptor held for as long as some FileRows need it (they survive the folder's deletion)."""

    def __init__(self, path: Path):
        self.fd = os.open(path, os.O_RDONLY)
        weakref.finalize(self, os.close, self.fd)


class FileRows:
    """A 1-d array stored in a file, read with pread one slice at a time instead of memory-mapped.

    For arrays read in scattered runs (BM25's postings): the kernel maps whole large page-cache folios
    around a fault, so on a mapping 200 queries that read ~15 MB of postings left ~370 MiB of the
    postings file resident and counted in the process's RSS (1M chunks). A pread maps nothing."""

    def __init__(self, opened: _OpenFile, offset: int, dtype: np.dtype, length: int):
        self._file, self._offset, self.dtype, self._length = opened, offset, dtype, length

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, rows: slice) -> np.ndarray:
        lo, hi, step = rows.indices(self._length)
        if step != 1:
            raise IndexError("FileRows reads contiguous slices only")
        count = max(hi - lo, 0)
        data = os.pread(self._file.fd, count * self.dtype.itemsize, self._offset + lo * self.dtype.itemsize)
        if len(data) != count * self.dtype.itemsize:
            raise OSError(f"short read from an index file: {len(data)} of {count * self.dtype.itemsize} bytes")
        return np.frombuffer(data, self.dtype)


def _link_or_copy(source: Path, target: Path) -> None:
    """A hard link (the file is never modified in place); a copy where links are not possible."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
