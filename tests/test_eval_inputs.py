"""`ragx eval`'s inputs: every bad one is one line on stderr and exit 2, found before anything is
materialised, indexed or evaluated; a real regression alone is exit 1. Through the CLI, on tiny BEIR
folders (hash embedder) and a small indexed corpus."""

from __future__ import annotations

import json
import random

import pytest
from cli_runner import call
from fakes import TOPICS, beir_folder, make_indexed_corpus

pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake

METRICS = ("nDCG@10", "R@5", "R@10", "R@100", "MRR@10", "MAP@100")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """Where `ragx eval beir` materialises and indexes: it must stay absent after refused input."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("RAGX_CACHE_DIR", str(folder))
    return folder


def collection(tmp_path, name: str, seed: int = 5, topics=("astronomy", "cooking")):
    rng = random.Random(seed)
    words = {f"{t}{i}": " ".join(rng.choice(TOPICS[t].split()) for _ in range(30)) for t in topics for i in range(5)}
    return beir_folder(tmp_path / name, words)


@pytest.fixture
def corpus(tmp_path):
    root = make_indexed_corpus(tmp_path / "corpus")
    q = tmp_path / "queries.jsonl"
    rows = [{"id": "a", "query": "telescope comet orbit", "relevant_files": ["astronomy-1.md", "astronomy-2.md"]},
            {"id": "b", "query": "dough yeast bread", "relevance": {"cooking-0.md": 2, "cooking-3.md": 1}}]
    q.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return root, q


def refused(capsys, cache, *args: str) -> str:
    """`ragx eval ARGS`: exit 2, one `ragx: error:` line, and no collection materialised or indexed."""
    code, out, err = call(capsys, "eval", *args)
    assert code == 2, err
    assert err.startswith("ragx: error: ") and err.strip().count("\n") == 0, err
    assert "internal error" not in err, err
    assert not cache.exists(), "refused input must not materialise or index anything"
    return err


def baseline(path, dataset: str, split: str, configs: tuple[str, ...], value: float = 0.0, **extra):
    doc = {"dataset": dataset, "split": split, "tolerance": 0.01, "metrics": {c: {m: value for m in METRICS} for c in configs}}
    path.write_text(json.dumps(doc | extra))
    return path


# 1. BM25 parameters -------------------------------------------------------------------------------


def test_a_config_with_its_own_bm25_parameters_runs_at_the_budget_of_a_graph_with_them(tmp_path, capsys, cache):
    data = collection(tmp_path, "one")
    code, out, err = call(capsys, "eval", "beir", str(data), "--json", "-c", "x=hybrid,bm25_b=0.5",
                          "-c", "g=graph,bm25_b=0.5", "-c", "d=dense,budget=own")  # d scores no BM25: any (k1, b) serves it
    assert code == 0, err
    doc = json.loads(out)["datasets"][0]
    assert doc["budgets"]["x"]["candidates"] == doc["budgets"]["g"]["candidates"]  # equal budget: the graph with b=0.5
    assert {c["name"]: c["params"]["bm25_b"] for c in doc["configs"]} == {"x": 0.5, "g": 0.5, "d": 0.75}


def test_a_bm25_variant_is_a_setting_of_a_config(tmp_path, capsys, cache):
    data = collection(tmp_path, "one")
    code, out, err = call(capsys, "eval", "beir", str(data), "--json", "-c", "b=bm25,bm25_variant=bm25+,budget=own", "-c", "d=dense,budget=own")
    assert code == 0, err
    assert {c["name"]: c["params"]["bm25_variant"] for c in json.loads(out)["datasets"][0]["configs"]} == {"b": "bm25+", "d": "fts5"}


def test_configs_that_need_different_bm25_parameters_are_refused_before_any_work(tmp_path, capsys, cache):
    data = collection(tmp_path, "one")
    err = refused(capsys, cache, "beir", str(data), "-c", "x=hybrid,bm25_b=0.5", "-c", "hybrid")
    assert "configs of one run must share bm25_k1/bm25_b/bm25_variant" in err and "run `ragx eval` once per setting" in err
    assert "b=0.5, fts5: x" in err and "b=0.75, fts5: hybrid" in err
    # a dense leg at graph's budget needs the graph's BM25: its budget source scores it
    err = refused(capsys, cache, "beir", str(data), "-c", "x=hybrid,bm25_k1=2", "-c", "dense")
    assert "k1=2, b=0.75, fts5: x" in err and "k1=1.2, b=0.75, fts5: dense" in err
    err = refused(capsys, cache, "beir", str(data), "-c", "x=hybrid,bm25_variant=lucene", "-c", "hybrid")
    assert "b=0.75, lucene: x" in err and "b=0.75, fts5: hybrid" in err


# 2. overrides are checked as `ragx config set` checks the setting ----------------------------------


@pytest.mark.parametrize("spec, message", [
    ("x=hybrid,file_chunks=0", "search.file_chunks = 0 is out of range: it must be >= 1"),
    ("x=hybrid,dense_n=-5", "search.dense_n = -5 is out of range"),
    ("x=graph,hops=-2", "search.hops = -2 is out of range: it must be >= 0 and <= 10"),
    ("x=graph,decay=5", "search.decay = 5 is out of range: it must be >= 0 and <= 1"),
    ("x=hybrid,dense_weight=-1", "search.dense_weight = -1 is out of range"),
    ("x=hybrid,top=0", "search.top = 0 is out of range"),
    ("x=hybrid,shortlist=0", "search.shortlist = 0 is out of range"),
    ("x=hybrid,rrf_k=nan", "search.rrf_k = nan is out of range"),
    ("x=hybrid,rrf_k=inf", "search.rrf_k = inf is out of range"),
    ("x=hybrid,hops=1.5", "search.hops must be int"),
    ("x=hybrid,hops=many", "hops needs a number, got 'many'"),
    ("x=hybrid,bm25_variant=okapi", "search.bm25_variant = 'okapi' is not allowed: it must be one of 'fts5', 'lucene'"),
    ("bm25-ref,k1=-1", "k1 = -1 is out of range: it must be > 0"),
    ("x=bm25-ref,k1=0", "k1 = 0 is out of range: it must be > 0"),
    ("x=bm25-ref,b=1.5", "b = 1.5 is out of range: it must be >= 0 and <= 1"),
    ("x=bm25-ref,k1=nan", "k1 = nan is out of range"),
    ("=hybrid", "a configuration needs a name"),
    ("x=hybrid,colour=3", "unknown parameter 'colour'"),
])
def test_bad_config_overrides_are_one_line_before_any_work(tmp_path, capsys, cache, spec, message):
    data = collection(tmp_path, "one")
    err = refused(capsys, cache, "beir", str(data), "--json", "-c", spec, "-c", "hybrid")
    assert f"--config {spec!r}" in err and message in err


def test_the_preset_alone_names_a_config_with_overrides(tmp_path, capsys, corpus):
    root, q = corpus
    code, out, err = call(capsys, "eval", str(q), "--root", str(root), "--json", "-c", "graph,hops=2", "-c", "hybrid")
    assert code == 0, err
    configs = {c["name"]: c for c in json.loads(out)["datasets"][0]["configs"]}
    assert configs["graph"]["params"]["hops"] == 2


# 3. the regression gate ---------------------------------------------------------------------------


def test_a_baseline_of_another_dataset_or_split_is_refused(tmp_path, capsys, cache):
    data = collection(tmp_path, "one")
    other = baseline(tmp_path / "scifact.json", "scifact", "test", ("hybrid",))
    err = refused(capsys, cache, "beir", str(data), "-c", "hybrid", "--gate", str(other))
    assert "'scifact'" in err and "'one'" in err and "dataset" in err
    dev = baseline(tmp_path / "dev.json", "one", "dev", ("hybrid",))
    err = refused(capsys, cache, "beir", str(data), "-c", "hybrid", "--gate", str(dev))
    assert "split 'dev'" in err and "split 'test'" in err


@pytest.mark.parametrize("tolerance", ["-1", "nan", "inf"])
def test_a_tolerance_that_is_no_drop_is_refused(tmp_path, capsys, cache, tolerance):
    data = collection(tmp_path, "one")
    base = baseline(tmp_path / "base.json", "one", "test", ("hybrid",))
    err = refused(capsys, cache, "beir", str(data), "-c", "hybrid", "--gate", str(base), "--tolerance", tolerance)
    assert "--tolerance" in err and ">= 0" in err


def test_a_tolerance_without_a_gate_or_baseline_is_refused(tmp_path, capsys, cache):
    data = collection(tmp_path, "one")
    assert "--tolerance applies to --gate" in refused(capsys, cache, "beir", str(data), "--tolerance", "0.1")


def test_baseline_configs_the_run_lacks_are_an_input_mismatch_not_a_regression(tmp_path, capsys, cache):
    data = collection(tmp_path, "one")
    base = baseline(tmp_path / "base.json", "one", "test", ("dense", "graph", "hybrid"))
    err = refused(capsys, cache, "beir", str(data), "-c", "x=dense", "-c", "hybrid", "--gate", str(base))
    assert "baseline configuration(s) dense, graph are not in this run" in err


def test_a_baseline_with_a_bad_tolerance_or_metric_is_refused(tmp_path, capsys, cache):
    data = collection(tmp_path, "one")
    base = baseline(tmp_path / "base.json", "one", "test", ("hybrid",), tolerance=-0.5)
    assert "tolerance must be a finite number >= 0" in refused(capsys, cache, "beir", str(data), "-c", "hybrid", "--gate", str(base))
    base.write_text(json.dumps({"dataset": "one", "split": "test", "metrics": {"hybrid": {"P@5": 0.1}}}))
    assert "P@5" in refused(capsys, cache, "beir", str(data), "-c", "hybrid", "--gate", str(base))


def test_the_gate_still_fails_a_real_drop_and_records_a_zero_tolerance(tmp_path, capsys, corpus):
    root, q = corpus
    base = tmp_path / "base.json"
    code, _, err = call(capsys, "eval", str(q), "--root", str(root), "-c", "hybrid", "--write-baseline", str(base), "--tolerance", "0")
    assert code == 0, err
    doc = json.loads(base.read_text())
    assert doc["tolerance"] == 0  # not replaced by the default
    doc["metrics"]["hybrid"]["nDCG@10"] += 0.05
    base.write_text(json.dumps(doc))
    code, _, err = call(capsys, "eval", str(q), "--root", str(root), "-c", "hybrid", "--gate", str(base))
    assert code == 1 and "hybrid nDCG@10" in err and "FAILED" in err


def test_the_gate_names_a_configuration_whose_budget_changed_and_still_compares_it(tmp_path, capsys, corpus):
    root, q = corpus
    base = tmp_path / "base.json"
    assert call(capsys, "eval", str(q), "--root", str(root), "-c", "hybrid", "--write-baseline", str(base))[0] == 0
    assert json.loads(base.read_text())["budget"]["hybrid"]["rule"] == "graph"
    code, out, err = call(capsys, "eval", str(q), "--root", str(root), "-c", "hybrid", "--gate", str(base), "--json")
    assert code == 0 and "is not the baseline's" not in err and json.loads(out)["datasets"][0]["gate"]["budget_changes"] == {}
    # the same name, a narrower pass: said, and still gated (a drop would fail)
    code, out, err = call(capsys, "eval", str(q), "--root", str(root), "-c", "hybrid=hybrid,dense_n=3,budget=own",
                          "--gate", str(base), "--json")
    changes = json.loads(out)["datasets"][0]["gate"]["budget_changes"]
    assert "dense_n 100 -> 3" in changes["hybrid"] and 'rule "graph" -> "own"' in changes["hybrid"]
    assert "gate corpus: hybrid's candidate budget is not the baseline's (" in err
    assert {r["config"] for r in json.loads(out)["datasets"][0]["gate"]["rows"]} == {"hybrid"}


# 4. every input is checked before any dataset is materialised or indexed --------------------------


def test_run_wide_mistakes_are_found_before_the_first_dataset_is_indexed(tmp_path, capsys, cache):
    one, two = collection(tmp_path, "one"), collection(tmp_path, "two", 6, ("sailing", "cooking"))
    sets = ["beir", str(one), str(two)]
    assert "unknown preset 'hybird'" in refused(capsys, cache, *sets, "-c", "x=hybird")
    assert "--reference 'nope'" in refused(capsys, cache, *sets, "-c", "dense", "--reference", "nope")
    assert "names must be unique" in refused(capsys, cache, *sets, "-c", "dense", "-c", "dense")
    file = baseline(tmp_path / "base.json", "one", "test", ("dense",))
    assert "give a folder" in refused(capsys, cache, *sets, "-c", "dense", "--gate", str(file))
    assert "give a folder" in refused(capsys, cache, *sets, "-c", "dense", "--write-baseline", str(tmp_path / "new.json"))
    folder = tmp_path / "baselines"
    folder.mkdir()
    baseline(folder / "one-test.json", "one", "test", ("dense",))
    err = refused(capsys, cache, *sets, "-c", "dense", "--gate", str(folder))
    assert "two-test.json not found" in err
    report = tmp_path / "report.md"
    report.write_text("not a folder\n")
    assert "--report" in refused(capsys, cache, *sets, "-c", "dense", "--report", str(report))
    assert "is a file" in refused(capsys, cache, *sets, "-c", "dense", "--report", str(report / "sub"))
    assert "no qrels for split dev" in refused(capsys, cache, *sets, "--split", "dev")
    assert "not a folder" in refused(capsys, cache, *sets, str(tmp_path / "absent"))


# 5. options of the other mode ---------------------------------------------------------------------


@pytest.mark.parametrize("option", [("--split", "dev"), ("--split", "test"), ("--gap",), ("--cache", "somewhere")])
def test_beir_options_are_refused_for_a_queries_file(tmp_path, capsys, cache, corpus, option):
    root, q = corpus
    err = refused(capsys, cache, str(q), "--root", str(root), *option)
    assert f"{option[0]} applies to `ragx eval beir" in err


def test_root_and_gap_on_train_are_refused_in_beir_mode(tmp_path, capsys, cache):
    data = collection(tmp_path, "one")
    assert "--root applies to `ragx eval QUERIES.jsonl`" in refused(capsys, cache, "beir", str(data), "--root", str(tmp_path))
    assert "--gap" in refused(capsys, cache, "beir", str(data), "--split", "train", "--gap")


# 6. names in the report, and a one-query set ------------------------------------------------------


def test_a_pipe_in_a_config_name_stays_in_its_markdown_cell(tmp_path, capsys, corpus):
    root, q = corpus
    code, _, err = call(capsys, "eval", str(q), "--root", str(root), "-c", "a|b=dense", "-c", "hybrid", "--report", str(tmp_path / "rep"))
    assert code == 0, err
    md = (tmp_path / "rep" / "corpus-queries.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| a")]
    assert rows and all(line.startswith("| a\\|b | ") for line in rows)
    head = next(line for line in md.splitlines() if line.startswith("| config | cand."))
    assert rows[0].replace("\\|", "").count("|") == head.count("|")  # as many cells as the head: no cell opened


def test_a_single_labelled_query_is_evaluated(tmp_path, capsys, corpus):
    root, q = corpus
    one = tmp_path / "one.jsonl"
    one.write_text(q.read_text().splitlines()[0] + "\n")
    code, out, err = call(capsys, "eval", str(one), "--root", str(root), "--json", "-c", "dense", "-c", "hybrid")
    assert code == 0, err
    comp = json.loads(out)["datasets"][0]["comparisons"]["configs"]["dense"]["nDCG@10"]
    assert comp["p"] == 1.0 and not comp["significant"]
