"""Files from chunk scores: a file scores the sum of its best `file_chunks` chunk scores; runs for metrics."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .candidates import Candidates
from .params import Params
from .score import Ranking


class Ranked(Protocol):
    """What ranking files needs from a :class:`Ranking`: the node order and the per-node scores."""

    @property
    def order(self) -> np.ndarray: ...

    @property
    def score(self) -> np.ndarray: ...


def rank_files(c: Candidates, r: Ranked, p: Params) -> tuple[np.ndarray, np.ndarray]:
    """Files by the sum of their best `file_chunks` chunk scores: (file ids, scores), best first.

    Ties go to the file whose best chunk ranks higher.
    """
    order = r.order
    if len(order) == 0:
        return np.empty(0, np.int64), np.empty(0)
    files = c.file_ids[order]
    # `order` is already best-first, so a stable sort by file keeps each file's chunks best-first.
    by_file = np.argsort(files, kind="stable")
    f_sorted = files[by_file]
    starts = np.flatnonzero(np.r_[True, f_sorted[1:] != f_sorted[:-1]])
    rank_in_file = np.arange(len(f_sorted)) - np.repeat(starts, np.diff(np.r_[starts, len(f_sorted)]))
    keep = rank_in_file < p.file_chunks
    uniq, inv = np.unique(f_sorted, return_inverse=True)
    sums = np.bincount(inv[keep], weights=r.score[order][by_file][keep], minlength=len(uniq))
    first_pos = by_file[starts]  # position in `order` of each file's best chunk
    ranked = np.lexsort((first_pos, -sums))
    return uniq[ranked], sums[ranked]


def file_run(c: Candidates, r: Ranking, p: Params, paths: dict[int, str], depth: int) -> dict[str, float]:
    """The top `depth` files of one query as {path: score}: what retrieval metrics read."""
    files, sums = rank_files(c, r, p)
    return {paths[f]: float(s) for f, s in zip(files[:depth].tolist(), sums[:depth].tolist())}
