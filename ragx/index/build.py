"""An index run: plan (diff, chunk, embed -> ChangeSet) -> arrays (a new generation folder) -> store.apply.

Incremental by default: only new and changed files are chunked and embedded, deleted ones are dropped,
and only the kNN lists they touch are recomputed (exactly: the result equals a full rebuild's). The
generation folder is complete on disk, with its checksums, before the one transaction that names it.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..config import Settings
from ..errors import CorruptIndexError
from . import feed
from .arrays import build_arrays
from .dates import git_dates
from .diff import CONFIRM_ALL, CorpusDiff, discover_settings, scan_start_ns
from .identity import check_identity, index_identity
from .journal import discard_journals
from .labels import TERMS_CACHE
from .layout import Layout
from .plan import CHUNKER_VERSION, IndexReport, Reporter, SilentReporter, needs_rechunk, plan, scan, undecodable_rows
from .snapshot import VECTORS_FORMAT, Snapshot
from .store import SCAN_STARTED, RunExtras, Store, scan_started
from .verified import HNSW, RunChecks, checksums_remembered, has_postings, verify

__all__ = ["IndexReport", "Reporter", "SilentReporter", "run_index", "index_identity", "check_identity"]


def run_index(
    root: Path, settings: Settings, embedder, *, full: bool = False, only: str | None = None, reporter: Reporter | None = None
) -> IndexReport:
    """`only`: a POSIX path relative to the root (file or folder); other files are left as indexed."""
    reporter = reporter or SilentReporter()
    started = time.perf_counter()
    layout = Layout(root)
    report = IndexReport(root=str(root), full=full)
    with layout.writer_lock(), checksums_remembered() as checks:
        store = Store(layout.db, create=True)
        try:
            _run(layout, store, settings, embedder, full=full, only=only, reporter=reporter, report=report, checks=checks)
        finally:
            store.close()
    report.seconds = time.perf_counter() - started
    return report


def _run(layout: Layout, store: Store, settings: Settings, embedder, *, full: bool, only: str | None, reporter: Reporter,
         report: IndexReport, checks: RunChecks) -> None:
    if full:  # a rebuild reads every page anyway: refuse a damaged database file instead of building on it
        damage = store.integrity_problems()
        if damage:
            raise CorruptIndexError(damage[0])
        (layout.dir / TERMS_CACHE).unlink(missing_ok=True)  # and counts every chunk's terms afresh
    manifest = store.manifest(repairing=full)  # a full run rebuilds what a bad value describes
    identity = index_identity(settings, embedder)
    full = full or needs_rechunk(manifest)
    if not full:
        check_identity(manifest, identity)
    checks.trust_recorded = not full  # a full run copies reused vectors into a new base: it hashes them
    generation = int(manifest.get("generation", 0))
    layout.remove_stale(keep={generation, generation - 1})
    started_ns = scan_start_ns()  # before the walk (ragx/index/diff.py: what the next run compares ctimes with)
    with report.stage("plan"):
        # `ragx watch`'s feed: asked before the walk, so whatever changes after its answer is heard again
        heard = _hear(layout, manifest, settings, report) if only is None else feed.Heard(None, None, None)
        diff = scan(layout, store, settings, full, only, report, reporter, _compare_since(manifest, only), heard.focus)
    # Recorded only by a run that saw every indexed file; otherwise the older start stays (still true).
    started = started_ns if full or diff.complete else None
    cursor = _cursor(heard, diff, started)
    have_arrays = generation > 0 and (layout.gen(generation) / HNSW).exists()
    # A generation from before BM25's postings gets them on the next run, changed files or not.
    converted = have_arrays and not has_postings(manifest)
    if not diff.has_changes and have_arrays and not converted:
        rows = undecodable_rows(diff.undecodable)
        if diff.touched or {p: (s, m) for p, s, m in rows} != store.undecodable():
            store.record_undecodable(diff.touched, rows)
        _record_scan_start(store, manifest, diff, started, cursor)
        _no_new_generation(layout, store, report)
        return
    with report.stage("plan"):
        change = plan(layout, store, settings, embedder, diff, manifest, full, reporter, report)
    if have_arrays and change.only_undecodable and not converted:  # nothing indexable changed: no new generation
        store.record_undecodable(change.touched, change.undecodable)
        _record_scan_start(store, manifest, diff, started, cursor)
        _no_new_generation(layout, store, report)
        return
    arrays = build_arrays(layout, store, manifest, change, settings, embedder.dim, report.stage)
    new_gen = generation + 1
    with report.stage("write"):
        checksums = arrays.write(layout, new_gen)
    with report.stage("store"):
        _commit(layout, store, change, arrays, identity, new_gen, checksums, started, cursor)
    discard_journals(layout.dir)  # the vectors it kept are committed now (ragx/index/journal.py)
    layout.remove_stale(keep={new_gen, generation})
    _fill_counts(store, report)


def _commit(layout: Layout, store: Store, change, arrays, identity: dict, new_gen: int, checksums: dict[str, str],
            started: int | None, cursor: dict | None) -> None:
    store.apply(
        change,
        arrays,
        identity
        | ({SCAN_STARTED: started} if started is not None else {})  # None: the recorded one stays
        | ({feed.CURSOR_KEY: cursor} if cursor is not None else {})
        | {
            "generation": new_gen,
            "next_chunk_id": change.next_chunk,
            "checksums": checksums,
            "chunker": CHUNKER_VERSION,
            "vectors": VECTORS_FORMAT,
            "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "ragx_version": _version(),
        },
        # Labels reuse their cached term counts; git is asked once, before the transaction, not in it.
        RunExtras(terms_cache=layout.dir / TERMS_CACHE, git_dates=git_dates(layout.root)),
    )


def _compare_since(manifest: dict, only: str | None) -> int | None:
    """The scan start this run's diff compares ctimes with: the recorded one; for an index without one
    (from before starts were recorded, or imported with none) CONFIRM_ALL, since this run will record
    its own start, which promises every file was confirmed after it (ragx/index/diff.py). A run limited
    to a path records none, so it keeps size and mtime alone rather than read every file."""
    recorded = scan_started(manifest)
    if recorded is None and only is None and int(manifest.get("generation", 0)) > 0:
        return CONFIRM_ALL
    return recorded


def _hear(layout: Layout, manifest: dict, settings: Settings, report: IndexReport) -> feed.Heard:
    """Ask `ragx watch` (if one runs) for the changes since the last run's cursor (ragx/index/feed.py)."""
    from ..ingest.discover import ignore_files_above

    heard = feed.hear(layout.dir, manifest,
                      lambda: feed.rules_fingerprint(repr(discover_settings(settings)), ignore_files_above(layout.root)))
    if heard.why_not is not None:
        report.scan_note = heard.why_not
    return heard


