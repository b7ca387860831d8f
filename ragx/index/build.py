"""An index run: discover -> diff -> chunk -> embed -> derived arrays -> one SQLite transaction.

Incremental by default: only new and changed files are chunked and embedded, deleted ones are dropped,
and only the kNN lists they touch are recomputed (exactly: the result equals a full rebuild's).
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ContextManager, Protocol

import numpy as np
import xxhash

from ..config import Settings
from ..errors import CorruptIndexError, ManifestMismatchError
from ..ingest.chunk import Chunk, ChunkSettings, chunk_text, detect_kind
from ..ingest.filetypes import MARKDOWN
from ..ingest.links import extract as extract_links
from ..ingest.discover import FoundFile, Problem, hash_bytes, read_text
from .communities import leiden
from .diff import CorpusDiff, diff_corpus
from .graph import Graph, gaining_rows, pair_weights, top_k_lists, undirected
from .layout import Layout
from .snapshot import HNSW, Snapshot
from .store import INDEXED_TEXT_SQL, SCHEMA_VERSION, Store
from .vectors import VectorIndex

REBUILD_DELETED_SHARE = 0.25  # rebuild the HNSW file once a quarter of what it holds is deleted
# [ranking] Version of the chunking rules. An index made under other rules is re-chunked in full once
# (vectors of unchanged chunk texts are reused, so that costs no embedding); 2 = frontmatter headers.
CHUNKER_VERSION = 2


class Reporter(Protocol):
    def embedding(self, total: int) -> ContextManager[Callable[[int], None]]: ...
    def warn(self, message: str) -> None: ...


class SilentReporter:
    def embedding(self, total: int) -> ContextManager[Callable[[int], None]]:
        return nullcontext(lambda n: None)

    def warn(self, message: str) -> None:
        pass


@dataclass
class IndexReport:
    root: str
    full: bool
    files: int = 0
    chunks: int = 0
    edges: int = 0
    communities: int = 0
    new: int = 0
    changed: int = 0
    deleted: int = 0
    unchanged: int = 0
    embedded_files: list[str] = field(default_factory=list)
    embedded_chunks: int = 0
    reused_chunks: int = 0      # new chunks whose exact text already had a vector (indexed, or earlier in this run)
    problems: list[dict[str, str]] = field(default_factory=list)
    skipped: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0

    @property
    def chunks_per_second(self) -> float:
        return self.embedded_chunks / self.seconds if self.seconds > 0 else 0.0


def index_identity(settings: Settings, embedder) -> dict:
    """What an index depends on; an incremental run under other values would mix incompatible data."""
    return {
        "schema_version": SCHEMA_VERSION,
        "embedder": embedder.name,
        "dim": int(embedder.dim),
        "chunking": {
            "max_tokens": int(embedder.token_counter().max_content_tokens),
            "target_tokens": settings.chunking.target_tokens,
            "min_tokens": settings.chunking.min_tokens,
        },
        "graph": {"k": settings.graph.k, "min_sim": settings.graph.min_sim},
    }


def check_identity(stored: dict, wanted: dict) -> None:
    for key, value in wanted.items():
        if key in stored and stored[key] != value:
            raise ManifestMismatchError(
                f"index was built with {key} = {stored[key]}, config now says {value}: run `ragx index --full`"
            )


@dataclass
class _Prepared:
    files: list[tuple[FoundFile, str]]            # (file, content hash) to store
    chunks: list[tuple[int, Chunk]]               # (index into files, chunk)
    links: list[tuple[int, str, str]] = field(default_factory=list)  # (index into files, kind, target)


def _chunk_files(files: list[FoundFile], counter, chunk_settings: ChunkSettings, report: IndexReport, reporter) -> _Prepared:
    prepared = _Prepared([], [])
    for f in files:
        try:
            data, text = read_text(f.abspath)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            reason = "not valid UTF-8" if isinstance(exc, UnicodeDecodeError) else str(getattr(exc, "strerror", None) or exc)
            report.problems.append({"path": f.path, "reason": reason})
            reporter.warn(f"{f.path}: {reason}; not indexed")
            continue
        fi = len(prepared.files)
        # The stored hash is of the bytes actually chunked, so a file edited mid-run is seen next time.
        prepared.files.append((f, hash_bytes(data)))
        prepared.chunks.extend((fi, c) for c in chunk_text(f.path, data, text, counter, chunk_settings))
        if detect_kind(f.path, text) == MARKDOWN:  # [ranking] the links the author wrote
            prepared.links.extend((fi, kind, target) for kind, target in extract_links(f.path, text))
    return prepared


def run_index(
    root: Path, settings: Settings, embedder, *, full: bool = False, only: str | None = None, reporter: Reporter | None = None
) -> IndexReport:
    """`only`: a POSIX path relative to the root (file or folder); other files are left as indexed."""
    reporter = reporter or SilentReporter()
    started = time.perf_counter()
    layout = Layout(root)
    report = IndexReport(root=str(root), full=full)
    with layout.writer_lock():
        store = Store(layout.db, create=True)
        try:
            _run(layout, store, settings, embedder, full, only, reporter, report)
        finally:
            store.close()
    report.seconds = time.perf_counter() - started
    return report


def _run(
    layout: Layout, store: Store, settings: Settings, embedder, full: bool, only: str | None, reporter: Reporter, report: IndexReport
) -> None:
    manifest = store.manifest()
    identity = index_identity(settings, embedder)
    full = full or _needs_rechunk(manifest)
    if not full:
        check_identity(manifest, identity)
    generation = int(manifest.get("generation", 0))
    layout.remove_stale(keep={generation, generation - 1})
    current_gen = layout.gen(generation)
    have_arrays = generation > 0 and (current_gen / HNSW).exists()

    stored = store.files()
    diff: CorpusDiff = diff_corpus(layout.root, settings, {} if full else stored)
    if only is not None and not full:
        diff = diff.restricted_to(only)
    report.new, report.changed, report.unchanged = len(diff.new), len(diff.changed), diff.unchanged
    if full:  # every found file is indexed anew; every stored one goes
        found = {f.path for f in diff.new}
        report.deleted = sum(1 for path in stored if path not in found)
        diff.deleted = list(stored.values())
    else:
        report.deleted = len(diff.deleted)
    report.problems += [{"path": p.path, "reason": p.reason} for p in diff.problems]
    for p in diff.problems:
        reporter.warn(f"{p.path}: {p.reason}")
    report.skipped = len(diff.skipped)

    if not diff.has_changes and have_arrays:
        if diff.touched:
            with store.transaction() as db:
                db.executemany(
                    "UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?",
                    [(f.size, f.mtime_ns, row.id) for f, row in diff.touched],
                )
        _fill_counts(store, report)
        return

    counter = embedder.token_counter()
    chunk_settings = ChunkSettings(
        max_tokens=counter.max_content_tokens,
        target_tokens=min(settings.chunking.target_tokens, counter.max_content_tokens),
        min_tokens=settings.chunking.min_tokens,
    )
    prepared = _chunk_files(diff.new + diff.changed, counter, chunk_settings, report, reporter)

    # ---- embed (only texts the index has no vector for yet) ----
    texts = [c.embed_text for _, c in prepared.chunks]  # [ranking] header + text
    reusable = _reusable_vectors(layout, store, manifest, embedder, have_arrays)
    new_vecs, fresh = _vectors_for(texts, reusable, embedder, settings.embeddings.batch_size, reporter, report)
    report.embedded_chunks = int(fresh.sum())
    report.reused_chunks = len(texts) - report.embedded_chunks
    report.embedded_files = sorted({prepared.files[fi][0].path for (fi, _), f in zip(prepared.chunks, fresh.tolist()) if f})

    # ---- ids ----
    next_chunk = int(manifest.get("next_chunk_id", 1))
    new_ids = np.arange(next_chunk, next_chunk + len(texts), dtype=np.int64)
    gone_paths = [row.path for row in diff.deleted] + [f.path for f in diff.changed]
    gone_file_ids = [stored[p].id for p in gone_paths if p in stored]
    old_live = store.chunk_ids() if not full else np.empty(0, np.int64)
    removed = _chunk_ids_of_files(store, gone_file_ids) if not full else np.empty(0, np.int64)
    kept_old = np.setdiff1d(old_live, removed, assume_unique=True)
    live = np.union1d(kept_old, new_ids)

    # ---- vectors: vectors.npy is the source of truth; hnswlib holds its own copy for ANN ----
    new_vecs = np.ascontiguousarray(new_vecs, dtype=np.float32)
    if have_arrays and not full:
        old = Snapshot.load(current_gen)
        kept_vecs = np.asarray(old.vectors[old.positions(kept_old)])
        vindex = VectorIndex.load(current_gen / HNSW, embedder.dim, extra_capacity=len(new_ids))
        vindex.remove(removed)
        vindex.add(new_ids, new_vecs)
    else:
        if not full and len(old_live):
            raise ManifestMismatchError("index arrays are missing: run `ragx index --full`")
        kept_old = np.empty(0, np.int64)  # nothing usable to build on: every chunk is new
        kept_vecs = np.empty((0, embedder.dim), np.float32)
        vindex = VectorIndex.build(new_ids, new_vecs)
    all_vecs = np.concatenate([kept_vecs, new_vecs])  # rows follow `live`: every new id exceeds every old one
    if vindex.stored > len(live) / (1 - REBUILD_DELETED_SHARE):
        vindex = VectorIndex.build(live, all_vecs)

    # ---- graph ----
    k, min_sim = settings.graph.k, settings.graph.min_sim
    if full:
        src = dst = np.empty(0, np.int64)
        w = np.empty(0, np.float64)
    else:
        src, dst, w = store.knn_arrays()
    touches_removed = np.isin(dst, removed)
    losing = np.setdiff1d(np.unique(src[touches_removed]), removed)
    keep_row = ~(np.isin(src, removed) | touches_removed)
    src, dst, w = src[keep_row], dst[keep_row], w[keep_row]
    gaining = gaining_rows(new_ids, new_vecs, kept_old, kept_vecs, src, w, k, min_sim)
    recompute = np.union1d(np.union1d(losing, gaining), new_ids)
    pos = np.searchsorted(live, recompute)
    rs, rd = top_k_lists(recompute, all_vecs[pos], live, all_vecs, k, min_sim)
    rw = pair_weights(lambda ids: all_vecs[np.searchsorted(live, ids)], rs, rd)
    good = rw >= min_sim
    rs, rd, rw = rs[good], rd[good], rw[good]
    stay = ~np.isin(src, recompute)
    src, dst, w = np.concatenate([src[stay], rs]), np.concatenate([dst[stay], rd]), np.concatenate([w[stay], rw])
    a, b, uw = undirected(src, dst, w)
    graph = Graph.from_edges(live, a, b, uw)
    community = leiden(live, a, b, uw, settings.graph.leiden_resolution, settings.graph.leiden_seed)

    # ---- derived arrays: a new generation, complete on disk before the commit names it ----
    next_file = int(store.db.execute("SELECT coalesce(max(id), 0) + 1 FROM files").fetchone()[0])
    stored_ids, stored_files = store.chunk_files()
    new_file_ids = next_file + np.array([fi for fi, _ in prepared.chunks], dtype=np.int64)
    kept_files = stored_files[np.searchsorted(stored_ids, kept_old)]
    file_ids = np.concatenate([kept_files, new_file_ids])  # live = kept_old then new_ids, already sorted
    new_gen = generation + 1
    Snapshot(layout.gen(new_gen), file_ids, all_vecs, graph).write(layout.gen(new_gen), vindex)

    # ---- one transaction ----
    with store.transaction() as db:
        if full:
            db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('delete-all')")
            for table in ("chunks", "files", "knn", "communities", "chunk_headers", "links"):
                db.execute(f"DELETE FROM {table}")
        else:
            _fill_temp(db, "gone_files", gone_file_ids)
            db.execute(
                f"INSERT INTO chunks_fts(chunks_fts, rowid, text) SELECT 'delete', c.id, {INDEXED_TEXT_SQL} FROM chunks c "
                "WHERE c.file_id IN (SELECT id FROM temp.gone_files)"
            )
            _delete_file_extras(db)
            db.execute("DELETE FROM chunks WHERE file_id IN (SELECT id FROM temp.gone_files)")
            db.execute("DELETE FROM files WHERE id IN (SELECT id FROM temp.gone_files)")
            _fill_temp(db, "redo", np.union1d(recompute, removed).tolist())
            db.execute("DELETE FROM knn WHERE src IN (SELECT id FROM temp.redo)")
            _fill_temp(db, "gone_chunks", removed.tolist())
            db.execute("DELETE FROM knn WHERE dst IN (SELECT id FROM temp.gone_chunks)")
            db.executemany(
                "UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?",
                [(f.size, f.mtime_ns, row.id) for f, row in diff.touched],
            )
        db.executemany(
            "INSERT INTO files(id, path, size, mtime_ns, hash) VALUES (?, ?, ?, ?, ?)",
            [(next_file + i, f.path, f.size, f.mtime_ns, h) for i, (f, h) in enumerate(prepared.files)],
        )
        db.executemany(
            "INSERT INTO chunks(id, file_id, ordinal, byte_start, byte_end, line_start, line_end, n_tokens, kind, text) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (int(cid), next_file + fi, c.ordinal, c.byte_start, c.byte_end, c.line_start, c.line_end, c.n_tokens, c.kind, c.text)
                for cid, (fi, c) in zip(new_ids.tolist(), prepared.chunks)
            ],
        )
        _insert_file_extras(db, prepared, new_ids, next_file)
        if len(new_ids):
            db.execute(
                f"INSERT INTO chunks_fts(rowid, text) SELECT c.id, {INDEXED_TEXT_SQL} FROM chunks c WHERE c.id >= ?",
                (int(new_ids[0]),),
            )
        db.executemany(
            "INSERT INTO knn(src, dst, weight) VALUES (?, ?, ?)",
            zip(rs.tolist(), rd.tolist(), rw.tolist()),
        )
        db.execute("DELETE FROM communities")
        db.executemany("INSERT INTO communities(chunk_id, community) VALUES (?, ?)", zip(live.tolist(), community.tolist()))
        Store.write_manifest(
            db,
            identity
            | {
                "generation": new_gen,
                "next_chunk_id": int(next_chunk + len(new_ids)),
                "chunker": CHUNKER_VERSION,
                "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "ragx_version": _version(),
            },
        )
    layout.remove_stale(keep={new_gen, generation})
    _fill_counts(store, report)


def _version() -> str:
    from .. import __version__

    return __version__


def _text_key(texts: list[str]) -> np.ndarray:
    return np.array([xxhash.xxh3_64_intdigest(t.encode("utf-8")) for t in texts], dtype=np.uint64)


def _reusable_vectors(layout: Layout, store: Store, manifest: dict, embedder, have_arrays: bool):
    """(text keys, vectors) of the chunks already indexed, when they came from this same embedder.

    Moved or renamed files, unchanged parts of edited files and rebuilds that only change the graph
    then cost no embedding at all. None when nothing can be reused.
    """
    if not have_arrays or manifest.get("embedder") != embedder.name or manifest.get("dim") != embedder.dim:
        return None
    try:
        snap = Snapshot.load(layout.gen(int(manifest["generation"])))
    except CorruptIndexError:
        return None  # damaged arrays: a --full run re-embeds everything instead
    rows = store.db.execute(f"SELECT c.id, {INDEXED_TEXT_SQL} FROM chunks c ORDER BY c.id").fetchall()
    if not rows:
        return None
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    keys = _text_key([r[1] for r in rows])
    order = np.argsort(keys, kind="stable")
    return keys[order], snap.vectors[snap.positions(ids[order])]


def _vectors_for(texts: list[str], reusable, embedder, batch_size: int, reporter: Reporter, report: IndexReport):
    """Vectors for `texts`: reused where the same text is indexed, embedded once per distinct text otherwise."""
    vecs = np.empty((len(texts), embedder.dim), np.float32)
    fresh = np.ones(len(texts), dtype=bool)
    if not texts:
        return vecs, fresh
    keys = _text_key(texts)
    if reusable is not None:
        old_keys, old_vecs = reusable
        pos = np.minimum(np.searchsorted(old_keys, keys), len(old_keys) - 1)
        hit = old_keys[pos] == keys
        vecs[hit] = old_vecs[pos[hit]]
        fresh = ~hit
    # Identical new texts (copied files, boilerplate) are embedded once.
    uniq, first, inverse = np.unique(keys[fresh], return_index=True, return_inverse=True)
    todo = np.flatnonzero(fresh)[first]
    t0 = time.perf_counter()
    if len(todo):
        with reporter.embedding(len(todo)) as advance:
            out = embedder.embed_documents([texts[i] for i in todo], batch_size=batch_size, progress=advance)
        vecs[np.flatnonzero(fresh)] = out[inverse]
        fresh[:] = False
        fresh[todo] = True
    report.embed_seconds = time.perf_counter() - t0
    return vecs, fresh


def _needs_rechunk(manifest: dict) -> bool:
    """[ranking] An index made under older chunking rules is re-chunked in full (vectors are reused)."""
    return int(manifest.get("generation", 0)) > 0 and manifest.get("chunker", 1) != CHUNKER_VERSION


def _delete_file_extras(db) -> None:
    """[ranking] Headers and links of the files in temp.gone_files (before their chunks go)."""
    db.execute("DELETE FROM chunk_headers WHERE chunk_id IN (SELECT id FROM chunks WHERE file_id IN (SELECT id FROM temp.gone_files))")
    db.execute("DELETE FROM links WHERE file_id IN (SELECT id FROM temp.gone_files)")


def _insert_file_extras(db, prepared: _Prepared, new_ids: np.ndarray, next_file: int) -> None:
    """[ranking] The new chunks' frontmatter headers and the new files' links."""
    db.executemany(
        "INSERT INTO chunk_headers(chunk_id, header) VALUES (?, ?)",
        [(int(cid), c.header) for cid, (_, c) in zip(new_ids.tolist(), prepared.chunks) if c.header],
    )
    db.executemany(
        "INSERT INTO links(file_id, kind, target) VALUES (?, ?, ?)",
        [(next_file + fi, kind, target) for fi, kind, target in prepared.links],
    )


def _fill_temp(db, name: str, ids) -> None:
    db.execute(f"CREATE TEMP TABLE IF NOT EXISTS {name}(id INTEGER PRIMARY KEY)")
    db.execute(f"DELETE FROM temp.{name}")
    db.executemany(f"INSERT OR IGNORE INTO temp.{name}(id) VALUES (?)", ((int(i),) for i in ids))


def _chunk_ids_of_files(store: Store, file_ids: list[int]) -> np.ndarray:
    if not file_ids:
        return np.empty(0, np.int64)
    _fill_temp(store.db, "lookup_files", file_ids)
    rows = store.db.execute("SELECT id FROM chunks WHERE file_id IN (SELECT id FROM temp.lookup_files) ORDER BY id").fetchall()
    return np.array([r[0] for r in rows], dtype=np.int64)


def _fill_counts(store: Store, report: IndexReport) -> None:
    counts = store.counts()
    report.files, report.chunks, report.edges, report.communities = (
        counts["files"], counts["chunks"], counts["edges"], counts["communities"],
    )
