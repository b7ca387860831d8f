"""Scoring vectorised across trials (lab/vectorised.py) against the per-trial path it replaces.

Random passes (shared files, tied scores, graphs, link pairs, file roles with and without source code)
and random batches of trials (several structures, zero weights, link boost on and off, 1-3 chunks per
file): every trial's run must equal `lab.rescore.file_run`'s, the same files with the same floats.
"""

from __future__ import annotations

import numpy as np
import pytest

from lab.configs import package_defaults
from lab.rescore import file_run, rescore_runs
from lab.vectorised import Layouts, segment_order, structure, vectorised_runs
from ragx.scoring.candidates import ROLE_SOURCE, Candidates, PassCaps

CAPS = PassCaps(40, 40, 2, 0.0)


def random_pass(rng: np.random.Generator, qid: str, coded: bool) -> Candidates:
    n = int(rng.integers(0, 60))
    nodes = np.sort(rng.choice(5000, size=n, replace=False)).astype(np.int64)
    files = rng.integers(0, max(1, n // 3) + 1, size=n).astype(np.int64)
    degree = rng.integers(0, 5, size=n)
    indptr = np.r_[0, np.cumsum(degree)].astype(np.int64)
    nbr = rng.integers(0, max(n, 1), size=int(indptr[-1])).astype(np.int64)
    weight = rng.choice([0.5, 0.7, 0.9], size=len(nbr))
    pairs = rng.integers(0, max(1, n // 3) + 1, size=(int(rng.integers(0, 6)), 2)).astype(np.int64)
    roles = rng.integers(1, 5, size=n).astype(np.int8)
    if coded and n:
        roles[rng.integers(0, n)] = ROLE_SOURCE
    return Candidates(
        query=qid, variants=[qid], caps=CAPS, qid=qid, nodes=nodes, file_ids=files,
        dense_ids=[rng.permutation(nodes)[: int(rng.integers(0, n + 1))] for _ in range(int(rng.integers(1, 3)))],
        lexical_ids=rng.permutation(nodes)[: int(rng.integers(0, n + 1))],
        qsim=np.round(rng.uniform(-0.2, 1.0, n), 1).astype(np.float32),  # rounded: ties
        lexical=np.round(rng.uniform(0, 3, n), 0) * (rng.random(n) < 0.6),
        indptr=indptr, nbr=nbr, weight=weight, link_pairs=pairs,
        anchor_sim=np.where(rng.random(n) < 0.3, rng.uniform(0, 1, n), np.nan).astype(np.float32),
        anchor_lexical=np.where(rng.random(n) < 0.3, rng.uniform(0, 4, n), 0.0), file_role=roles,
    )


def random_trials(rng: np.random.Generator, count: int) -> list:
    base = package_defaults().replace(rerank_weight=0.0)
    structures = [base.replace(hops=int(rng.integers(0, 3)), rrf_k=float(rng.uniform(1, 60)), query_floor=float(rng.uniform(0, 0.6)),
                               dense_n=int(rng.integers(1, 40)), lexical_n=int(rng.integers(0, 40)), max_frontier=int(rng.integers(1, 20)),
                               anchor_dense=float(rng.choice([0.0, 0.5])), anchor_lexical=float(rng.choice([0.0, 0.7])))
                  for _ in range(3)]
    out = []
    for _ in range(count):
        weights = rng.choice([0.0, 0.1, 0.5, 1.0], size=3) if rng.random() < 0.5 else rng.uniform(0, 1, 3)
        out.append(structures[int(rng.integers(0, 3))].replace(
            heat_weight=float(weights[0]), dense_weight=float(weights[1]), lexical_weight=float(weights[2]),
            link_weight=float(rng.choice([0.0, 0.0, 0.3])), file_chunks=int(rng.integers(1, 4)),
            prior_test=float(rng.uniform(0, 1)), prior_example=float(rng.uniform(0, 1)), prior_doc=float(rng.uniform(0, 1))))
    return out


def random_case(seed: int, queries: int, trials: int) -> tuple[list[Candidates], list]:
    """`queries` random passes (every other one with source code among its files) and `trials` random trials."""
    rng = np.random.default_rng(seed)
    passes = [random_pass(rng, f"q{i}", coded=i % 2 == 0) for i in range(queries)]
    return passes, random_trials(rng, trials)


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_runs_equal_the_per_trial_path_bit_for_bit(seed):
    passes, many = random_case(seed, 25, 24)
    paths = {f: f"file-{f}.py" for f in range(100)}
    assert len({structure(p) for p in many}) > 1  # several groups in one batch
    runs = vectorised_runs(Layouts(passes, paths), many)
    assert sorted(runs) == list(range(len(many)))
    for k, p in enumerate(many):
        expected = file_run(passes, p, paths)
        assert runs[k] == expected  # same qids, same files, the same floats (dict == compares exactly)
        assert [list(r) for r in runs[k].values()] == [list(r) for r in expected.values()]  # in the same order


def test_small_steps_give_the_same_runs(monkeypatch):
    rng = np.random.default_rng(11)
    passes = [random_pass(rng, f"q{i}", coded=True) for i in range(10)]
    paths = {f: f"f{f}" for f in range(100)}
    many = random_trials(rng, 9)
    whole = vectorised_runs(Layouts(passes, paths), many)
    monkeypatch.setattr("lab.vectorised.CELLS", 1)  # one trial per 2-D step
    assert vectorised_runs(Layouts(passes, paths), many) == whole


def test_passes_holding_rerank_scores_keep_the_per_trial_path():
    rng = np.random.default_rng(3)
    passes = [random_pass(rng, f"q{i}", coded=False) for i in range(8)]
    for c in passes:
        c.rerank = np.where(rng.random(len(c.nodes)) < 0.5, rng.uniform(-3, 3, len(c.nodes)), np.nan)
    paths = {f: f"f{f}" for f in range(100)}
    one = random_trials(rng, 1)[0]
    many = [one.replace(rerank_weight=w, dense_weight=d) for w, d in ((0.0, 0.2), (0.5, 0.4), (0.0, 0.9), (1.0, 0.1))]
    runs = rescore_runs(passes, many, paths)
    assert runs == [file_run(passes, p, paths) for p in many]
    assert sorted(vectorised_runs(Layouts(passes, paths), many)) == [0, 2]  # the reranked ones are left to file_run


@pytest.mark.parametrize("lengths", [[3, 0, 5, 4], [1, 40, 2, 0, 1]])  # padded rows, then whole-row lexsort
def test_segment_order_sorts_within_segments_and_keeps_ties_in_place(lengths):
    rng = np.random.default_rng(len(lengths))
    seg = np.repeat(np.arange(len(lengths)), lengths)
    keys = rng.choice([0.0, 0.5, 1.0, -2.0], size=(4, len(seg)))  # many ties
    expected = np.lexsort((np.broadcast_to(np.arange(len(seg)), keys.shape), keys, np.broadcast_to(seg, keys.shape)), axis=-1)
    assert np.array_equal(segment_order(keys, seg), expected)


def test_sensitivity_gives_per_query_differences_with_intervals_that_match_the_objective(tmp_path):
    from lab.sensitivity import sensitivity, sensitivity_plot
    from lab.training import Objective

    rng = np.random.default_rng(5)
    passes = [random_pass(rng, f"q{i}", coded=False) for i in range(30)]
    paths = {f: f"f{f}" for f in range(100)}
    labels = {c.qid: {f"f{int(f)}": 1 for f in rng.choice(25, size=2, replace=False)} for c in passes}
    data = {"passes": passes, "meta": {"paths": paths}, "queries": [type("Q", (), {"id": q, "files": f})() for q, f in labels.items()], "scorer": None}
    objective = Objective({"toy": {"base": data}}, "nDCG@10+R@100", package_defaults().replace(rerank_weight=0.0), 1.0)
    best = package_defaults().replace(rerank_weight=0.0, hops=1, dense_weight=0.5)
    space = {"dense_weight": [0.0, 1.0], "hops": [0, 2]}
    sens = sensitivity(objective, "base", best, space, {"dense_weight": False, "hops": True}, points=5)
    best_value = objective(best, "base")[0]
    for name, s in sens.items():
        assert s["value"] == [objective(best.replace(**{name: v}), "base")[0] for v in s["grid"]]  # the objective's own floats
        assert np.allclose(s["diff"], np.array(s["value"]) - best_value, atol=1e-12)
        assert all(lo <= d <= hi for lo, d, hi in zip(s["low"], s["diff"], s["high"]))
    at_best = sens["dense_weight"]["grid"].index(0.5)
    assert sens["dense_weight"]["diff"][at_best] == 0.0 and sens["dense_weight"]["low"][at_best] == sens["dense_weight"]["high"][at_best] == 0.0
    assert any(lo < hi for lo, hi in zip(sens["dense_weight"]["low"], sens["dense_weight"]["high"]))  # real intervals elsewhere
    assert sensitivity_plot(sens, best_value, "nDCG@10+R@100", False, tmp_path / "s.png").stat().st_size > 0


@pytest.mark.parametrize("seed", range(4))
def test_flat_prepare_equals_prepare_pass_by_pass(seed):
    from lab.flat import flat_prepare, flatten
    from ragx.scoring.score import prepare

    rng = np.random.default_rng(100 + seed)
    passes = [random_pass(rng, f"q{i}", coded=i % 3 == 0) for i in range(30)]
    flat = flatten(passes)
    for p in random_trials(rng, 6) + [package_defaults().replace(lexical_n=0, hops=2, max_frontier=2, anchor_lexical=0.7)]:
        cand, heat, dense, lexical = flat_prepare(flat, p)
        pieces = [prepare(c, p) for c in passes]
        offsets = np.r_[0, np.cumsum([len(c.nodes) for c in passes])]
        assert np.array_equal(cand, np.concatenate([pr.trace.admitted + o for pr, o in zip(pieces, offsets)]))
        for got, name in ((heat, "heat"), (dense, "dense"), (lexical, "lexical")):
            want = np.concatenate([getattr(pr, name) for pr in pieces])
            assert np.array_equal(got, want), name  # bit for bit
