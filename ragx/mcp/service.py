"""What the MCP tools do, without the MCP SDK: one warm `Corpus` and the CLI's JSON documents.

A server process keeps ONE `Corpus`, so the embedding model (loaded by the first search) and the
searcher (which follows new index generations itself) stay warm across calls. The corpus is opened on
the first call and re-opened only when what it was built from changes: `ragx.toml` or the rc file
(settings), or the index database file itself (deleted and rebuilt by someone else). A config
mistake is therefore reported on every call until it is fixed, and never kills the server.

Calls that use the searcher run one at a time (one lock). An `index` call writes through a Corpus of
its own (sharing the warm embedder) under another lock, so searches go on, on the generation already
committed, while it runs, as they do during a CLI `ragx index`; the searcher follows the new
generation on its next call. `status` only takes the lock that picks the corpus.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import schemas
from ..config import PROJECT_FILE, find_root, rc_path, resolve_root
from ..errors import UsageError

if TYPE_CHECKING:  # the corpus (numpy, the index code) loads on the first call, not at the handshake
    from ..api import Corpus

log = logging.getLogger("ragx.mcp")


# progress(done, total): called from the thread that runs the index, at most every PROGRESS_EVERY s.
Progress = Callable[[int, int], None]
PROGRESS_EVERY = 0.25


def _stamp(path: Path) -> tuple[int, int, int, int, int] | None:
    """What identifies a file's version cheaply: device, inode, size, mtime, and the inode change time
    (None when absent). The last catches an edit that keeps size and mtime (`cp -p`, `touch -r`, a sync
    tool): no user can set it, and every write moves it (a chmod too: a re-open, harmless)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _checked(text: str, what: str) -> str:
    """`text` if it is valid Unicode, else the CLI's one line (ragx/errors.py require_utf8)."""
    from ..errors import require_utf8

    return require_utf8(text, what)


class _LogReporter:
    """An index Reporter that never touches stdout: warnings to the log (stderr), progress to a callback."""

    def __init__(self, progress: Progress | None):
        self._progress = progress

    @contextmanager
    def embedding(self, total: int) -> Iterator[Callable[[int], None]]:
        done = 0
        last = 0.0
        report = self._progress

        def advance(n: int) -> None:
            nonlocal done, last
            done += n
            now = time.monotonic()
            if report is not None and (now - last >= PROGRESS_EVERY or done >= total):
                last = now
                try:
                    report(done, total)
                except Exception:  # a lost progress note must not fail the index run
                    log.debug("progress notification failed", exc_info=True)

        log.info("embedding %d chunks", total)
        yield advance

    def warn(self, message: str) -> None:
        log.warning("%s", message)


