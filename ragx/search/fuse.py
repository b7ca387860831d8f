"""Moved to ragx.scoring.fuse; kept so old imports work."""

from ..scoring.fuse import rrf, seed_lists  # noqa: F401
