"""The first stage of an index run: what changes, as a `ChangeSet` (no arrays written, no SQL written).

diff against the store -> chunk new and changed files -> embed only texts that have no vector yet ->
chunk ids for the new chunks and the ids that go. Vectors of already indexed texts are reused, but
only from a generation whose `chunks.npz` and `vectors.npy` still match the checksums recorded at
commit: a damaged file is never a source of vectors (the texts are embedded again instead).
"""

from __future__ import annotations

import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Callable, ContextManager, Iterator, Protocol

import numpy as np

from ..config import Settings
from ..errors import FULL_RUN, CorruptIndexError, UsageError
from ..ingest import pdf
from ..ingest.anchors import extract as extract_anchors
from ..ingest.chunk import Chunk, ChunkSettings, chunk_text, detect_kind
from ..ingest.discover import FeedUnsafe, FoundFile, hash_bytes, read_text
from ..ingest.filetypes import MARKDOWN, is_pdf
from ..ingest.links import extract as extract_links
from ..lookup import find_sorted
from ..text_keys import text_keys
from .diff import CorpusDiff, Within, diff_corpus
from .embedding import embed_new
from .feed import Focus
from .journal import VectorJournal
from .layout import Layout
from .manifest_values import MAX_CHUNK_ID
from .snapshot import VECTORS_FORMAT, Snapshot, as_stored
from .store import FileRow, Store

# Version of the chunking rules. An index made under other rules is re-chunked in full once (vectors
# of unchanged indexed texts are reused, so that costs no embedding); 2 = frontmatter headers;
# 3 = anchor texts (an index from before has none until its notes are read again); 4 = base64 data-URI
# payloads left out of chunks; 5 = also JSON-escaped (`\/`) and type-less (`data:;base64,`) payloads;
# 6 = payloads left out of frontmatter headers, and a body-less note whose description is only a payload
# falls back to its title; 7 = code cut by its syntax, with its module and definitions' names in each chunk's
# header (ragx/ingest/code.py); 8 = BM25 terms also split and join identifiers (ragx/index/identifiers.py).
CHUNKER_VERSION = 8


def needs_rechunk(manifest: dict) -> bool:
    """An index made under older chunking rules, or with vectors stored in another precision, is
    re-chunked in full (its vectors are reused, rounded as they are stored now)."""
    if int(manifest.get("generation", 0)) == 0:
        return False
    return manifest.get("chunker", 1) != CHUNKER_VERSION or manifest.get("vectors", "float32") != VECTORS_FORMAT


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
    resumed_chunks: int = 0     # new chunks whose vector a killed or failed run had embedded (the journal: journal.py)
    problems: list[dict[str, str]] = field(default_factory=list)
    textless_pages: dict[str, list[int]] = field(default_factory=dict)  # PDFs read in this run: pages without text
    skipped: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    # Wall seconds per stage of the run, in the order run: plan (scan, chunk, embed), vectors (the ANN
    # index), graph (kNN lists, edge weights, rows), communities, write (the generation folder), store.
    stage_seconds: dict[str, float] = field(default_factory=dict)
    # How the run found its changes: "feed" (the paths `ragx watch` heard, ragx/index/feed.py), else
    # "walk" (every file); `scan_note` says why a watched corpus was walked.
    scan_kind: str = "walk"
    scan_note: str | None = None

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.stage_seconds[name] = self.stage_seconds.get(name, 0.0) + time.perf_counter() - started

    @property
    def chunks_per_second(self) -> float:
        return self.embedded_chunks / self.seconds if self.seconds > 0 else 0.0


