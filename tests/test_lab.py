"""The lab re-scores cached passes with ragx's own scoring: digit-exact against live `ragx eval`."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("polars")

from fakes import HashEmbedder, indexed_topic_corpus

from lab.passes import StaleCacheError, build_cache, check_fresh, load_cache
from lab.rerank import shortlist_scorer
from lab.rescore import rescore, rescore_runs
from ragx.api import Corpus
from ragx.eval.presets import parse_config
from ragx.eval.runner import run_eval
from ragx.index.build import run_index
from ragx.scoring.candidates import PassCaps

SPECS = [
    "graph",
    "a=graph,hops=1,decay=0.9,query_floor=0.1",
    "b=graph,hops=3,max_frontier=5,rrf_k=5,dense_n=7,lexical_n=3",
    "c=hybrid,heat_weight=1,dense_weight=0,lexical_weight=0,file_chunks=3,budget=own",  # the offline re-scorer applies Params only
    "d=bm25,budget=own",
    "e=dense,dense_n=30,budget=own",
]


@pytest.fixture
def setup(tmp_path, fake_model):
    words = ["telescope orbit", "bread oven yeast", "sail keel", "comet flour", "harbour nebula light", "anchor", "sugar dough"]
    return indexed_topic_corpus(tmp_path, 10, {w: [f"cooking-{i % 10}.md", f"sailing-{(i * 3) % 10}.md"] for i, w in enumerate(words)})


def test_offline_rescoring_is_digit_exact_against_live_eval(setup, tmp_path):
    corpus, queries = setup
    configs = [parse_config(s, corpus.settings.search) for s in SPECS]
    caps = PassCaps(dense_n=120, lexical_n=120, hops=3, query_floor=0.0)  # wider than any config
    folder = build_cache(corpus, queries, caps, tmp_path / "cache")
    passes, meta = load_cache(folder)
    qrels = {q.id: q.files for q in queries}
    for cfg in configs:
        live = run_eval(corpus.searcher, queries, [cfg])  # its own pass, caps = this config's
        offline = rescore(passes, cfg.params, qrels, meta["paths"])
        assert offline.runs == live.runs[cfg.name], cfg.name           # same files, same float scores
        assert offline.per_query == live.file_per_query[cfg.name], cfg.name
        assert offline.means == live.file_means[cfg.name], cfg.name
        # every config twice in one batch: each pair shares its structure, so lab/vectorised.py ranks them
        together = rescore_runs(passes, [cfg.params, cfg.params.replace(file_chunks=cfg.params.file_chunks)], meta["paths"])
        assert together == [live.runs[cfg.name]] * 2, cfg.name
    assert any(0 < m["nDCG@10"] < 1 for m in live.file_per_query[cfg.name].values())


RERANKED = [
    "r=graph,rerank_weight=0.6,shortlist=8",
    "s=hybrid,rerank_weight=2,shortlist=20,heat_weight=0.3",
    "t=graph,hops=2,decay=0.8,rerank_weight=1,shortlist=3,file_chunks=2",
]


@pytest.fixture
def reranked(setup, tmp_path, tiny_cross_encoder, monkeypatch):
    """The setup corpus with the tiny random cross-encoder configured, its pass cache, and a fresh
    score-file path per call of `fresh(name)`."""
    corpus, queries = setup
    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "ragx-cache"))
    (corpus.root / "ragx.toml").write_text(f'[rerank]\nmodel = "{tiny_cross_encoder}"\nmax_length = 128\n', encoding="utf-8")
    caps = PassCaps(dense_n=120, lexical_n=120, hops=3, query_floor=0.0)
    folder = build_cache(Corpus(corpus.root), queries, caps, tmp_path / "cache")

    def fresh(name: str) -> Corpus:
        opened = Corpus(corpus.root)
        opened.rerank_scores = tmp_path / f"{name}.sqlite"
        return opened

    return fresh, queries, load_cache(folder)


@pytest.mark.model
@pytest.mark.parametrize("first", ["offline", "live"])
def test_offline_rescoring_of_reranked_configs_is_digit_exact_against_live_eval(reranked, first):
    """Reranked configurations: the lab re-scores cached passes with the cached cross-encoder, and
    gets what a live `Corpus.evaluate` / `run_eval` gets, to the last digit. Whichever runs second
    computes no cross-encoder pair at all (its shortlists are exactly the first one's)."""
    fresh, queries, (passes, meta) = reranked
    corpus = fresh(f"scores-{first}")
    scorer = shortlist_scorer(corpus)
    assert scorer is not None and corpus.rerank_scores.name == f"scores-{first}.sqlite"  # the lab keeps an explicit path
    qrels = {q.id: q.files for q in queries}
    for spec in RERANKED:
        cfg = parse_config(spec, corpus.settings.search)
        if first == "offline":
            offline = rescore(passes, cfg.params, qrels, meta["paths"], scorer)
            computed = scorer.reranker.computed
            live = run_eval(corpus.searcher, queries, [cfg])
            assert scorer.reranker.computed == computed, spec  # the live shortlists were all in the cache
        else:
            live = run_eval(corpus.searcher, queries, [cfg])
            computed = scorer.reranker.computed
            offline = rescore(passes, cfg.params, qrels, meta["paths"], scorer)
            assert scorer.reranker.computed == computed, spec
        assert offline.runs == live.runs[cfg.name], spec
        assert offline.per_query == live.file_per_query[cfg.name], spec
        assert offline.means == live.file_means[cfg.name], spec
        doc = corpus.evaluate(queries, [cfg])  # the facade `ragx eval` calls: same means, nothing new scored
        assert doc["files"]["means"][cfg.name] == offline.means and scorer.reranker.computed == computed, spec
        assert doc["rerank_pairs"]["computed"] == 0 and doc["rerank_pairs"]["cached"] > 0, spec
        plain = rescore(passes, cfg.params.replace(rerank_weight=0.0), qrels, meta["paths"])
        assert plain.runs != offline.runs, spec  # the cross-encoder really moved the ranking
    assert scorer.reranker.computed > 0 and scorer.reranker.hits > 0


def test_stale_cache_is_refused(setup, tmp_path):
    corpus, queries = setup
    caps = PassCaps(20, 20, 2, 0.3)
    folder = build_cache(corpus, queries, caps, tmp_path / "cache")
    check_fresh(folder, corpus, caps)
    with pytest.raises(StaleCacheError, match="narrower"):
        check_fresh(folder, corpus, PassCaps(50, 20, 2, 0.3))
    (corpus.root / "extra.md").write_text("# extra\n\nsomething about telescopes\n")
    run_index(corpus.root, corpus.settings, HashEmbedder())
    with pytest.raises(StaleCacheError, match="index changed"):
        check_fresh(folder, Corpus(corpus.root), caps)


@pytest.mark.model
def test_lab_cache_and_sweep_run_end_to_end(tmp_path, monkeypatch):
    """`python -m lab sweep` on a tiny BEIR folder with the real embedded model: trials recorded in
    Optuna and MLflow, plots and a summary written."""
    from lab.__main__ import main

    data = tmp_path / "tiny"
    (data / "qrels").mkdir(parents=True)
    docs = {f"d{i}": f"{t} " * 3 + f"document {i} about {t}" for i, t in enumerate(["rivers", "mountains", "boats", "bread", "stars"] * 4)}
    (data / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": k, "title": k, "text": v}) for k, v in docs.items()) + "\n")
    (data / "queries.jsonl").write_text("\n".join(json.dumps({"_id": f"q{i}", "text": t}) for i, t in enumerate(["rivers", "boats", "stars"])) + "\n")
    (data / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\nq1\td2\t1\nq2\td4\t1\n")
    reports = tmp_path / "reports" / "tiny-smoke"
    overrides = [
        "sweep=quick", "dataset.name=tiny", f"dataset.data_dir={data}", f"dataset.cache={tmp_path / 'folder'}",
        f"cache_root={tmp_path / 'cache'}", f"mlflow.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
        f"mlflow.artifacts={tmp_path / 'artifacts'}", "optuna.study_name=tiny-smoke", f"reports={tmp_path / 'reports'}",
    ]
    assert main(["cache", *overrides]) == 0
    assert main(["sweep", *overrides, "trials=4"]) == 0
    summary = json.loads((reports / "summary.json").read_text())
    assert summary["trials_in_study"] == 4 and 0 <= summary["best"]["value"] <= 1
    assert (reports / "sensitivity.png").exists()
    for knob in summary["sensitivity"].values():  # each setting's difference from the best, inside its 95% CI
        assert all(lo <= d <= hi for lo, d, hi in zip(knob["low"], knob["diff"], knob["high"]))
    # the grid sampler: 2 values for each of the quick sweep's 7 knobs, 8 distinct points in one batch
    grid = [*overrides[:-2], "optuna.study_name=tiny-grid", f"reports={tmp_path / 'reports'}", "optuna.sampler=grid", "optuna.grid_points=2"]
    assert main(["sweep", *grid, "trials=8"]) == 0
    import optuna

    study = optuna.load_study(study_name="tiny-grid", storage=f"sqlite:///{tmp_path / 'cache' / 'optuna.db'}")
    assert len({json.dumps(t.params, sort_keys=True) for t in study.trials}) == 8 == len({t.system_attrs["grid_id"] for t in study.trials})
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["ragx-lab"], filter_string="tags.study = 'tiny-smoke'")
    assert len(runs) == 1 and runs.iloc[0]["params.dataset"] == "tiny"
    history = mlflow.MlflowClient().get_metric_history(runs.iloc[0]["run_id"], "objective")
    assert sorted(m.step for m in history) == [0, 1, 2, 3]


def _tiny_beir(tmp_path):
    data = tmp_path / "tiny"
    (data / "qrels").mkdir(parents=True)
    topics = ["rivers", "mountains", "boats", "bread", "stars"]
    docs = {f"d{i}": f"{t} " * 3 + f"document {i} about {t} and {topics[(i + 1) % 5]}" for i, t in enumerate(topics * 6)}
    (data / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": k, "title": k, "text": v}) for k, v in docs.items()) + "\n")
    queries = ["rivers", "boats", "stars", "bread mountains", "document about boats"]
    (data / "queries.jsonl").write_text("\n".join(json.dumps({"_id": f"q{i}", "text": t}) for i, t in enumerate(queries)) + "\n")
    qrels = "".join(f"q{i}\td{d}\t1\n" for i, d in enumerate([0, 2, 4, 8, 7]))
    (data / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return data


@pytest.mark.model
def test_a_rerank_sweep_computes_no_cross_encoder_pair_on_its_second_run(tmp_path, fake_model, tiny_cross_encoder, isolated_rc, monkeypatch):
    """`sweep=rerank` (rerank_weight and shortlist swept with the signal weights) on the tiny random
    cross-encoder: the first run fills the score cache beside the pass caches, the same sweep run again
    (a new study with the same seed, so the same trials) reads every pair from it."""
    from lab.__main__ import compose
    from lab.sweep import run

    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "ragx-cache"))
    isolated_rc.write_text(f'[rerank]\nmodel = "{tiny_cross_encoder}"\nmax_length = 128\n', encoding="utf-8")
    data = _tiny_beir(tmp_path)
    base = ["sweep=rerank", "dataset.name=tiny", f"dataset.data_dir={data}", f"dataset.cache={tmp_path / 'folder'}",
            f"cache_root={tmp_path / 'cache'}", f"mlflow.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
            f"mlflow.artifacts={tmp_path / 'artifacts'}"]
    first = run(compose([*base, "optuna.study_name=first"]), n_trials=8)
    again = run(compose([*base, "optuna.study_name=again"]), n_trials=8)
    assert first["rerank"]["computed"] > 0 and first["rerank"]["hits"] > 0
    assert again["rerank"] == {"computed": 0, "hits": again["rerank"]["hits"]} and again["rerank"]["hits"] > 0
    trials = [t.params for t in first["study"].trials], [t.params for t in again["study"].trials]
    assert trials[0] == trials[1] and any(p["rerank_weight"] > 0.2 for p in trials[0])
    assert len({p["shortlist"] for p in trials[0]}) > 3  # the shortlist really varied
    from ragx.models.rerank_cache import default_score_path

    # one score cache for every caller: the file `ragx eval`, queries and the MCP server use, none of the lab's own
    assert default_score_path().is_relative_to(tmp_path / "ragx-cache") and default_score_path().exists()
    assert not list((tmp_path / "cache").rglob("*.sqlite"))
    values = [t.value for t in first["study"].trials], [t.value for t in again["study"].trials]
    assert values[0] == values[1]  # cached scores: the same objective, digit for digit


def test_a_rerank_space_without_a_reranker_stops_with_one_line(capsys):
    from lab.sweep import check_rerank_space

    check_rerank_space({"dense_weight": [0.0, 1.0]}, {"base": {"scorer": None}})  # no rerank knob: fine
    check_rerank_space({"rerank_weight": [0.0, 0.0]}, {"base": {"scorer": None}})  # rerank held at 0: fine
    with pytest.raises(SystemExit) as stop:
        check_rerank_space({"rerank_weight": [0.0, 2.0]}, {"base": {"scorer": None}})
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and "[rerank] model" in err
