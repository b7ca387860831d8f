"""A small LambdaMART (LightGBM) over the per-candidate signals a pass already holds.

Features per candidate chunk (all computed from the cached pass, no new retrieval):
dense cosine, BM25, their min-max values and ranks among the candidates, RRF, kNN-graph degree inside
the pass, the mean and max cosine-to-query of its graph neighbours, the mean RRF of its neighbours,
and per-query features (query length in words, the legs' decisiveness, top-10 overlap of the legs).
Only the best `SHORT` candidates by RRF are re-ranked; the rest keep their RRF order below them, so the
candidate set and count stay the hybrid's.
"""

from __future__ import annotations

import numpy as np

from ragx.scoring.candidates import Candidates
from ragx.scoring.score import minmax
from ragx.search.adaptive import decisiveness

from . import signals

SHORT = 300
FEATURES = ["qsim", "bm25", "mm_qsim", "mm_bm25", "rank_d", "rank_l", "rrf", "degree", "nb_qsim_mean", "nb_qsim_max",
            "nb_rrf_mean", "q_len", "dec_d", "dec_l", "overlap10"]


def features(c: Candidates) -> tuple[np.ndarray, np.ndarray]:
    """(positions of the shortlisted candidates, feature matrix rows aligned with them)."""
    rrf = signals.rrf(c, 60.0)
    short = np.lexsort((c.nodes, -rrf))[:SHORT]
    rd, rl = signals.dense_rank(c), signals.lexical_rank(c)
    a = signals.adjacency(c)
    deg = np.diff(a.indptr).astype(float)
    ab = a.copy()
    ab.data[:] = 1.0
    q = c.qsim.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        nb_q = np.where(deg > 0, (ab @ q) / np.maximum(deg, 1), 0.0)
        nb_r = np.where(deg > 0, (ab @ rrf) / np.maximum(deg, 1), 0.0)
    nb_qmax = np.zeros(len(q))
    if a.nnz:
        rows = np.repeat(np.arange(len(q)), np.diff(a.indptr))
        np.maximum.at(nb_qmax, rows, q[a.indices])
    topd, topl = set(np.argsort(-q)[:10].tolist()), set(np.argsort(-c.lexical)[:10].tolist()) if np.any(c.lexical > 0) else set()
    qf = [len(c.query.split()), decisiveness(q, 10), decisiveness(c.lexical, 10), len(topd & topl) / 10.0]
    cols = [q, c.lexical, minmax(q), minmax(c.lexical), np.minimum(rd, 1e4), np.minimum(rl, 1e4), rrf, deg, nb_q, nb_qmax, nb_r]
    x = np.column_stack([col[short] for col in cols] + [np.full(len(short), v, float) for v in qf])
    return short, x


def labels(c: Candidates, short: np.ndarray, qrels: dict[str, int], paths: dict[int, str]) -> np.ndarray:
    return np.array([qrels.get(paths[int(f)], 0) for f in c.file_ids[short]], dtype=np.int32)


def dataset(splits) -> tuple[np.ndarray, np.ndarray, list[int]]:
    xs, ys, groups = [], [], []
    for s, keep in splits:
        for c in s.passes:
            qid = c.qid
            if not keep(qid):
                continue
            short, x = features(c)
            y = labels(c, short, s.qrels.get(qid, {}), s.paths)
            xs.append(x)
            ys.append(y)
            groups.append(len(y))
    return np.vstack(xs), np.concatenate(ys), groups


def train(splits, seed: int = 0, rounds: int = 200):
    import lightgbm as lgb

    x, y, g = dataset(splits)
    model = lgb.LGBMRanker(objective="lambdarank", n_estimators=rounds, learning_rate=0.05, num_leaves=15, min_child_samples=50,
                           subsample=0.8, subsample_freq=1, colsample_bytree=0.8, reg_lambda=1.0, random_state=seed, verbose=-1,
                           n_jobs=1, lambdarank_truncation_level=20)
    model.fit(x, y, group=g)
    return model


def scorer(model):
    def score(c: Candidates) -> np.ndarray:
        rrf = signals.rrf(c, 60.0)
        short, x = features(c)
        out = minmax(rrf) - 2.0  # the tail keeps its RRF order, below every shortlisted candidate
        pred = model.predict(x)
        out[short] = minmax(pred) + 1.0
        return out

    return score