@dataclass
class ChangeSet:
    """Everything an index run changes, before any array or row is written."""

    full: bool
    files: list[tuple[FoundFile, str]]            # (file, content hash) to insert
    chunks: list[tuple[int, Chunk]]               # (index into files, chunk) to insert
    new_ids: np.ndarray                           # chunk ids of `chunks`
    new_vecs: np.ndarray                          # float32 rows of `new_ids`
    gone_file_ids: list[int]                      # stored files deleted or changed
    removed: np.ndarray                           # their chunk ids (incremental runs)
    kept_old: np.ndarray                          # stored chunk ids that stay
    touched: list[tuple[FoundFile, FileRow]]      # same content, new stat
    next_file: int                                # id of files[0]
    next_chunk: int                               # the manifest's next_chunk_id after this run
    links: list[tuple[int, str, str]] = field(default_factory=list)        # (index into files, kind, target)
    anchors: list[tuple[int, str, str, str]] = field(default_factory=list)  # (index into files, kind, target, text)
    anchor_vecs: np.ndarray = field(default_factory=lambda: np.empty((0, 0), np.float32))  # a unit row per anchor
    undecodable: list[tuple[str, int, int]] = field(default_factory=list)  # (path, size, mtime_ns): not UTF-8, damaged PDF
    textless: dict[str, list[int]] = field(default_factory=dict)  # PDF path -> pages without text (read this run)

    @property
    def live(self) -> np.ndarray:
        return np.union1d(self.kept_old, self.new_ids)

    @property
    def only_undecodable(self) -> bool:
        """An incremental run whose only new files turned out not to be UTF-8 (or damaged PDFs): nothing to index."""
        return not self.full and not self.files and not self.gone_file_ids

    @property
    def pdfs_read(self) -> list[str]:
        """The PDFs read in this run: their text-less page records are rewritten."""
        return [f.path for f, _ in self.files if is_pdf(f.path)]


def scan(layout: Layout, store: Store, settings: Settings, full: bool, only: str | None, report: IndexReport, reporter: Reporter,
         since: int | None = None, focus: Focus | None = None) -> CorpusDiff:
    """The diff of an index run; `full` makes every found file new and every stored one deleted.
    `since`: the last run's scan start (ragx/index/diff.py: files written since are compared by content).
    `focus`: the folders a trusted change feed named (ragx/index/feed.py): only they are looked at."""
    # (an index with no trusted scan start compares every file once: CONFIRM_ALL, ragx/index/diff.py)
    diff = _focused(layout, store, settings, since, focus, report) if focus is not None and not full and only is None and since else None
    stored = store.files(rows_on_demand=True) if diff is None else None  # under the writer lock: rows read when needed
    if diff is None:
        diff = diff_corpus(layout.root, settings, None if full else stored, None if full else store.undecodable(),
                           None if full else since)
    if only is not None and not full:
        diff = diff.restricted_to(only)
    report.new, report.changed, report.unchanged = len(diff.new), len(diff.changed), diff.unchanged
    if full:
        assert stored is not None
        found = {f.path for f in diff.new}
        _refuse_to_drop_unreadable(diff.unreadable_of(path for path in stored if path not in found))
        report.deleted = sum(1 for path in stored if path not in found)
        diff.deleted = list(stored.values())
    else:
        report.deleted = len(diff.deleted)
    report.problems += [{"path": p.path, "reason": p.reason} for p in diff.problems]
    for p in diff.problems:
        reporter.warn(f"{p.path}: {p.reason}")
    report.skipped = len(diff.skipped)
    return diff


def _focused(layout: Layout, store: Store, settings: Settings, since: int | None, focus: Focus, report: IndexReport) -> CorpusDiff | None:
    """The diff of the feed's folders alone; None (and why, in the report) when that cannot stand in for
    the full walk."""
    stored, total = store.files_within(focus.deep, focus.shallow)
    try:
        diff = diff_corpus(layout.root, settings, None, store.undecodable(), since, Within(focus.deep, focus.shallow, stored, total))
    except FeedUnsafe as exc:
        report.scan_note = f"walked every file: {exc}"
        return None
    report.scan_kind = "feed"
    return diff