def _cursor(heard: feed.Heard, diff: CorpusDiff, started: int | None) -> dict | None:
    """The feed cursor this run records: where the watcher's log stood when the run began, if the run saw
    every indexed file (as for its scan start). A corpus the feed cannot stand for (followed links,
    hard-linked files) records why, so the next run walks every file without asking again."""
    if heard.answer is None or started is None:
        return None
    return feed.cursor_of(heard.answer, heard.rules, diff.feed_unsafe)


def _record_scan_start(store: Store, manifest: dict, diff: CorpusDiff, started: int | None, cursor: dict | None) -> None:
    """A run without a new generation records its scan start only where that spares later work: files
    it read only because their ctime is past the recorded start, and files whose stat it rewrote
    (touched: their new ctime is past it too), would be read again by every run; an index from before
    scan starts were recorded gets its first. Else nothing is written (the older start stays true, see
    ragx/index/diff.py)."""
    values: dict = {}
    if started is not None and (diff.rehashed or diff.touched or scan_started(manifest) is None):
        values[SCAN_STARTED] = started
    if cursor is not None and cursor != manifest.get(feed.CURSOR_KEY):  # the next run reads the feed from here
        values[feed.CURSOR_KEY] = cursor
    if values:
        store.record_manifest(values)


def _no_new_generation(layout: Layout, store: Store, report: IndexReport) -> None:
    """An index built before community labels, file dates or fingerprints existed gets them on its next run."""
    manifest = store.manifest()
    folder, checksums = layout.gen(int(manifest["generation"])), manifest.get("checksums")
    # Nothing to write, but no run reports success over a generation queries would refuse: its files
    # are verified as a query verifies them (a stat each when unchanged since they were hashed).
    verify(folder, checksums)
    store.backfill(layout.dir / TERMS_CACHE, lambda: git_dates(layout.root), lambda: Snapshot.chunk_files(folder, checksums))
    _fill_counts(store, report)


def _version() -> str:
    from .. import __version__

    return __version__


def _fill_counts(store: Store, report: IndexReport) -> None:
    counts = store.counts()
    report.files, report.chunks, report.edges, report.communities = (
        counts["files"], counts["chunks"], counts["edges"], counts["communities"],
    )
