"""Moved to ragx.scoring.candidates; kept so old imports work."""

from ..scoring.candidates import Candidates, PassCaps  # noqa: F401