def _refuse_to_drop_unreadable(paths: list[str]) -> None:
    """A full run rebuilds from what it can read: it would drop indexed files that are only unreadable
    for now (an incremental run keeps them). Nothing already indexed is lost: refuse, say which."""
    if paths:
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        raise UsageError(f"{len(paths)} indexed file(s) cannot be read now ({shown}): `ragx index --full` would drop "
                         "them; make them readable or remove them first (a plain `ragx index` keeps them as indexed)")


def undecodable_rows(files: list[FoundFile]) -> list[tuple[str, int, int]]:
    return sorted({(f.path, f.size, f.mtime_ns) for f in files})


@dataclass
class _Chunked:
    files: list[tuple[FoundFile, str]] = field(default_factory=list)   # (file, content hash) to store
    chunks: list[tuple[int, Chunk]] = field(default_factory=list)      # (index into files, chunk)
    undecodable: list[FoundFile] = field(default_factory=list)         # read, but not UTF-8 (or a damaged PDF)
    textless: dict[str, list[int]] = field(default_factory=dict)       # PDF path -> pages without text
    links: list[tuple[int, str, str]] = field(default_factory=list)    # (index into files, kind, target)
    anchors: list[tuple[int, str, str, str]] = field(default_factory=list)  # (index into files, kind, target, text)


def _chunk_pdf(f: FoundFile, counter, chunk_settings: ChunkSettings, out: _Chunked, report: IndexReport, reporter: Reporter) -> None:
    """A PDF, page by page through pypdf (ragx/ingest/pdf.py); pages without text are recorded."""
    try:
        digest, chunks, textless = pdf.read_pdf(f.abspath, f.path, counter, chunk_settings)
    except pdf.READ_ERRORS as exc:
        # A damaged PDF is remembered like a file that is not UTF-8: drift and the next run skip it until
        # it changes. An unreadable one (permissions) or a missing pypdf is not: that can change alone.
        if isinstance(exc, pdf.DamagedPdf):
            out.undecodable.append(f)
        report.problems.append({"path": f.path, "reason": str(getattr(exc, "strerror", None) or exc)})
        reporter.warn(f"{f.path}: {report.problems[-1]['reason']}; not indexed")
        return
    if textless:
        out.textless[f.path] = report.textless_pages[f.path] = textless
        reporter.warn(f"{f.path}: no text on page(s) {', '.join(map(str, textless))} (scanned?); recorded, not indexed")
    out.files.append((f, digest))
    out.chunks.extend((len(out.files) - 1, c) for c in chunks)


def _chunk_files(files: list[FoundFile], counter, chunk_settings: ChunkSettings, report: IndexReport, reporter: Reporter) -> _Chunked:
    out = _Chunked()
    for f in files:
        if is_pdf(f.path):
            _chunk_pdf(f, counter, chunk_settings, out, report, reporter)
            continue
        try:
            data, text = read_text(f.abspath)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            reason = "not valid UTF-8" if isinstance(exc, UnicodeDecodeError) else str(getattr(exc, "strerror", None) or exc)
            if isinstance(exc, UnicodeDecodeError):  # remembered, so drift and the next run skip it until it changes
                out.undecodable.append(f)
            report.problems.append({"path": f.path, "reason": reason})
            reporter.warn(f"{f.path}: {reason}; not indexed")
            continue
        fi = len(out.files)
        # The stored hash is of the bytes actually chunked, so a file edited mid-run is seen next time.
        out.files.append((f, hash_bytes(data)))
        out.chunks.extend((fi, c) for c in chunk_text(f.path, data, text, counter, chunk_settings))
        if detect_kind(f.path, text) == MARKDOWN:  # the links the author wrote
            out.links.extend((fi, kind, target) for kind, target in extract_links(f.path, text))
            out.anchors.extend((fi, kind, target, anchor) for kind, target, anchor in extract_anchors(f.path, text))
    return out


