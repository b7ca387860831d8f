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
    (["cache", "caps.bm25_variant=okapi"], "caps.bm25_variant='okapi': one of fts5, lucene"),
    (["promote", "promote.heldout=[]"], "promote.heldout must name at least one"),
    (["promote", "optuna.study_name=never-swept"], "no study named 'never-swept'"),
    # tuning on held-out data: a split named test, a split promote.heldout lists, any entry of train_sets
    (["sweep", "dataset=cranfield", "split=test", "sweep=quick"], "sweep: cranfield test is a test split"),
    (["sweep", "train_sets=[dendron-vault,cranfield]", "split=test"], "sweep: dendron-vault test is a test split"),
    (["sweep", "dataset=scifact", "split=dev", "promote.heldout=[{dataset:scifact,split:dev}]"], "scifact dev is held out"),
    (["promote", "dataset=cranfield", "split=test", "promote.heldout=[{dataset:cranfield,split:test}]"],
     "promote: cranfield test is a test split"),
    # sweep settings checked before any pass is built
    (["sweep", "sweep=quick", "sweep.objective=nDCG@11"], "sweep.objective='nDCG@11': unknown metric"),
    (["sweep", "guard=abc"], "guard='abc'"),
    (["sweep", "sweep.n_trials=abc"], "sweep.n_trials='abc'"),
    (["sweep", "optuna.storage=bogus"], "optuna.storage='bogus'"),
    (["sweep", "sweep=quick", "sweep.space.dense_weight=[1,0]"], "sweep.space.dense_weight=[1, 0]: an empty range"),
    (["study", "optuna.storage=bogus"], "optuna.storage='bogus'"),
    (["study", "optuna.storage=foo://x"], "optuna.storage='foo://x': not a database URL"),
    # a pass narrower than the trials (or the defaults they start from) would score fewer candidates
    (["sweep", "sweep=quick", "caps.dense_n=20", "caps.lexical_n=20"], "caps.dense_n=20 is narrower than the sweep asks (dense_n up to 100)"),
    (["sweep", "sweep=quick", "caps.hops=1"], "caps.hops=1 is narrower than the sweep asks (hops up to 2)"),
    (["sweep", "sweep=quick", "caps.query_floor=0.3"], "caps.query_floor=0.3 is above the sweep's lowest query_floor"),
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


@pytest.mark.parametrize("argv", [["sweep", "--help"], ["promote", "--help"], ["models", "--help"], ["-h"], ["cache", "dataset=scifact", "-h"]])
def test_help_prints_the_usage_and_exits_0(capsys, argv):
    from lab.__main__ import main

    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "python -m lab COMMAND" in out and "Overrides are Hydra's" in out and err == ""


def test_promotion_refuses_a_study_tuned_on_a_held_out_split_whatever_the_overrides(tmp_path, isolated_rc, capsys):
    """The sweep records what it tuned on (study attributes); promote refuses a study tuned on a test or
    held-out split even when this run's own overrides name a training split."""
    import optuna

    from lab.__main__ import main
    from lab.sweep import storage_url

    study = optuna.create_study(study_name="tuned-on-test", storage=storage_url(None, tmp_path / "cache"), direction="maximize")
    study.set_user_attr("train_sets", ["notes"])
    study.set_user_attr("train_splits", ["test"])
    before = DEFAULTS_PATH.read_bytes()
    assert main(["promote", "optuna.study_name=tuned-on-test", "promote.heldout=[{dataset:notes,split:test}]",
                 f"cache_root={tmp_path / 'cache'}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lab: error: promote: study 'tuned-on-test' was tuned on notes test") and len(err.splitlines()) == 1
    assert DEFAULTS_PATH.read_bytes() == before


def test_a_sweep_records_its_training_data_and_its_defaults_ignore_the_rc_search(tmp_path, fake_model, isolated_rc, monkeypatch):
    """An rc [search] (link_weight 0.2) is not what the sweep calls the current defaults."""
    import tomllib

    from lab.__main__ import compose
    from lab.sweep import run

    shipped = tomllib.loads(DEFAULTS_PATH.read_text(encoding="utf-8"))["search"]
    assert shipped["link_weight"] != 0.2
    isolated_rc.write_text("[search]\nlink_weight = 0.2\n", encoding="utf-8")
    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "ragx-cache"))
    data = _topic_set(tmp_path / "notes", 8)
    out = run(compose(["sweep=weights", *_overrides(tmp_path, data, "notes")]), n_trials=2)
    assert out["defaults"].link_weight == shipped["link_weight"]
    assert {k: getattr(out["defaults"], k) for k in shipped} == shipped
    assert out["study"].user_attrs["train_sets"] == ["notes"] and out["study"].user_attrs["train_splits"] == ["train"]
    assert isolated_rc.read_text(encoding="utf-8") == "[search]\nlink_weight = 0.2\n"  # left as it was


def test_a_sweep_scores_the_bm25_of_its_passes_and_promote_leaves_that_to_a_person(tmp_path, fake_model, isolated_rc, monkeypatch, capsys):
    """caps.bm25_* set the BM25 every trial's passes scored with: the trials' params carry it, the study
    records it, and promote refuses to write a winner measured with another BM25 than the defaults'."""
    from lab.__main__ import compose, main
    from lab.sweep import run

    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "ragx-cache"))
    data = _topic_set(tmp_path / "notes", 8)
    overrides = ["sweep=weights", "caps.bm25_variant=lucene", "caps.bm25_b=0.5", *_overrides(tmp_path, data, "notes")]
    out = run(compose(overrides), n_trials=2)
    assert (out["defaults"].bm25_variant, out["defaults"].bm25_b) == ("lucene", 0.5)
    assert out["study"].user_attrs["bm25"] == {"bm25_k1": 1.2, "bm25_b": 0.5, "bm25_variant": "lucene", "query_features": "off"}
    before = DEFAULTS_PATH.read_bytes()
    capsys.readouterr()
    assert main(["promote", *overrides, "promote.heldout=[{dataset:notes,split:test}]"]) == 1
    assert "refused: study" in capsys.readouterr().out and DEFAULTS_PATH.read_bytes() == before


def test_a_resumed_study_draws_new_parameter_sets(tmp_path, fake_model, isolated_rc, monkeypatch):
    """Two launches of trials=3 on one study: six distinct parameter sets (the sampler's seed counts the
    trials already in the study); a fresh study with the same seed is drawn the same way again."""
    from lab.__main__ import compose
    from lab.sweep import run

    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "ragx-cache"))
    data = _topic_set(tmp_path / "notes", 9)
    overrides = ["sweep=weights", *_overrides(tmp_path, data, "notes")]
    run(compose(overrides), n_trials=3)
    trials = run(compose(overrides), n_trials=3)["study"].trials
    params = [tuple(sorted(t.params.items())) for t in trials]
    assert len(params) == 6 and len(set(params)) == 6
    fresh = run(compose([*overrides, "optuna.study_name=fresh"]), n_trials=3)["study"].trials
    assert [t.params for t in fresh] == [t.params for t in trials[:3]]
