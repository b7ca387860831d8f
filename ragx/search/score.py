"""Moved to ragx.scoring.score and ragx.scoring.files; kept so old imports work."""

from ..scoring.files import file_run, rank_files  # noqa: F401
from ..scoring.score import Prepared, Ranking, minmax, prepare, score, shortlist  # noqa: F401
