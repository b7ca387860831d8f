"""lab promote writes defaults.toml through tomlkit; "the defaults" are config.load_settings's; old weight names still read."""

from __future__ import annotations

import dataclasses
import json
import random
import tomllib

import pytest
from cli_runner import call
from fakes import TOPICS, beir_folder

from lab.promote import current_defaults, eval_heldout, hybrid_spec, pin_unswept, spec_of, write_baseline_of, write_defaults
from ragx.config import DEFAULTS_PATH, load_settings
from ragx.eval.gate import check, read_baseline
from ragx.eval.presets import parse_config


def test_rewriting_the_same_search_table_leaves_the_file_byte_identical(tmp_path):
    path = tmp_path / "defaults.toml"
    path.write_text(DEFAULTS_PATH.read_text(encoding="utf-8"), encoding="utf-8")
    write_defaults(current_defaults(), ["promoted in a test"], path)
    once = path.read_text(encoding="utf-8")
    write_defaults(current_defaults(), ["promoted in a test"], path)
    assert path.read_text(encoding="utf-8") == once


def test_a_promotion_keeps_every_comment_of_the_defaults(tmp_path):
    """tomlkit round trip: every comment line of defaults.toml (the 20-odd lines explaining the search
    settings included) is still there, in order, after two promotions; only the provenance block changes."""
    path = tmp_path / "defaults.toml"
    text = DEFAULTS_PATH.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    write_defaults(current_defaults().replace(decay=0.25), ["first promotion"], path)
    write_defaults(current_defaults().replace(decay=0.3, hops=1), ["second promotion", "with two lines"], path)
    comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    after = path.read_text(encoding="utf-8").splitlines()
    kept = [line for line in after if line.lstrip().startswith("#") and "promotion" not in line and line != "# with two lines"]
    assert kept == comments and len([c for c in comments if c.startswith("# ")]) > 20
    assert "# second promotion" in after and "# first promotion" not in after


def test_a_promotion_changes_only_the_search_table(tmp_path):
    path = tmp_path / "defaults.toml"
    path.write_text(DEFAULTS_PATH.read_text(encoding="utf-8"), encoding="utf-8")
    new = current_defaults().replace(decay=0.25, hops=2)
    write_defaults(new, ["promoted in a test"], path)
    write_defaults(new.replace(decay=0.3), ["promoted again"], path)
    before, after = tomllib.loads(DEFAULTS_PATH.read_text(encoding="utf-8")), tomllib.loads(path.read_text(encoding="utf-8"))
    assert {k: v for k, v in before.items() if k != "search"} == {k: v for k, v in after.items() if k != "search"}
    assert after["search"] == {**before["search"], "decay": 0.3, "hops": 2}
    text = path.read_text(encoding="utf-8")
    assert "promoted again" in text and "promoted in a test" not in text and text.count("\n[search]\n") == 1


def test_the_defaults_a_promotion_replaces_are_the_shipped_ones_even_with_an_rc_search_section(isolated_rc):
    """An rc [search] is one machine's preference: the lab's "current defaults" are defaults.toml's,
    and the rc's other tables (the [rerank] model a rerank study needs) still hold inside the lab."""
    from lab.configs import package_search_defaults

    shipped = tomllib.loads(DEFAULTS_PATH.read_text(encoding="utf-8"))["search"]
    isolated_rc.write_text("[search]\ndecay = 0.125\nlink_weight = 0.2\n\n[rerank]\nmodel = \"some/model\"\n", encoding="utf-8")
    assert load_settings(None, warn=False).search.link_weight == 0.2  # ragx itself still reads it
    assert {k: getattr(current_defaults(), k) for k in shipped} == shipped
    with package_search_defaults():
        assert load_settings(None, warn=False).search == current_defaults()
        assert load_settings(None, warn=False).rerank.model == "some/model"
    assert load_settings(None, warn=False).search.decay == 0.125  # RAGX_RC restored afterwards


