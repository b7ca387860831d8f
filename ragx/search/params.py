"""Moved to ragx.scoring.params; kept so old imports work."""

from ..scoring.params import Params  # noqa: F401
