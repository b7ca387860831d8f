"""Move an index between machines: `ragx export FILE` / `ragx import FILE`.

An export is a gzip tar of exactly these members:

    ragx-export.json   the fingerprint: format, ragx version, what the index was built with (model,
                       dimension, chunking, graph settings), counts, a digest of every file's path and
                       content hash, and a SHA-256 of each other member
    index.sqlite       a consistent copy of the store (SQLite's backup API)
    gen/<name>         the derived arrays of the generation that copy names

Import checks the archive against its fingerprint and the fingerprint against this corpus's config,
then installs it the way an index run commits: arrays in a new generation folder first, then the
store replaced in one SQLite backup step (a damaged store, which no reader can be using, is replaced by
a rename instead, so `--force` repairs it). Files whose content differs from what was indexed are
reported by path; the next `ragx index` re-indexes only those (their rows carry the exporter's hashes,
and files whose content is the same only get their size and mtime updated here). The comparison reads
every file whose size and mtime match the export (ragx/index/diff.py CONFIRM_ALL): the exporter's
recorded scan start is another machine's clock and copy, no promise that a file here has the exported
bytes under the same size and mtime. The installed manifest records this import's own scan start in
place of the exporter's, no later than the inode change of any file it reports changed, so the next
run finds those again.

Export never writes into the index folder, over the corpus's config or ragx's settings file, over one
of the corpus's files, or over any other existing file inside the corpus folder but an earlier export
(an archive there would destroy what it exports, or break every command); an earlier export there, or
an existing file outside the corpus folder, it replaces only with `--force`.

Import reads the fingerprint first and checks its shape in one place (`_checked_fingerprint`): an
archive whose fingerprint is unreadable or malformed is "not a ragx export"; one whose fingerprint is
sound but whose later tar headers, gzip stream or member checksums fail is "damaged or incomplete".
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CorruptIndexError, ManifestMismatchError, NoIndexError, UsageError, sqlite_error
from .layout import Layout
from .snapshot import Snapshot
from .store import Store, StoredFiles
from .verified import FILES as GEN_FILES
from .verified import OPTIONAL as GEN_OPTIONAL

if TYPE_CHECKING:  # the corpus walk loads only when an import compares the files
    from .diff import CorpusDiff

IMPORT_TEMP = "tmp-gen-import-{pid}"  # a tmp-gen-* name: the next index run removes one left by a crash

FORMAT_FAMILY = "ragx.archive."
FORMAT = FORMAT_FAMILY + "v1"
FINGERPRINT = "ragx-export.json"
DB = "index.sqlite"
IDENTITY_KEYS = ("schema_version", "embedder", "dim", "chunking", "graph")
MEMBERS = {FINGERPRINT, DB, *(f"gen/{name}" for name in GEN_FILES)}
# a generation written before a file existed has none (an export of it, or by an older ragx, neither)
REQUIRED = MEMBERS - {f"gen/{name}" for name in GEN_OPTIONAL}


def export_index(corpus, target: Path, *, force: bool = False) -> dict[str, Any]:
    """Write `corpus`'s committed index to `target` (holding a shared lock, so no run changes it meanwhile).

    `target` is an absolute, resolved path; an existing file there is replaced only with `force`.
    """
    layout = corpus.layout
    if not layout.exists():
        raise NoIndexError(f"no index in {layout.root}: run `ragx index`")
    _check_target(corpus, target, force=force)
    with layout.reader_lock():  # staged beside the target: .ragx may be read-only
        work = Path(tempfile.mkdtemp(prefix=".ragx-export-", dir=target.parent))
        try:
            copy = work / DB
            store = Store(layout.db, readonly=True)
            try:
                store.backup_to(copy)
            finally:
                store.close()
            fingerprint = _fingerprint_of(copy)
            gen = layout.gen(int(fingerprint["generation"]))
            Snapshot.load(gen)  # refuse to export arrays that do not load
            members = {DB: copy, **{f"gen/{n}": gen / n for n in GEN_FILES if n not in GEN_OPTIONAL or (gen / n).exists()}}
            fingerprint["members"] = {name: _sha256(path) for name, path in members.items()}
            _write_tar(target, fingerprint, members)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return {"file": str(target), "bytes": target.stat().st_size, **{k: fingerprint[k] for k in ("identity", "counts", "files_digest")}}


def _check_target(corpus, target: Path, *, force: bool) -> None:
    """Refuse a target whose loss could not be undone, before anything is built. Never, even with `force`:
    the index folder, the corpus's config or ragx's settings file (an archive there breaks every command),
    the corpus's files, or an existing file inside the corpus folder that is not an earlier export.
    Elsewhere an existing file is replaced only with `force`."""
    from ..config import PROJECT_FILE, rc_path

    if target.is_dir():
        raise UsageError(f"{target} is a folder; give a file name such as index.ragx.tar.gz")
    folder = target.parent
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder: export to a file in a folder that exists" if folder.exists()
                         else f"folder {folder} does not exist: create it, or export to a file in a folder that does")
    root = Path(os.path.realpath(corpus.root))
    index_dir = corpus.layout.dir.resolve()
    if target == index_dir or target.is_relative_to(index_dir):
        raise UsageError(f"{target} is inside the index folder {index_dir}: export to a file outside it")
    for settings, what in ((root / PROJECT_FILE, "the corpus's config"), (Path(os.path.realpath(rc_path())), "ragx's settings file")):
        if target == settings:
            raise UsageError(f"{target} is {what}: export to another file name")
    clash = _corpus_file_at(corpus, target)
    if clash is not None:
        raise UsageError(f"{target} is the corpus file {clash}: export to a file that ragx does not index")
    exists = os.path.lexists(target)
    if exists and target.is_relative_to(root) and not _is_export(target):
        raise UsageError(f"{target} is a file in the corpus folder {root} and not a ragx export: "
                         "export to a new file name, or outside the corpus folder")
    if exists and not force:
        raise UsageError(f"{target} already exists; `ragx export --force` replaces it")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write in folder {folder} (permission denied): export to a folder you can write")


def _is_export(path: Path) -> bool:
    """Whether `path` is a regular file whose first member is a ragx export's fingerprint (which the
    exporter writes first): a cheap test that decompresses only that member."""
    if not path.is_file():  # a FIFO or a device: never opened
        return False
    try:
        with tarfile.open(path, "r:*") as tar:
            first = tar.next()
            member = tar.extractfile(first) if first is not None and first.name == FINGERPRINT else None
            fingerprint = json.loads(member.read().decode("utf-8")) if member is not None else None
    except (tarfile.TarError, OSError, EOFError, ValueError, zlib.error):
        return False
    return isinstance(fingerprint, dict) and str(fingerprint.get("format", "")).startswith(FORMAT_FAMILY)


def _corpus_file_at(corpus, target: Path) -> str | None:
    """The corpus path of `target` if it is one of the corpus's files (indexed, or to be indexed by the
    next run), else None. Nothing outside the root is (discovery refuses links that leave it); under
    it the file table answers, and only an existing file it does not list costs a walk."""
    from ..ingest.discover import discover
    from .diff import discover_settings

    if not target.is_relative_to(corpus.root):
        return None
    rel = target.relative_to(corpus.root).as_posix()
    store = Store(corpus.layout.db, readonly=True)
    try:
        stored = store.files()
    finally:
        store.close()
    if rel in stored or not target.exists():
        return rel if rel in stored else None
    found = discover(corpus.root, discover_settings(corpus.settings), stored.stats).files
    # through a symlinked folder inside the root a file has another path; the name test spares realpath calls
    return next((f.path for f in found if Path(f.path).name == target.name and Path(os.path.realpath(f.abspath)) == target), None)


def _fingerprint_of(db_path: Path) -> dict[str, Any]:
    from .. import __version__

    store = Store(db_path, readonly=True)
    try:
        manifest = store.manifest()
        if "generation" not in manifest:
            raise NoIndexError("no finished index run to export: run `ragx index`")
        counts = store.row_counts(("files", "chunks"))
        digest = store.files_digest()
    finally:
        store.close()
    return {
        "format": FORMAT,
        "ragx_version": __version__,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "identity": {k: manifest.get(k) for k in IDENTITY_KEYS},
        "generation": manifest["generation"],
        "counts": counts,
        "files_digest": digest,
    }


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _write_tar(target: Path, fingerprint: dict[str, Any], members: dict[str, Path]) -> None:
    """Write to a temporary name, then rename: a failed export never leaves a half archive behind."""
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with tarfile.open(tmp, "w:gz", compresslevel=6) as tar:
            data = json.dumps(fingerprint, indent=2, sort_keys=True).encode("utf-8")
            info = tarfile.TarInfo(FINGERPRINT)
            info.size, info.mtime = len(data), int(time.time())
            tar.addfile(info, io.BytesIO(data))
            for name, path in members.items():
                tar.add(path, arcname=name, recursive=False)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# ---- import ---------------------------------------------------------------------------------------

def peek_fingerprint(source: Path) -> dict[str, Any]:
    """The fingerprint alone, checked (see `_checked_fingerprint`), read without unpacking the rest."""
    try:
        with tarfile.open(source, "r:*") as tar:
            return _fingerprint_in(tar, source)
    except tarfile.ReadError:  # no tar (gzip, bzip2, xz or plain) can be read from its start
        raise CorruptIndexError(f"{source} is not a ragx export (not a .tar.gz archive)") from None
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise _damaged(source, exc) from None
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror or exc}") from None


def _fingerprint_in(tar: tarfile.TarFile, source: Path) -> dict[str, Any]:
    """The checked fingerprint of the open archive: the first member the exporter writes, found by
    reading members only up to it (any other position is accepted, at the cost of reading further)."""
    member = next((m for m in tar if m.name == FINGERPRINT), None)
    reader = tar.extractfile(member) if member is not None else None
    if reader is None:  # none, or an entry of that name that is not a regular file
        raise CorruptIndexError(f"{source} is not a ragx export (no {FINGERPRINT} in it)")
    return _checked_fingerprint(reader.read(), source)


def _checked_fingerprint(data: bytes, source: Path) -> dict[str, Any]:
    """`data` parsed as a fingerprint, its shape checked once here for every reader: what import, the
    identity check and its report use is there, of the right type; the members it lists are ones an
    export holds, each with a SHA-256."""
    def malformed(why: str) -> CorruptIndexError:
        return CorruptIndexError(f"{source} is not a ragx export (damaged or incomplete {FINGERPRINT}: {why})")

    try:
        fingerprint = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise malformed("not UTF-8 JSON") from None
    if not isinstance(fingerprint, dict):
        raise malformed(f"a JSON {type(fingerprint).__name__}, not an object")
    form = fingerprint.get("format")
    if not isinstance(form, str):
        raise malformed("no format")
    if form != FORMAT:
        from .. import __version__

        if form.startswith(FORMAT_FAMILY):
            raise CorruptIndexError(f"{source} is a ragx export in format {form!r}, which ragx {__version__} cannot read "
                                    f"(it reads {FORMAT!r}): upgrade ragx here, or export again with this ragx version")
        raise CorruptIndexError(f"{source} is not a ragx export (unknown format {form!r})")
    identity = fingerprint.get("identity")
    if not isinstance(identity, dict):
        raise malformed("no identity object")
    missing = [key for key in IDENTITY_KEYS if key not in identity]
    if missing:
        raise malformed(f"identity lacks {', '.join(missing)}")
    if not _is_int(identity["schema_version"]):
        raise malformed("schema_version is not a number")
    members = fingerprint.get("members")
    if not isinstance(members, dict):
        raise malformed("no members object")
    odd = sorted(str(name) for name, digest in members.items() if name not in MEMBERS - {FINGERPRINT} or not _is_sha256(digest))
    if odd:
        raise malformed(f"unexpected member or checksum: {', '.join(repr(n) for n in odd[:3])}")
    absent = sorted(REQUIRED - {FINGERPRINT} - members.keys())
    if absent:
        raise malformed(f"members lacks {', '.join(absent)}")
    if not isinstance(fingerprint.get("files_digest"), str):
        raise malformed("no files_digest")
    counts = fingerprint.get("counts")
    if not isinstance(counts, dict) or not all(_is_int(counts.get(k)) for k in ("files", "chunks")):
        raise malformed("no counts of files and chunks")
    if not isinstance(fingerprint.get("created_at"), str):
        raise malformed("no created_at")
    return fingerprint


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_sha256(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _some(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _damaged(source: Path, exc: BaseException | str) -> CorruptIndexError:
    if isinstance(exc, EOFError):
        detail = "it ends early: cut short while copying?"
    elif isinstance(exc, str):
        detail = exc
    else:
        detail = str(exc) or type(exc).__name__
    return CorruptIndexError(f"{source} is damaged or incomplete ({detail}): copy it again, or export it again")


def read_archive(source: Path, into: Path) -> dict[str, Any]:
    """Extract `source` into the folder `into` after checking its members; returns the fingerprint.

    Past a readable fingerprint a failure of the tar, gzip or checksum layer is damage (a bit flipped
    or the file cut short in transit), and said so; the whole gzip stream is read, so its CRC counts."""
    try:
        with tarfile.open(source, "r:*") as tar:
            fingerprint = _fingerprint_in(tar, source)
            try:
                members = tar.getmembers()  # a damaged header ends the list early: missing members
                names = {m.name for m in members}
                bad = sorted(m.name for m in members if not m.isfile() or m.name not in MEMBERS)
                if bad:
                    raise CorruptIndexError(f"{source} is not a ragx export (unexpected members: {bad[:3]})")
                listed = {FINGERPRINT, *fingerprint["members"]}
                if names != listed:
                    lost, extra = sorted(listed - names), sorted(names - listed)
                    raise _damaged(source, f"missing {_some(lost)}" if lost else f"{_some(extra)} without a checksum")
                tar.extractall(into, filter="data")
                if tar.fileobj is not None:
                    while tar.fileobj.read(1 << 20):  # to the end of the stream: gzip checks its CRC there
                        pass
            except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
                raise _damaged(source, exc) from None
    except tarfile.ReadError:
        raise CorruptIndexError(f"{source} is not a ragx export (not a .tar.gz archive)") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:  # before the fingerprint was read
        raise _damaged(source, exc) from None
    for name, digest in fingerprint["members"].items():
        if _sha256(into / name) != digest:
            raise CorruptIndexError(f"{source}: {name} does not match its checksum (damaged in transit?)")
    store = Store(into / DB, readonly=True)
    try:
        digest = store.files_digest()
    finally:
        store.close()
    if digest != fingerprint["files_digest"]:
        raise CorruptIndexError(f"{source}: the file list does not match its fingerprint")
    Snapshot.load(into / "gen")
    return fingerprint


def check_identity(fingerprint: dict[str, Any], wanted: dict[str, Any]) -> None:
    """The export must have been built the way this corpus's config would build it (`fingerprint` as
    `_checked_fingerprint` returns it). The schema version is ragx's own, not a setting: another one
    means another ragx wrote the export."""
    from .. import __version__

    identity = fingerprint["identity"]
    for key in IDENTITY_KEYS:
        have = identity[key]
        if key not in wanted or have == wanted[key]:
            continue
        if key == "schema_version":
            by = fingerprint.get("ragx_version")
            by = f"ragx {by}" if isinstance(by, str) else "ragx"
            newer = have > wanted[key]
            raise ManifestMismatchError(
                f"the export was written by {'a newer' if newer else 'an older'} ragx ({by}, index schema {have}; "
                f"ragx {__version__} here reads schema {wanted[key]}): "
                + ("upgrade ragx here" if newer else "export it again with this ragx version")
                + ", or build the index here with `ragx index`"
            )
        raise ManifestMismatchError(
            f"the export was built with {key} = {have}, this corpus's config says {wanted[key]}: "
            "set the same in ragx.toml, or build the index here with `ragx index --full`"
        )


def install(layout: Layout, unpacked: Path, touched: list[tuple[str, int, int]], scan_started_ns: int | None = None) -> int:
    """Put the unpacked index in place (caller holds the writer lock); returns its generation number.

    `touched`: (path, size, mtime_ns) of files whose content matches the export, so their rows get this
    machine's stat and are not re-hashed by every later run. `scan_started_ns`: what the next index run
    compares this machine's ctimes with (ragx/index/diff.py), replacing the exporter's; None: none.
    """
    imported = Store.committed_generation(unpacked / DB) or 0
    generation = max(_newest_generation(layout), imported) + 1  # a number no reader of the old index can be using
    staged = Store(unpacked / DB)
    try:
        staged.stamp_import(generation, touched, scan_started_ns)
    finally:
        staged.close()
    target = layout.gen(generation)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(unpacked / "gen", target)  # arrays first, then the commit that names them
    _replace_db(layout, unpacked / DB)
    layout.remove_stale(keep={generation})
    return generation


def _newest_generation(layout: Layout) -> int:
    """The highest generation the index names or has a folder for; 0 for none. A damaged database
    names none it can tell, so the folders count too: the new number must not reuse one of them."""
    folders = [int(p.name[4:]) for p in layout.dir.glob("gen-*") if p.name[4:].isdigit()]
    try:
        named = (Store.committed_generation(layout.db) or 0) if layout.exists() else 0
    except sqlite3.DatabaseError as exc:
        if not isinstance(sqlite_error(exc), CorruptIndexError):
            raise  # a full disk or a permission problem is not a damaged index: say that instead
        named = 0
    return max([named, *folders])


def _replace_db(layout: Layout, staged: Path) -> None:
    """Make `staged` the index database. A readable one is replaced in one SQLite backup step (readers
    see old or new); a damaged one cannot be opened for that, and no reader can be using it, so the
    staged file is renamed over it."""
    try:
        store = Store(layout.db, create=True)
    except CorruptIndexError:
        _rename_db(layout, staged)
        return
    try:
        store.replace_with(staged)
    finally:
        store.close()


def _rename_db(layout: Layout, staged: Path) -> None:
    # The damaged database's WAL and shared-memory files go first: SQLite would replay that WAL into
    # the renamed-in database. A crash in between leaves the damaged index, without its WAL.
    for suffix in ("-wal", "-shm"):
        layout.db.with_name(layout.db.name + suffix).unlink(missing_ok=True)
    os.replace(staged, layout.db)


def import_index(corpus, source: Path, *, force: bool = False) -> dict[str, Any]:
    """Install the export `source` as `corpus`'s index and report how the corpus's files differ from it."""
    from .diff import CONFIRM_ALL, diff_corpus, scan_start_ns
    from .identity import index_identity

    layout = corpus.layout
    if not source.is_file():
        raise UsageError(f"{source} is not a file")
    if _has_index(layout) and not force:
        raise UsageError(f"{corpus.root} already has an index; `ragx import --force` replaces it")
    wanted = index_identity(corpus.settings, corpus.embedder)
    check_identity(peek_fingerprint(source), wanted)  # before writing anything
    layout.dir.mkdir(parents=True, exist_ok=True)
    with layout.writer_lock("ragx import"):
        work = layout.dir / IMPORT_TEMP.format(pid=os.getpid())
        shutil.rmtree(work, ignore_errors=True)
        try:
            fingerprint = read_archive(source, work)
            check_identity(fingerprint, wanted)  # the archive read in full, should it have changed since
            exported = Store(work / DB, readonly=True)
            try:
                stored = exported.files()
            finally:
                exported.close()
            started = scan_start_ns()
            # Every file is compared by content, not judged by the exporter's scan start: that is another
            # machine's clock and another copy of the files (one copied here before it began, then edited
            # there keeping size and mtime, would pass as the same).
            diff = diff_corpus(corpus.root, corpus.settings, stored, scan_started_ns=CONFIRM_ALL)
            generation = install(layout, work, [(f.path, f.size, f.mtime_ns) for f, _ in diff.touched],
                                 _import_scan_start(diff, stored, started))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    differs = {
        "new": sorted(f.path for f in diff.new),
        "changed": sorted(f.path for f in diff.changed),
        "deleted": sorted(r.path for r in diff.deleted),
    }
    return {
        "file": str(source),
        "root": str(corpus.root),
        "generation": generation,
        "identity": fingerprint["identity"],
        "counts": fingerprint["counts"],
        "exported_at": fingerprint["created_at"],
        "same": diff.unchanged,
        "differs": differs,
        "unreadable": [{"path": p.path, "reason": p.reason} for p in diff.problems],
    }


def _import_scan_start(diff: CorpusDiff, stored: StoredFiles, started: int) -> int | None:
    """The scan start an import records. A file it found changed keeps the exporter's row; one with this
    machine's very size and mtime (an edit that kept both, caught by its ctime) needs a start no later
    than its ctime, so that the next run compares it again. None (nothing recorded: size and mtime
    alone, as before starts were recorded) when some indexed path could not be read."""
    if not diff.complete:
        return None
    return min([started, *(f.ctime_ns for f in diff.changed if stored.stats.get(f.path) == (f.size, f.mtime_ns))])


def _has_index(layout: Layout) -> bool:
    if not layout.exists():
        return False
    try:
        return Store.committed_generation(layout.db) is not None
    except sqlite3.DatabaseError:
        return True  # unreadable: replacing it still needs --force
