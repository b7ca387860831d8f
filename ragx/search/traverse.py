"""Moved to ragx.scoring.traverse; kept so old imports work."""

from ..scoring.traverse import Trace, path_of, propagate  # noqa: F401
