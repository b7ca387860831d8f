"""Scoring vectorised across the trials of a batch: every trial that shares fusion and propagation
ranked over every cached pass at once, in numpy.

A trial's ranking splits into what depends on the pass's structure (RRF, propagation, the admitted
candidates and their normalised signals: `ragx.scoring.score.prepare`) and what only weighs the result
(the signal weights, link boost, role priors, file aggregation). Trials whose structural settings agree
(a grid's or a weights sweep's, or the knob-by-knob sensitivity points) share one `Layout`: the
product's `prepare` of every pass, computed for all passes at once and laid end to end as one flat
array with a segment per query. The weights of the batch are then stacked into columns, and the
fused scores, chunk rankings and file rankings of all of them come out of a handful of 2-D numpy calls. The same IEEE operations in the same
order as `ragx.scoring.score.score` and `ragx.scoring.files.rank_files`: the same floats, bit for bit
(tests/test_lab_vectorised.py holds them equal to lab/rescore.py's per-trial path on random passes).

Every structure, even one trial's alone, is laid out for all passes at once (lab/flat.py), which
costs less than the per-query `prepare` calls it replaces. Reranked trials (rerank_weight > 0 with
rerank scores to read) keep the per-trial path: their shortlist, and so which cross-encoder scores
exist, differs per trial.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ragx.eval.runner import DEPTH
from ragx.scoring.candidates import ROLE_DOC, ROLE_EXAMPLE, ROLE_SOURCE, ROLE_TEST, Candidates
from ragx.scoring.params import Params

from .fast_metrics import NAMES, Judged, means
from .flat import Flat, flat_prepare, flatten

# the knobs a Layout leaves free: they only weigh what the structure produced
WEIGHTS = {"heat_weight": 0.0, "dense_weight": 0.0, "lexical_weight": 0.0, "link_weight": 0.0, "rerank_weight": 0.0,
           "shortlist": 0, "file_chunks": 1, "prior_test": 1.0, "prior_example": 1.0, "prior_doc": 1.0}
CELLS = 2_000_000  # trials x candidates per 2-D step (a few arrays of this many float64: tens of MB)
LAYOUTS = 4        # structural settings kept (a grid revisits them batch after batch)


def structure(p: Params) -> Params:
    """`p` with every knob a Layout leaves free set to one value: trials with equal structures share a Layout."""
    return p.replace(**WEIGHTS)


@dataclass
class Layout:
    """Every pass's admitted candidates under one structure, end to end (N candidates, G (query, file) pairs)."""

    qids: list[str]
    heat: np.ndarray        # N: the normalised signals, as `prepare` computed them
    dense: np.ndarray
    lexical: np.ndarray
    nodes: np.ndarray       # N chunk ids (ties: smaller first)
    seg: np.ndarray         # N query index
    gfile: np.ndarray       # N: (query, file) index, ascending with the query, then the file id
    roles: np.ndarray       # N file roles
    coded: np.ndarray       # N: whether source code is among the query's candidates (role priors apply)
    gseg: np.ndarray        # G query index
    gkeys: np.ndarray       # G: query * Flat.width + file id
    gpath: np.ndarray       # G paths (object)
    counts: np.ndarray      # per query: files it returns (at most DEPTH)
    rerank: bool            # whether any admitted candidate holds a rerank score
    flat: Flat
    _links: tuple[np.ndarray, np.ndarray] | None = None
    _by_file: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def by_file(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The candidates grouped by (query, file), each file's by ascending place (chunk id): their
        places, where each file starts and how many it holds (every trial of the layout reads them)."""
        if self._by_file is None:
            sizes = np.bincount(self.gfile, minlength=len(self.gseg))
            self._by_file = (np.argsort(self.gfile, kind="stable"), np.r_[0, np.cumsum(sizes)[:-1]], sizes)
        return self._by_file

    @property
    def links(self) -> tuple[np.ndarray, np.ndarray]:
        """Linked (query, file) pairs present among the candidates: found the first time a trial boosts links."""
        if self._links is None:
            self._links = _links(self.flat, self.gkeys, self.flat.width)
        return self._links


def layout(f: Flat, p: Params, paths: np.ndarray) -> Layout:
    """The Layout of `p`'s structure over every pass at once (lab/flat.py: `prepare` of every pass).
    `paths`: each file id's path (an object array indexed by file id)."""
    cand, heat, dense, lexical = flat_prepare(f, p)
    seg, files, roles = f.seg[cand], f.file_ids[cand], f.roles[cand]
    width = f.width
    keys, gfile = np.unique(seg * width + files, return_inverse=True)  # (query, file), by query then file id
    gseg = keys // width
    coded = np.zeros(f.queries, dtype=bool)
    coded[seg[roles == ROLE_SOURCE]] = True
    return Layout(f.qids, heat, dense, lexical, f.nodes[cand], seg, gfile.reshape(-1), roles, coded[seg], gseg, keys, paths[keys % width],
                  np.minimum(np.bincount(gseg, minlength=f.queries), DEPTH), bool((~np.isnan(f.rerank[cand])).any()), f)


def _links(f: Flat, keys: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """`link_boost`'s pairs whose two files are both among their query's candidates, as (query, file) indexes."""
    if not len(keys) or not len(f.pair_seg):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    ka, kb = f.pair_seg * width + f.pair_a, f.pair_seg * width + f.pair_b
    a = np.minimum(np.searchsorted(keys, ka), len(keys) - 1)
    b = np.minimum(np.searchsorted(keys, kb), len(keys) - 1)
    present = (keys[a] == ka) & (keys[b] == kb)
    return a[present], b[present]


def column(many: list[Params], name: str) -> np.ndarray:
    return np.array([getattr(p, name) for p in many], dtype=np.float64)[:, None]


def chunk_values(lay: Layout, many: list[Params]) -> np.ndarray:
    """T x N final chunk scores: `combine`, then `link_boost`, then `role_prior`, one row per trial."""
    b, g, d = column(many, "heat_weight"), column(many, "dense_weight"), column(many, "lexical_weight")
    flat = (b + g + d) <= 0  # combine's rule: all three 0 weigh the signals equally
    b, g, d = np.where(flat, 1.0, b), np.where(flat, 1.0, g), np.where(flat, 1.0, d)
    values = (b * lay.heat + g * lay.dense + d * lay.lexical) / (b + g + d)
    link = column(many, "link_weight")
    if (link > 0).any() and len(lay.links[0]):
        a, z = lay.links
        values = np.where(link > 0, values + link * _neighbours(lay, values, a, z)[:, lay.gfile], values)
    if lay.coded.any():
        weights = np.ones((len(many), ROLE_DOC + 1))
        weights[:, [ROLE_TEST, ROLE_EXAMPLE, ROLE_DOC]] = np.hstack([column(many, f"prior_{r}") for r in ("test", "example", "doc")])
        values = np.where(lay.coded, values * np.take_along_axis(weights, np.broadcast_to(lay.roles, values.shape), 1), values)
    return values


def _neighbours(lay: Layout, values: np.ndarray, a: np.ndarray, z: np.ndarray) -> np.ndarray:
    """T x G: the best non-negative value among each (query, file)'s linked files (link_boost's `neighbour`)."""
    t, g = len(values), len(lay.gseg)
    rows = np.arange(t)[:, None] * g
    best = np.full(t * g, -np.inf)
    np.maximum.at(best, (rows + lay.gfile).ravel(), values.ravel())
    best = np.maximum(best.reshape(t, g), 0.0)
    neighbour = np.zeros(t * g)
    np.maximum.at(neighbour, (rows + a).ravel(), best[:, z].ravel())
    np.maximum.at(neighbour, (rows + z).ravel(), best[:, a].ravel())
    return neighbour.reshape(t, g)


def segment_order(keys: np.ndarray, seg: np.ndarray, stable: bool = True) -> np.ndarray:
    """Per row of `keys` (T x N), the positions sorted by key within each run of equal `seg` (ascending),
    ties kept in place (stable; `stable=False`: tied keys in any order, a faster sort): rows padded per
    segment when that costs little (one sort of short rows), else a lexsort of whole rows."""
    t, n = keys.shape
    counts = np.bincount(seg) if n else np.zeros(0, np.int64)
    if n == 0 or counts.max() * len(counts) > 2 * n:
        return np.lexsort((keys, np.broadcast_to(seg, keys.shape)), axis=-1)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    within = np.arange(n) - starts[seg]
    padded = np.full((t, len(counts), counts.max()), np.inf)
    padded[:, seg, within] = keys  # a pad (+inf) sorts after every real key
    at = np.argsort(padded, axis=2, kind="stable" if stable else "quicksort") + starts[None, :, None]
    real = (np.arange(counts.max())[None, :] < counts[:, None]).reshape(-1)
    return at.reshape(t, -1)[:, real]


def file_sums(lay: Layout, values: np.ndarray, many: list[Params]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """T x G: each (query, file)'s score (the sum of its best `file_chunks` chunk scores, best first, as
    `rank_files` adds them), its best chunk score and that chunk's place in the layout (the first of
    equal ones: the smaller chunk id). Read off per file with reductions over the layout's chunks
    grouped by file (the same grouping for every trial), the j-th best taken out before the (j+1)-th."""
    t, n = values.shape
    order, starts, sizes = lay.by_file
    v = values[:, order]
    fileof = lay.gfile[order]
    places = np.arange(n)
    wanted = column(many, "file_chunks")
    sums = np.zeros((t, len(starts)))
    best = first = sums
    rows = np.arange(t)[:, None]
    rounds = int(wanted.max(initial=1))
    for j in range(rounds):
        top = np.maximum.reduceat(v, starts, axis=1)  # -inf once a file has no chunk left
        sums = np.where((j < wanted) & (sizes > j), sums + top, sums)
        if j == 0 or j + 1 < rounds:  # where the j-th best is: the first round's answer, or taken out for the next
            at = np.minimum.reduceat(np.where(v == top[:, fileof], places, n), starts, axis=1)
            if j == 0:
                best, first = top, order[at]
            v[rows, at] = -np.inf
    return sums, best, first


def top_files(lay: Layout, values: np.ndarray, many: list[Params]) -> tuple[np.ndarray, np.ndarray]:
    """T x K (query, file) indexes and their scores: each query's top DEPTH files in ranking order, the
    queries one after another (query q holds lay.counts[q] of the K places)."""
    sums, best, first = file_sums(lay, values, many)
    # files by score down, ties to the file whose best chunk ranks higher (score down, then place):
    # one sort by score (ties in any order), and the full order only for the rare trial with tied files
    forder = segment_order(-sums, lay.gseg, stable=False)
    ranked = np.take_along_axis(sums, forder, 1)
    same = lay.gseg[1:] == lay.gseg[:-1]
    for row in np.flatnonzero(((ranked[:, 1:] == ranked[:, :-1]) & same).any(axis=1)):
        forder[row] = np.lexsort((first[row], -best[row], -sums[row], lay.gseg))
    starts = np.r_[0, np.cumsum(np.bincount(lay.gseg, minlength=len(lay.qids)))[:-1]]
    picked = forder[:, np.arange(len(lay.gseg)) - starts[lay.gseg] < DEPTH]
    return picked, np.take_along_axis(sums, picked, 1)


def runs_of(lay: Layout, values: np.ndarray, many: list[Params]) -> list[dict[str, dict[str, float]]]:
    """One run per trial ({qid: {path: score}}, each query's top DEPTH files), as `rescore.file_run` gives."""
    if not len(lay.nodes):
        return [{qid: {} for qid in lay.qids} for _ in many]
    picked, scores = top_files(lay, values, many)
    bounds = np.r_[0, np.cumsum(lay.counts)].tolist()
    out = []
    for row, s in zip(picked, scores):
        names, values_ = lay.gpath[row].tolist(), s.tolist()
        out.append({qid: dict(zip(names[bounds[q]:bounds[q + 1]], values_[bounds[q]:bounds[q + 1]])) for q, qid in enumerate(lay.qids)})
    return out


class Layouts:
    """The last few Layouts of one list of passes, by structure (a grid and a sensitivity scan revisit them)."""

    def __init__(self, passes: list[Candidates], paths: dict[int, str]) -> None:
        self.passes = passes
        self.flat: Flat | None = None  # laid out at the first structure asked
        self.paths = np.empty(max(paths, default=-1) + 1, dtype=object)
        self.paths[list(paths)] = list(paths.values())
        self.kept: OrderedDict[Params, Layout] = OrderedDict()
        self._judged: tuple[dict, Judged] | None = None

    def judged(self, qrels: dict[str, dict[str, int]]) -> Judged:
        """The labels arranged for these passes (lab/fast_metrics.py), once per set of labels."""
        if self._judged is None or self._judged[0] is not qrels:
            f = self.flatten()
            self._judged = (qrels, Judged(f.qids, np.unique(f.seg * f.width + f.file_ids), f.width, self.paths, qrels))
        return self._judged[1]

    def flatten(self) -> Flat:
        if self.flat is None:
            self.flat = flatten(self.passes)
        return self.flat

    def __call__(self, p: Params) -> Layout:
        key = structure(p)
        if key in self.kept:
            self.kept.move_to_end(key)
        else:
            self.kept[key] = layout(self.flatten(), key, self.paths)
            while len(self.kept) > LAYOUTS:
                self.kept.popitem(last=False)
        return self.kept[key]


def _groups(layouts: Layouts, many: list[Params]):
    """(positions in `many`, their Layout, their T x N chunk values) for every trial that needs no rerank
    scores: grouped by structure, each group in steps of at most CELLS trials x candidates (a lone
    structure too: laying out every pass at once costs less than preparing them one by one)."""
    groups: dict[Params, list[int]] = {}
    for k, p in enumerate(many):
        groups.setdefault(structure(p), []).append(k)
    for picked in groups.values():
        lay = layouts(many[picked[0]])
        picked = [k for k in picked if not (lay.rerank and many[k].rerank_weight > 0)]
        step = max(1, CELLS // max(1, len(lay.nodes)))
        for at in range(0, len(picked), step):
            part = picked[at:at + step]
            yield part, lay, chunk_values(lay, [many[k] for k in part])


def vectorised_runs(layouts: Layouts, many: list[Params]) -> dict[int, dict[str, dict[str, float]]]:
    """Position in `many` -> its run ({qid: {path: score}}), for every trial that needs no rerank scores."""
    out: dict[int, dict[str, dict[str, float]]] = {}
    for part, lay, values in _groups(layouts, many):
        out.update(zip(part, runs_of(lay, values, [many[k] for k in part])))
    return out


def vectorised_means(layouts: Layouts, many: list[Params], qrels: dict[str, dict[str, int]]) -> dict[int, dict[str, float]]:
    """Position in `many` -> its mean metrics (lab/fast_metrics.py, no run dicts), for every trial that needs no rerank scores."""
    out: dict[int, dict[str, float]] = {}
    for part, lay, values in _groups(layouts, many):
        params = [many[k] for k in part]
        if not len(lay.nodes):
            out.update((k, dict.fromkeys(NAMES, 0.0)) for k in part)
            continue
        picked, scores = top_files(lay, values, params)
        out.update(zip(part, means(layouts.judged(qrels), lay.gkeys, lay.counts, picked, scores)))
    return out
