"""One exception tree. Every error a user can cause maps to exit code 2 with a one-line message.

This module is also the one place that turns what the operating system or SQLite raises (a full disk,
a read-only folder, a damaged database file) into such a line with a hint, and the one place that
keeps credentials out of every message: the CLI and the MCP server both print `str(error)`.
"""

from __future__ import annotations

import errno

from .redact import redact

EXIT_OK = 0
EXIT_EMPTY = 1  # success, but nothing to show (no results, a failed doctor check)
EXIT_ERROR = 2

# Said after every storage failure, because it is true of every one: an index run commits its
# generation folder and its SQLite rows in one step, so a run that fails leaves the last index as it was.
KEPT = "nothing indexed was lost"
REBUILD = "delete the .ragx folder and run `ragx index` (your files are not touched)"
# What to run when the index's own records disagree with themselves: a full run rebuilds them from the files.
FULL_RUN = "run `ragx index --full`"

class RagxError(Exception):
    """Base of every error ragx reports to a user. `str(err)` is the one line printed on stderr."""

    exit_code = EXIT_ERROR

    def __str__(self) -> str:
        return redact(" ".join(super().__str__().split()))  # one line, never a credential


class UsageError(RagxError):
    """Bad arguments: an empty query, a path outside the corpus, an unknown option value."""


class ConfigError(RagxError):
    """A malformed config file, an unknown key, a value of the wrong type or out of range."""


class NoCorpusError(RagxError):
    """No corpus root at or above the working directory, or --root does not exist."""


class NoIndexError(RagxError):
    """The corpus has no index yet."""


class CorruptIndexError(RagxError):
    """The index exists but cannot be read consistently."""


class ManifestMismatchError(RagxError):
    """The index was built with other model, chunking or graph settings than the config asks for."""


class ProviderError(RagxError):
    """A model provider (embedding server, reranker, generator) failed."""


class IndexBusyError(RagxError):
    """Another `ragx index` holds the corpus lock."""


class StorageError(RagxError):
    """The disk refused: full, over a size limit, read-only, no permission, an I/O error."""


# --------------------------------------------------------------------------------------------
# the one translation of system and database failures


def database_damaged(detail: str, where: str = "the index database (.ragx/index.sqlite)") -> CorruptIndexError:
    return CorruptIndexError(f"{where} is damaged ({detail}): {REBUILD}")


def _os_message(exc: OSError) -> str:
    on = f" ({exc.filename})" if exc.filename else ""
    code = exc.errno
    if code in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return f"no space left on the device{on} (disk full): free some space and run the command again; {KEPT}"
    if code == errno.EFBIG:
        return f"file size limit exceeded{on} (see `ulimit -f`): raise it and run the command again; {KEPT}"
    if code == errno.EROFS:
        return f"read-only file system{on}: `ragx index` needs <corpus>/.ragx writable; {KEPT}"
    if code in (errno.EACCES, errno.EPERM):
        return f"permission denied{on}: make it readable (and <corpus>/.ragx writable) for this user; {KEPT}"
    if code == errno.EIO:
        return f"I/O error{on}: the disk may be failing, full or over a size limit; check it, then `ragx status --deep`"
    if code is None:  # raised by a library on a short write (numpy, hnswlib): the disk said no somehow
        return f"cannot write{on} ({exc or type(exc).__name__}): the disk may be full or over a size limit; free space and run the command again; {KEPT}"
    return f"{(exc.strerror or str(exc)).lower()}{on}"


# SQLite reports what the OS said in its own words, without the errno: (words, message after the path).
_SQLITE_STORAGE = (
    ("database or disk is full", f"has no space left on the device (disk full): free some space and run the command again; {KEPT}"),
    ("readonly database", f"cannot be written (a read-only file, folder or file system): `ragx index` needs <corpus>/.ragx writable; {KEPT}"),
    ("unable to open database file", "cannot be opened: check that <corpus>/.ragx is readable and writable for this user"),
    ("disk i/o error", f"could not be read or written (disk I/O error): is the disk full, over a size limit (`ulimit -f`) or failing? {KEPT}"),
)
_SQLITE_DAMAGED = ("malformed", "not a database", "file is encrypted", "corrupt")


def sqlite_error(exc: Exception, path: object = None) -> RagxError:
    """The one-line error for a sqlite3 exception on the index database at `path`."""
    where = f"the index database {path}" if path else "the index database (.ragx/index.sqlite)"
    detail = str(exc).strip() or type(exc).__name__
    lowered = detail.lower()
    if "database is locked" in lowered or "database is busy" in lowered:
        return StorageError(f"{where} is locked by another process: try again when it finishes")
    for words, message in _SQLITE_STORAGE:
        if words in lowered:
            return StorageError(f"{where} {message}")
    if any(words in lowered for words in _SQLITE_DAMAGED):
        return database_damaged(detail, where)
    return CorruptIndexError(f"{where} failed ({detail}): run `ragx status --deep`; if it persists, {REBUILD}")


def as_ragx_error(exc: BaseException) -> RagxError | None:
    """The one-line RagxError for a failure of the disk or of SQLite; None for anything else."""
    if isinstance(exc, RagxError):
        return exc
    if isinstance(exc, UnicodeError):  # a ValueError, not an OSError; callers name the file themselves
        return None
    if isinstance(exc, OSError):
        return StorageError(_os_message(exc))
    if isinstance(exc, Exception) and type(exc).__module__ == "sqlite3":  # sqlite3.Error and its subclasses, without importing sqlite3
        return sqlite_error(exc)
    return None


def require_utf8(text: str, what: str) -> str:
    """`text` if it can be encoded as UTF-8, else one UsageError line ("the query is not valid UTF-8
    (character 6)"). Bytes the shell passed that are not UTF-8 (Python keeps them as surrogate
    escapes) and lone surrogates from JSON (half an emoji) cannot be embedded, searched, stored or
    printed: the CLI and the MCP server refuse them here instead of crashing later."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(f"{what} is not valid UTF-8 (character {exc.start})") from None
    return text


def read_user_text(path: object, what: str, *, missing: str = "", folder: str = "") -> str:
    """The UTF-8 text of a file the user named (a queries file, a baseline), or one UsageError line
    saying what is wrong with it; `missing` and `folder` end the line for those two cases."""
    from pathlib import Path

    try:
        return Path(str(path)).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{what} {path} not found{missing}") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {path} is a folder{folder}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path} is not valid UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot read: {(exc.strerror or str(exc)).lower()}") from None
