"""One exception tree. Every error a user can cause maps to exit code 2 with a one-line message."""

from __future__ import annotations

EXIT_OK = 0
EXIT_EMPTY = 1  # success, but nothing to show (no results, a failed doctor check)
EXIT_ERROR = 2


class RagxError(Exception):
    """Base of every error ragx reports to a user. `str(err)` is the one line printed on stderr."""

    exit_code = EXIT_ERROR


class UsageError(RagxError):
    """Bad arguments: an empty query, a path outside the corpus, an unknown option value."""


class ConfigError(RagxError):
    """A malformed config file, an unknown key, a value of the wrong type."""


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