class Service:
    """The four tools as plain methods returning ragx.*.v1 documents; RagxError on bad input."""

    def __init__(self, root: str | Path | None = None):
        # Fails fast (NoCorpusError) when --root is not a folder: nothing could be served.
        self.root = resolve_root(root, allow_broad=True)  # refused per call below, with its own message
        try:
            str(self.root).encode("utf-8")
        except UnicodeEncodeError:
            # A folder whose name is not UTF-8 can be neither indexed nor searched: the API's one line
            # (UsageError, exit 2) at start-up, as for a --root that is not a folder.
            from ..api import check_utf8_root

            check_utf8_root(self.root)
        self.marked = root is not None or find_root() is not None
        # An agent client often starts servers in / or the home folder: never scan or index those by
        # accident. Every call says how to fix the server's config instead.
        self.refusal: str | None = None
        if not self.marked and self.root in (Path(self.root.anchor), Path.home().resolve()):
            self.refusal = (
                f"no corpus: ragx mcp was started in {self.root}, with no ragx.toml or .ragx/ at or above it; "
                "pass --root DIR in the MCP server's configuration"
            )
        self._lock = threading.Lock()  # the searcher: one call at a time
        self._indexing = threading.Lock()  # this server's index runs: one at a time (a second waits)
        self._pick = threading.Lock()  # guards (re)opening the corpus
        self._corpus: Corpus | None = None
        self._stamps: tuple = ()

    # ---- the corpus ------------------------------------------------------------------------------
    def _inputs(self) -> tuple:
        from ..api import index_database  # loaded by then: the first call that opens the corpus imports api

        return (_stamp(self.root / PROJECT_FILE), _stamp(rc_path()), _stamp(index_database(self.root)))

    def corpus(self, *, shared: bool = True) -> Corpus:
        """The server's corpus, re-opened only when its settings or its index database file changed.

        Callers that use the searcher hold `_lock` (shared=True), so closing a stale one is safe.
        `status` does not hold it (shared=False): when the corpus is stale it gets a fresh throwaway
        one and leaves the swap to the next locked call.
        """
        if self.refusal:
            raise UsageError(self.refusal)
        with self._pick:
            stale = self._corpus is not None and self._stale()
            from ..api import Corpus

            if stale and not shared:
                return Corpus(self.root)
            if stale:
                log.info("settings or index database changed: re-opening %s", self.root)
                self._close()
            if self._corpus is None:
                stamps = self._inputs()
                self._corpus = Corpus(self.root)  # ConfigError propagates; retried on the next call
                self._stamps = stamps
            return self._corpus

    def _stale(self) -> bool:
        """Whether the settings files changed, or the index database is another file than before."""
        settings_then, rc_then, db_then = self._stamps
        settings_now, rc_now, db_now = self._inputs()
        if (settings_then, rc_then) != (settings_now, rc_now):
            return True
        # Every index run rewrites the database in place (same device and inode). A database that
        # appears (the first index run, ours or the CLI's) is adopted; one that disappears or is
        # another file (the index deleted and built again) invalidates the open searcher.
        if db_then is None:
            self._stamps = (settings_then, rc_then, db_now)
            return False
        return db_now is None or db_now[:2] != db_then[:2]

    def _close(self) -> None:
        corpus, self._corpus = self._corpus, None
        if corpus is not None:
            try:
                corpus.close()
            except Exception:  # closing a stale connection is best effort
                log.debug("closing the old searcher failed", exc_info=True)

    def prepare(self) -> None:
        """Load what the next search needs: the index code, numpy, the corpus, its searcher and the query
        embedder (the server's loader thread runs this while the client is still listing tools, and
        again once the SDK is loaded: after a first query in numpy, the next needs onnxruntime's
        session). A failure is left for the call itself to report."""
        from .. import api  # noqa: F401 - the index and search code
        from ..lazy import lazy_module, load_now

        # Tool calls may run in several threads: the store's lazily bound numpy loads here, in one
        # (lazy.py: first use from two threads at once is unsafe before Python 3.12).
        load_now(lazy_module("numpy"))
        if self.refusal:
            return
        try:
            with self._lock:
                corpus = self.corpus()
                corpus.prepare_search()
            corpus.prepare_query_embedding()  # under the embedder's own lock: searches may go on
        except Exception:
            log.debug("could not prepare the next search", exc_info=True)

    # ---- tools -----------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        top: int | None = None,
        files_only: bool = False,
        explain: bool = False,
        graph: bool = False,
        no_graph: bool = False,
        no_lexical: bool = False,
        no_rerank: bool = False,
        no_expand: bool = False,
        no_evidence_check: bool = False,
    ) -> dict[str, Any]:
        text = _checked(query, "the query").strip()
        if not text:
            raise UsageError("empty query")
        if graph and no_graph:
            raise UsageError("graph and no_graph contradict each other: give one of them (neither: the corpus's setting)")
        with self._lock:
            doc = self.corpus().query(
                text, top=top, files_only=files_only, explain=explain,
                graph=True if graph else (False if no_graph else None), lexical=not no_lexical, rerank=not no_rerank, expand=not no_expand,
                evidence_check=not no_evidence_check,
            )
        return schemas.document(schemas.FILES if files_only else schemas.QUERY, doc)

    def index(self, path: str | None = None, *, progress: Progress | None = None) -> dict[str, Any]:
        if path is not None and not _checked(path, "the index path").strip():
            raise UsageError("index path is empty (omit it to index the whole corpus)")
        with self._indexing:
            writer = self._writer()
            try:
                log.info("indexing %s%s", writer.root, f" (only {path})" if path else "")
                report = writer.index(path=path, reporter=_LogReporter(progress))
            finally:
                writer.close()
        payload = dataclasses.asdict(report)
        payload["chunks_per_second"] = report.chunks_per_second
        return schemas.document(schemas.INDEX, payload)

    def _writer(self) -> Corpus:
        """A Corpus for one index run: the server's settings and warm embedder, not its searcher (which
        searches hold meanwhile). Ordinary engines are safe to call from two threads (the embedded
        one loads under its own lock; an ONNX session runs concurrently)."""
        from ..api import Corpus

        warm = self.corpus(shared=False)  # never closes the searcher a search may be using
        return Corpus(self.root, warm.settings).use_embedder(warm.embedder)

    def status(self) -> dict[str, Any]:
        return schemas.document(schemas.STATUS, self.corpus(shared=False).status(drift=True))

    def inspect(self, what: str, arg: str | int | None = None) -> dict[str, Any]:
        if isinstance(arg, str):
            _checked(arg, "the inspect argument")
        with self._lock:
            doc = self.corpus().inspect(what, None if arg is None else str(arg))
        return schemas.document(schemas.INSPECT, doc)

    def close(self) -> None:
        with self._lock, self._pick:
            self._close()
