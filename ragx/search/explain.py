"""Moved to ragx.scoring.explain; kept so old imports work."""

from ..scoring.explain import explain_path, leg_ranks  # noqa: F401