def test_a_promotion_writes_the_shipped_defaults_plus_the_winner_never_the_rc_search(tmp_path, isolated_rc, monkeypatch):
    """With link_weight 0.2 in the rc, a promoted winner (dense_weight swept) is written with defaults.toml's
    link_weight, and the held-out `ragx eval` runs see the shipped defaults too."""
    import optuna
    import pytest

    import lab.promote as promote_module
    from lab.configs import compose
    from lab.sweep import storage_url

    shipped = tomllib.loads(DEFAULTS_PATH.read_text(encoding="utf-8"))["search"]
    isolated_rc.write_text("[search]\nlink_weight = 0.2\n", encoding="utf-8")
    cfg = compose([f"cache_root={tmp_path / 'cache'}", "optuna.study_name=winner", "promote.heldout=[{dataset:notes,split:test}]"])
    study = optuna.create_study(study_name="winner", storage=storage_url(None, tmp_path / "cache"), direction="maximize")
    study.add_trial(optuna.trial.create_trial(params={"dense_weight": 0.5}, value=0.9, user_attrs={"nDCG@10": 0.9},
                                              distributions={"dense_weight": optuna.distributions.FloatDistribution(0.0, 1.0)}))
    seen = []

    def fake_eval(dataset, split, configs, reference=None, command=""):
        seen.append(load_settings(None, warn=False).search.link_weight)
        same = {"nDCG@10": 0.5, "R@100": 0.5}
        return {"files": {"means": {"current": same, "candidate": same}},
                "comparisons": {"configs": {"current": {"nDCG@10": {"diff": 0.0, "p": 1.0}}}}}

    written = []
    monkeypatch.setattr(promote_module, "eval_heldout", fake_eval)
    monkeypatch.setattr(promote_module, "dataset_config", lambda cfg, name: {"name": name})
    monkeypatch.setattr(promote_module, "write_defaults", lambda params, provenance, path: written.append(params))
    defaults = tmp_path / "defaults.toml"
    defaults.write_text(DEFAULTS_PATH.read_text(encoding="utf-8"), encoding="utf-8")
    cfg.promote.force = True  # the fake check has no per-query figures: no power to speak of
    assert promote_module.promote(cfg, tmp_path, defaults_path=defaults) == 0
    assert seen == [shipped["link_weight"]] and len(written) == 1
    assert written[0].link_weight == shipped["link_weight"] != 0.2
    assert written[0].dense_weight == pytest.approx(0.5)
    assert {k: v for k, v in dataclasses.asdict(written[0]).items() if k != "dense_weight"} == {k: v for k, v in shipped.items() if k != "dense_weight"}


def test_old_weight_names_are_still_read_with_a_warning(tmp_path, isolated_rc, capsys):
    (tmp_path / "ragx.toml").write_text("[search]\nalpha = 0.25\ndelta = 0.125\n", encoding="utf-8")
    isolated_rc.write_text("[search]\nbeta = 0.5\n", encoding="utf-8")
    s = load_settings(tmp_path).search
    assert (s.rerank_weight, s.lexical_weight, s.heat_weight) == (0.25, 0.125, 0.5)
    err = capsys.readouterr().err
    assert "search.alpha is deprecated, read as search.rerank_weight" in err and "search.beta" in err


def test_the_held_out_check_is_ragx_eval_run_in_process(tmp_path, capsys, monkeypatch, fake_model):
    """Promotion judges a winner with exactly what `ragx eval beir` prints (no subprocess, same floats),
    and the baseline it rewrites is one the gate then passes."""
    monkeypatch.setenv("RAGX_CACHE_DIR", str(tmp_path / "cache"))
    rng = random.Random(3)
    words = {f"{t}{i}": " ".join(rng.choice(TOPICS[t].split()) for _ in range(30)) for t in ("astronomy", "sailing") for i in range(6)}
    data = beir_folder(tmp_path / "tiny", words)
    configs = {"current": "graph", "candidate": "graph,decay=0.2,hops=1"}
    doc = eval_heldout({"data_dir": str(data)}, "test", configs, command="python -m lab promote sweep=fusion")
    code, out, _ = call(capsys, "eval", "beir", str(data), "--split", "test", "--json", *[a for n, sp in configs.items() for a in ("-c", f"{n}={sp}")])
    assert code in (0, 1)
    assert doc["files"]["means"] == json.loads(out)["datasets"][0]["files"]["means"]
    baseline = tmp_path / "base" / "tiny-test.json"
    baseline.parent.mkdir()
    write_baseline_of(doc, baseline, tmp_path / "reports")
    assert check(read_baseline(baseline), doc["files"]["means"], None).passed
    assert (tmp_path / "reports" / "tiny-test.md").exists()
    # the baseline and report say how to reproduce them: the promotion as typed, overrides included
    assert json.loads(baseline.read_text())["command"] == "python -m lab promote sweep=fusion"
    assert "python -m lab promote sweep=fusion" in (tmp_path / "reports" / "tiny-test.md").read_text()



