"""One sweep objective over several training sets (lab/training.py), and promotion's held-out rule
(lab/promote.py): no significant loss against the current defaults or the equal-budget hybrid."""

from __future__ import annotations

import json
import random

import pytest

from ragx.config import DEFAULTS_PATH


def _topic_set(path, seed: int, splits=("train",)):
    """A BEIR folder of 24 documents, each two words of its own among 28 common ones; its query says
    those two words among six common ones, so BM25 (which weighs rare words up) finds it and a bag
    of hashed words (the fake embedder) mostly does not. One query per document, labelled under each
    of `splits`."""
    rng = random.Random(seed)
    common = [f"common{i}" for i in range(12)]
    docs, queries = {}, {}
    for i in range(24):
        own = [f"own{seed}x{i}a", f"own{seed}x{i}b"]
        docs[f"d{i}"] = " ".join(own + rng.choices(common, k=28))
        queries[f"q{i}"] = " ".join(own + rng.choices(common, k=6))
    (path / "qrels").mkdir(parents=True)
    (path / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in docs.items()))
    (path / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items()))
    for split in splits:
        rows = "".join(f"q{i}\td{i}\t1\n" for i in range(24))
        (path / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
    return path


def _overrides(tmp_path, data, name: str) -> list[str]:
    return [f"dataset.name={name}", f"dataset.data_dir={data}", f"dataset.cache={tmp_path / 'folder'}",
            f"cache_root={tmp_path / 'cache'}", f"mlflow.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
            f"mlflow.artifacts={tmp_path / 'artifacts'}"]


def test_a_sweep_over_two_training_sets_scores_their_mean_less_the_worst_drop(tmp_path, fake_model, isolated_rc, monkeypatch):
    from lab.__main__ import compose
    from lab.configs import label
    from lab.sweep import live_eval_seconds, run

    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "ragx-cache"))
    first, second = _topic_set(tmp_path / "notes-a", 1), _topic_set(tmp_path / "notes-b", 2)
    cfg = compose(["sweep=weights", *_overrides(tmp_path, first, "notes-a"), f"train_sets=[notes-a,{second}]"])
    b_name = label(str(second))  # a folder's name and a digest of its path
    assert b_name.startswith("notes-b-") and cfg.optuna.study_name == f"notes-a+{b_name}-train-weights"
    out = run(cfg, n_trials=16)
    refs = out["evaluate"].references
    for name, builds in out["sets"].items():  # each set's reference is what a live `ragx eval` of the defaults gives
        assert refs[name] == live_eval_seconds(builds["base"]["corpus"], builds["base"]["queries"], out["defaults"])[1]["nDCG@10"]
    trials = out["study"].trials
    for t in trials:
        a, b = t.user_attrs["notes-a/nDCG@10"], t.user_attrs[f"{b_name}/nDCG@10"]
        worst = max(0.0, refs["notes-a"] - a, refs[b_name] - b)
        assert t.user_attrs["nDCG@10"] == pytest.approx((a + b) / 2)
        assert t.user_attrs["worst_drop"] == pytest.approx(worst)
        assert t.value == pytest.approx((a + b) / 2 - worst)
    assert any(t.user_attrs["worst_drop"] > 0 for t in trials)  # the guard bit at least once in this sweep


def test_a_sweep_on_one_set_scores_its_metric_itself(tmp_path, fake_model, isolated_rc, monkeypatch):
    from lab.__main__ import compose
    from lab.sweep import run

    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "ragx-cache"))
    data = _topic_set(tmp_path / "notes", 3)
    out = run(compose(["sweep=weights", *_overrides(tmp_path, data, "notes")]), n_trials=6)
    assert out["evaluate"].references == {}
    assert all(t.value == t.user_attrs["nDCG@10"] and "worst_drop" not in t.user_attrs for t in out["study"].trials)