def plan(
    layout: Layout, store: Store, settings: Settings, embedder, diff: CorpusDiff, manifest: dict, full: bool,
    reporter: Reporter, report: IndexReport,
) -> ChangeSet:
    counter = embedder.token_counter()
    chunk_settings = ChunkSettings(
        max_tokens=counter.max_content_tokens,
        target_tokens=min(settings.chunking.target_tokens, counter.max_content_tokens),
        min_tokens=settings.chunking.min_tokens,
    )
    chunked = _chunk_files(diff.new + diff.changed, counter, chunk_settings, report, reporter)
    files, chunks = chunked.files, chunked.chunks
    # A file that could not be read after all (not UTF-8, a damaged PDF) is a problem of the run, not
    # one of its new or changed files: the counts say what the run indexed.
    read = {f.path for f, _ in files}
    report.new -= sum(1 for f in diff.new if f.path not in read)
    report.changed -= sum(1 for f in diff.changed if f.path not in read)
    texts = [c.embed_text for _, c in chunks]  # frontmatter header + text
    gone_file_ids = [row.id for row in diff.deleted] + store.file_ids_of([f.path for f in diff.changed])
    removed = store.chunk_ids_of_files(gone_file_ids) if not full else np.empty(0, np.int64)
    # A full run may reuse any indexed text's vector; an incremental one those of the files it replaces
    # (edited, moved, renamed), so it never reads every chunk's text.
    reusable = reusable_vectors(layout, store, manifest, embedder, None if full else removed) if texts else None
    # The anchor texts (ragx/ingest/anchors.py) are embedded in the same pass, after the chunks.
    journal = VectorJournal(layout.dir, embedder.name, embedder.dim) if texts or chunked.anchors else None
    anchors = [a[3] for a in chunked.anchors]
    # The batch order: by the tokens embedded, header included (by the text's alone, a code tree's batches
    # padded 20% more tokens: flask-4045, batches of 16).
    lengths = np.array([c.embed_tokens for _, c in chunks] + [len(a) // 4 for a in anchors], np.int64)
    every_vec, every_fresh, every_resumed = vectors_for(texts + anchors, reusable, embedder, settings.embeddings.batch_size,
                                                        reporter, report, journal, lengths)
    new_vecs, fresh, anchor_vecs = every_vec[: len(texts)], every_fresh[: len(texts)], every_vec[len(texts):]
    report.resumed_chunks = int(every_resumed[: len(texts)].sum())
    report.embedded_chunks = int(fresh.sum()) - report.resumed_chunks
    report.reused_chunks = len(texts) - report.embedded_chunks - report.resumed_chunks
    report.embedded_files = sorted({files[fi][0].path for (fi, _), f in zip(chunks, fresh.tolist()) if f})

    next_chunk = first_new_chunk_id(store, manifest, len(texts), full)
    new_ids = np.arange(next_chunk, next_chunk + len(texts), dtype=np.int64)
    old_live = indexed_chunk_ids(layout, store, manifest) if not full else np.empty(0, np.int64)
    return ChangeSet(
        full=full, files=files, chunks=chunks, new_ids=new_ids,
        new_vecs=np.ascontiguousarray(as_stored(new_vecs)),  # the values the vector file will hold
        gone_file_ids=gone_file_ids, removed=removed,
        kept_old=np.setdiff1d(old_live, removed, assume_unique=True),
        touched=[] if full else diff.touched, next_file=store.next_file_id(),
        next_chunk=int(next_chunk + len(new_ids)), links=chunked.links,
        anchors=chunked.anchors, anchor_vecs=anchor_vecs,
        undecodable=undecodable_rows(diff.undecodable + chunked.undecodable), textless=chunked.textless,
    )


def first_new_chunk_id(store: Store, manifest: dict, count: int, full: bool) -> int:
    """The id of this run's first new chunk: the manifest's next_chunk_id, but never one a chunk of the
    store holds (a value that went back, or none: a full run repairing a bad one), so an id is never
    given to two texts while a reader may still see the first. Only a full run whose ids would pass
    MAX_CHUNK_ID starts again from 1 (it replaces every row); an incremental one is refused."""
    start = max(int(manifest.get("next_chunk_id", 1)), store.max_chunk_id() + 1)
    if start + count <= MAX_CHUNK_ID:
        return start
    if full:
        return 1
    raise CorruptIndexError(f"chunk ids would pass {MAX_CHUNK_ID} (the store's ids reach {start - 1}): {FULL_RUN}")


def indexed_chunk_ids(layout: Layout, store: Store, manifest: dict) -> np.ndarray:
    """The chunk ids indexed now: the current generation's id list (a few MB, checksummed), which the
    arrays of this run build on, rather than reading every chunk row (a second at a million chunks).
    The store's own list where that generation is missing or damaged."""
    try:
        return Snapshot.chunk_ids(layout.gen(int(manifest.get("generation", 0))), manifest.get("checksums"))
    except (CorruptIndexError, OSError):
        return store.chunk_ids()


def reusable_vectors(layout: Layout, store: Store, manifest: dict, embedder, pool: np.ndarray | None = None):
    """(sorted text keys, row of each, the vectors) of the chunks already indexed (`pool`: of those
    chunk ids only), when they came from this same embedder.

    Moved or renamed files, unchanged parts of edited files and rebuilds that only change the graph
    then cost no embedding at all. None when nothing can be reused, or when the generation's vector
    files fail their checksums (then everything is embedded again: never a damaged vector).
    """
    generation = int(manifest.get("generation", 0))
    if not generation or manifest.get("embedder") != embedder.name or manifest.get("dim") != embedder.dim:
        return None
    try:
        ids, vectors = Snapshot.load_vectors(layout.gen(generation), manifest.get("checksums"))
    except CorruptIndexError:
        return None
    chunk_ids, texts = store.chunk_texts(pool)
    if not len(chunk_ids):
        return None
    keys = text_keys(texts)
    order = np.argsort(keys, kind="stable")
    # Rows, not vectors: only the rows that are hit are read (all of them were 768 MB at a million chunks).
    return keys[order], np.searchsorted(ids, chunk_ids[order]), vectors


def vectors_for(texts: list[str], reusable, embedder, batch_size: int, reporter: Reporter, report: IndexReport,
                journal: VectorJournal | None = None, lengths: np.ndarray | None = None):
    """Vectors for `texts`: reused where the same text is indexed, else taken from the journal of a
    killed run, else embedded once per distinct text (embedding.py; `lengths`: tokens per text, else
    characters / 4). (vectors, fresh: a new vector, resumed: a new vector the journal held), the last
    two for the first of identical texts only."""
    vecs = np.empty((len(texts), embedder.dim), np.float32)
    fresh = np.ones(len(texts), dtype=bool)
    resumed = np.zeros(len(texts), dtype=bool)
    if not texts:
        return vecs, fresh, resumed
    keys = text_keys(texts)
    if reusable is not None:
        old_keys, old_rows, old_vecs = reusable
        pos, hit = find_sorted(old_keys, keys)
        vecs[hit] = old_vecs[old_rows[pos[hit]]]
        fresh = ~hit
    # Identical new texts (copied files, boilerplate) are embedded once.
    uniq, first, inverse = np.unique(keys[fresh], return_index=True, return_inverse=True)
    todo = np.flatnonzero(fresh)[first]
    t0 = time.perf_counter()
    if len(todo):
        with reporter.embedding(len(todo)) as advance:
            sizes = lengths[todo] if lengths is not None else np.array([len(texts[i]) // 4 for i in todo], np.int64)
            out, from_journal = embed_new([texts[i] for i in todo], uniq, sizes, embedder, batch_size, journal, advance)
        vecs[np.flatnonzero(fresh)] = out[inverse]
        fresh[:] = False
        fresh[todo] = True
        resumed[todo[from_journal]] = True
    report.embed_seconds = time.perf_counter() - t0
    return vecs, fresh, resumed