def test_rerank_knobs_are_promoted_only_when_the_study_swept_them():
    old = load_settings(None).search.replace(rerank_weight=0.5, shortlist=100, top=10)
    trial = old.replace(rerank_weight=1.25, shortlist=30, top=3, dense_weight=0.7)
    assert pin_unswept(trial, old, {"dense_weight": 0.7}) == old.replace(dense_weight=0.7)  # a sweep without a reranker
    swept = pin_unswept(trial, old, {"dense_weight": 0.7, "rerank_weight": 1.25, "shortlist": 30, "top": 3})
    assert (swept.rerank_weight, swept.shortlist, swept.top) == (1.25, 30, 10)  # top is never swept
    # The `default` preset turns rerank off: after a rerank study both sides name their weight.
    assert spec_of(old, old, reranked=True) == "default,rerank_weight=0.5"
    assert spec_of(swept, old, reranked=True) == "default,rerank_weight=1.25,dense_weight=0.7,shortlist=30"
    assert spec_of(old.replace(dense_weight=0.7), old) == "default,dense_weight=0.7"  # other studies: as before


def test_the_held_out_sides_are_the_pipelines_ragx_query_would_run():
    """`current` is the shipped pipeline as configured (graph off by default: the `graph` preset would
    have turned it on for both sides), and the hybrid gets the winner's very seeds, or, for a winner
    with a graph stage, as many candidates as it can admit."""
    old = load_settings(None).search.replace(rerank_weight=0.0)
    assert old.hops == 0
    assert parse_config("current=" + spec_of(old, old), old).params == old
    wider = old.replace(dense_n=60, lexical_n=40)
    hybrid = parse_config("hybrid=" + hybrid_spec(wider), old)
    assert (hybrid.params.dense_n, hybrid.params.lexical_n, hybrid.params.hops, hybrid.budget) == (60, 40, 0, None)
    assert hybrid.params.anchor_dense == 0 and hybrid.params.anchor_lexical == 0
    graph = old.replace(hops=2, max_frontier=50)
    assert parse_config("hybrid=" + hybrid_spec(graph), old).budget == graph.dense_n + graph.lexical_n + 2 * 50


# A promotion in its own process, on a scratch repository, with a fake held-out check whose candidate
# gains `gain` on each of `n` queries (noise sd 0.2); argv: repo, optuna URL, n, gain, force.
PROMOTE = '''
import json, sys
from pathlib import Path
import numpy as np, optuna
import lab.promote as pm
from lab.configs import compose
repo, url, n, gain, force = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(0)
cur = rng.uniform(0.2, 0.8, n)
new = cur + gain + rng.normal(0, 0.2, n)
def fake_eval(dataset, split, configs, reference=None, command=""):
    if configs is None:  # a baseline under the (staged) new defaults
        return {"dataset": "tiny", "split": split, "command": command, "files": {"means": {"default": {"nDCG@10": 0.6}}}}
    means = {"current": {"nDCG@10": float(cur.mean()), "R@100": 0.9}, "candidate": {"nDCG@10": float(new.mean()), "R@100": 0.9}}
    per_query = {"current": {f"q{i}": {"nDCG@10": float(v)} for i, v in enumerate(cur)},
                 "candidate": {f"q{i}": {"nDCG@10": float(v)} for i, v in enumerate(new)}}
    return {"files": {"means": means, "per_query": per_query}, "comparisons": {"configs": {"current": {"nDCG@10": {"diff": -gain, "p": 0.01}}}}}
def fake_baseline(doc, baseline, reports):
    baseline.parent.mkdir(parents=True, exist_ok=True)
    baseline.write_text(json.dumps({"dataset": "tiny", "split": "test", "new": True}))
    reports.mkdir(parents=True, exist_ok=True)
    (reports / "tiny-test.md").write_text("new report")
pm.eval_heldout, pm.write_baseline_of = fake_eval, fake_baseline
pm.dataset_config = lambda cfg, name: {"name": name}
cfg = compose([f"cache_root={repo / 'cache'}", f"optuna.storage={url}", "optuna.study_name=winner",
               "promote.heldout=[{dataset:tiny,split:test}]", f"promote.force={force}"])
sys.exit(pm.promote(cfg, repo, defaults_path=repo / "defaults.toml"))
'''