def test_an_unknown_training_set_stops_with_one_line(tmp_path, capsys):
    from lab.__main__ import compose
    from lab.configs import dataset_config, train_sets

    cfg = compose([])
    for name in ("no-such-collection", str(tmp_path / "not-beir")):
        with pytest.raises(SystemExit) as stop:
            dataset_config(cfg, name)
        err = capsys.readouterr().err
        assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and name in err
    with pytest.raises(SystemExit) as stop:
        train_sets(compose(["train_sets=[scifact,scifact]"]))
    assert stop.value.code == 2 and "twice" in capsys.readouterr().err


def test_promotion_refuses_a_winner_that_loses_significantly_and_writes_nothing(tmp_path, fake_model, isolated_rc, monkeypatch, capsys):
    """A study whose best trial drops the BM25 leg, on a held-out split where only BM25 finds each
    query's document: refused, with the loss and its p-value against both the current defaults and the
    hybrid at the winner's budget, the train/test gap, and defaults.toml untouched."""
    import optuna

    import lab.promote as promote_module
    from lab.__main__ import compose
    from lab.promote import promote
    from lab.sweep import storage_url

    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "ragx-cache"))
    data = _topic_set(tmp_path / "notes", 4, splits=("train", "test"))
    cfg = compose([*_overrides(tmp_path, data, "notes"), "optuna.study_name=zero-weights",
                   "promote.heldout=[{dataset:notes,split:test}]"])
    study = optuna.create_study(study_name="zero-weights", storage=storage_url(cfg.optuna.storage, tmp_path / "cache"), direction="maximize")
    dense_only = {"lexical_n": 0, "lexical_weight": 0.0}
    distributions = {"lexical_n": optuna.distributions.IntDistribution(0, 100), "lexical_weight": optuna.distributions.FloatDistribution(0.0, 1.0)}
    study.add_trial(optuna.trial.create_trial(params=dense_only, distributions=distributions, value=0.9, user_attrs={"nDCG@10": 0.9}))
    monkeypatch.setattr(promote_module, "write_defaults", lambda *a, **k: pytest.fail("a refused winner was written"))
    before = DEFAULTS_PATH.read_bytes()
    assert promote(cfg, tmp_path) == 1
    out = capsys.readouterr().out
    assert "against current" in out and "against hybrid" in out and out.count("a significant LOSS") == 2
    assert "train/test gap: notes: nDCG@10 train 0.9000 -> test" in out
    assert "refused" in out and DEFAULTS_PATH.read_bytes() == before


def test_two_folders_of_one_name_are_two_datasets(tmp_path):
    from lab.__main__ import compose
    from lab.configs import train_sets

    first, second = _topic_set(tmp_path / "x" / "notes", 5), _topic_set(tmp_path / "y" / "notes", 6)
    names = [compose([f"train_sets=[{folder}]"]).optuna.study_name for folder in (first, second)]
    assert names[0] != names[1] and all(n.startswith("notes-") for n in names)
    assert len(train_sets(compose([f"train_sets=[{first},{second}]"]))) == 2


@pytest.mark.parametrize("command, message", [
    (["cache", "dataset=nosuch"], "Could not find 'dataset/nosuch'"),
    (["sweep", "sweep=nosuch"], "Could not find 'sweep/nosuch'"),
    (["sweep", "trials=abc"], "trials='abc': a whole number from 1 up"),
    (["cache", "caps.dense_n=abc"], "caps.dense_n='abc'"),
    (["promote", "promote.heldout=[]"], "promote.heldout must name at least one"),
    (["promote", "optuna.study_name=never-swept"], "no study named 'never-swept'"),
])
def test_bad_lab_input_is_one_line_and_exit_2(tmp_path, capsys, command, message):
    from lab.__main__ import main

    assert main([*command, f"cache_root={tmp_path / 'cache'}"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("lab: error: ") and message in err


def test_a_training_set_without_the_split_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    from lab.__main__ import main

    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "ragx-cache"))
    data = _topic_set(tmp_path / "tested", 7, splits=("test",))
    assert main(["cache", f"train_sets=[{data}]", "split=train", f"cache_root={tmp_path / 'cache'}"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "no qrels for split train" in err