def scratch_repo(tmp_path):
    import optuna

    from lab.sweep import storage_url

    repo = tmp_path / "repo"
    (repo / "reports" / "baselines").mkdir(parents=True)
    (repo / "configs" / "dataset").mkdir(parents=True)
    (repo / "configs" / "dataset" / "tiny.yaml").write_text("name: tiny\n")
    (repo / "reports" / "baselines" / "tiny-test.json").write_text('{"dataset": "tiny", "split": "test", "old": true}')
    (repo / "reports" / "tiny-test.md").write_text("old report")
    (repo / "defaults.toml").write_text(DEFAULTS_PATH.read_text(encoding="utf-8"), encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    study = optuna.create_study(study_name="winner", storage=storage_url(url, tmp_path), direction="maximize")
    study.set_user_attr("defaults_value", 0.50)
    study.add_trial(optuna.trial.create_trial(params={"dense_weight": 0.25}, value=0.55, user_attrs={"nDCG@10": 0.55},
                                              distributions={"dense_weight": optuna.distributions.FloatDistribution(0.0, 1.0)}))
    (tmp_path / "promote.py").write_text(PROMOTE)
    return repo, url


def state_of(repo) -> dict:
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*")) if p.is_file() and "cache" not in p.parts}


def run_promote(tmp_path, repo, url, n, gain, force="false", hold=""):
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent), "RAGX_LAB_HOLD": hold}
    args = [sys.executable, str(tmp_path / "promote.py"), str(repo), url, str(n), str(gain), force]
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_an_underpowered_held_out_check_is_refused_with_its_power(tmp_path):
    repo, url = scratch_repo(tmp_path)
    before = state_of(repo)
    small = run_promote(tmp_path, repo, url, 40, 0.05)
    out, _ = small.communicate(timeout=300)
    assert small.returncode == 1, out
    line = next(x for x in out.splitlines() if x.startswith("lab promote: power "))
    assert "to detect +0.0500 (the study's gain on its training data) over 40 held-out queries" in line
    assert float(line.split()[3]) < 0.8 and "too small to detect" in out
    assert state_of(repo) == before
    forced = run_promote(tmp_path, repo, url, 40, 0.05, force="true")
    assert forced.wait(timeout=300) == 0 and state_of(repo) != before


@pytest.mark.parametrize("step", ["heldout", "staged-defaults", "baseline", "journal", "swap"])
def test_a_promotion_killed_at_any_step_leaves_the_old_state(tmp_path, step):
    import os
    import signal

    from lab.swap import exclusive, recover, staging_root

    repo, url = scratch_repo(tmp_path)
    before = state_of(repo)
    proc = run_promote(tmp_path, repo, url, 2000, 0.05, hold=f"{step}:120")
    assert proc.stderr is not None
    line = ""
    while not line.startswith("lab: holding at") and proc.poll() is None:
        line = proc.stderr.readline()
    assert line.startswith(f"lab: holding at {step}"), line
    with exclusive(staging_root(repo)) as free:
        assert not free  # a live promotion holds the lock: no other lab command rolls its swap back
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with exclusive(staging_root(repo)) as free:  # what the next `python -m lab` command does first
        assert free
        recover(staging_root(repo))
    assert state_of(repo) == before
    done = run_promote(tmp_path, repo, url, 2000, 0.05)
    out, err = done.communicate(timeout=300)
    assert done.returncode == 0, out + err
    after = state_of(repo)
    assert after["reports/tiny-test.md"] == b"new report" and b'"new": true' in after["reports/baselines/tiny-test.json"]
    assert b"dense_weight = 0.25" in after["defaults.toml"]
