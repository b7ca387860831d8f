import dataclasses
import json
import tomllib

import pytest
from cli_runner import call

from ragx.config import (
    DEFAULTS_PATH,
    SECTIONS,
    find_root,
    load_settings,
    parse_value,
    set_value,
)
from ragx.errors import ConfigError


def test_defaults_file_covers_the_schema_exactly():
    doc = tomllib.loads(DEFAULTS_PATH.read_text())
    for section, cls in SECTIONS.items():
        assert set(doc.get(section, {})) >= {f.name for f in dataclasses.fields(cls)}, section
    load_settings(None)  # and every value has the right type


def test_precedence_defaults_project_rc_with_warning(tmp_path, isolated_rc, capsys):
    (tmp_path / "ragx.toml").write_text("[graph]\nk = 5\nmin_sim = 0.6\n[embeddings]\nbatch_size = 8\n")
    isolated_rc.write_text("[graph]\nk = 12\n")
    s = load_settings(tmp_path)
    assert (s.graph.k, s.graph.min_sim, s.embeddings.batch_size, s.chunking.target_tokens) == (12, 0.6, 8, 200)
    assert s.sources["graph.k"] == str(isolated_rc)
    assert s.sources["graph.min_sim"] == str(tmp_path / "ragx.toml")
    err = capsys.readouterr().err
    assert "overrides graph.k" in err and err.count("warning") == 1


@pytest.mark.parametrize(
    "text, message",
    [
        ("[graph]\nkk = 3\n", "unknown config key graph.kk"),
        ("[nope]\nx = 1\n", "unknown config section [nope]"),
        ("[graph]\nk = 'eight'\n", "graph.k must be int"),
        ("[graph\nk = 1\n", "malformed TOML"),
        ("[index]\ninclude = 'x'\n", "must be a list of strings"),
    ],
)
def test_bad_project_config_is_one_clear_error(tmp_path, text, message):
    (tmp_path / "ragx.toml").write_text(text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        load_settings(tmp_path)


def test_set_keeps_comments_and_types(tmp_path):
    path = tmp_path / "ragx.toml"
    path.write_text("# mine\n[graph]\nk = 5 # five\n")
    set_value(path, "graph.min_sim", parse_value("graph.min_sim", "0.7"))
    set_value(path, "index.exclude", parse_value("index.exclude", "*.log, build/"))
    text = path.read_text()
    assert "# mine" in text and "# five" in text
    s = load_settings(tmp_path)
    assert s.graph.min_sim == 0.7 and s.index.exclude == ("*.log", "build/")
    with pytest.raises(ConfigError):
        parse_value("graph.k", "many")


@pytest.mark.parametrize("typed, stored", [
    ('"query: "', "query: "),          # as `ragx config get` lists a string: read as TOML, quotes gone
    ("'query: '", "query: "),
    ('"a \\"b\\""', 'a "b"'),        # TOML escapes
    ("query: ", "query: "),            # bare text is the string itself
    ('say "hi"', 'say "hi"'),          # quotes inside bare text stay
    ('"unclosed', '"unclosed'),
])
def test_a_string_value_may_be_written_bare_or_as_toml(typed, stored):
    assert parse_value("embeddings.query_prefix", typed) == stored


def test_root_is_found_walking_up(tmp_path, monkeypatch):
    (tmp_path / "ragx.toml").write_text("")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert find_root() == tmp_path


# ---- `ragx config set` checks the settings as they would load after the write -------------------

def _one_error_line(err: str) -> bool:
    return err.startswith("ragx: error: ") and err.count("\n") == 1


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("chunking.min_tokens", "500", ("chunking.min_tokens = 500 must not exceed chunking.target_tokens = 200",)),
        ("chunking.target_tokens", "10", ("chunking.min_tokens = 48 must not exceed chunking.target_tokens = 10",)),
    ],
)
def test_config_set_refuses_a_value_every_command_would_then_refuse(tmp_path, capsys, key, value, words):
    code, _, err = call(capsys, "config", "set", key, value, "--root", str(tmp_path))
    assert code == 2 and _one_error_line(err), err
    assert all(w in err for w in words) and "nothing written" in err
    assert not (tmp_path / "ragx.toml").exists()
    code, _, err = call(capsys, "status", "--root", str(tmp_path))
    assert code == 1, err  # not indexed, but the settings load


def test_choosing_another_bm25_formula_warns_that_the_evidence_thresholds_were_calibrated_under_fts5(tmp_path, capsys):
    code, _, err = call(capsys, "config", "set", "search.bm25_variant", "bm25+", "--root", str(tmp_path))
    assert code == 0 and "ragx: warning:" in err and "calibrated with bm25_variant = 'fts5'" in err
    assert "--bm25-variant bm25+" in err and 'bm25_variant = "bm25+"' in (tmp_path / "ragx.toml").read_text()
    code, _, err = call(capsys, "config", "set", "search.bm25_variant", "fts5", "--root", str(tmp_path))
    assert code == 0 and "warning" not in err
    code, _, err = call(capsys, "config", "set", "search.bm25_variant", "okapi", "--root", str(tmp_path))
    assert code == 2 and _one_error_line(err) and "'okapi' is not allowed" in err
    assert 'bm25_variant = "fts5"' in (tmp_path / "ragx.toml").read_text()


def test_config_set_checks_the_order_across_the_layers_and_leaves_the_file_as_it_was(tmp_path, isolated_rc, capsys):
    project = tmp_path / "ragx.toml"
    project.write_text("# ours\n[chunking]\ntarget_tokens = 300\n")
    before = project.read_bytes()
    isolated_rc.write_text("[chunking]\ntarget_tokens = 100\n")  # the rc wins over ragx.toml
    code, _, err = call(capsys, "config", "set", "chunking.min_tokens", "150", "--root", str(tmp_path))
    assert code == 2 and _one_error_line(err) and str(isolated_rc) in err and "target_tokens = 100" in err, err
    assert project.read_bytes() == before
    # --global is checked with the corpus it runs in: its ragx.toml's min_tokens against the new rc value
    project.write_text("[chunking]\nmin_tokens = 150\ntarget_tokens = 300\n")
    isolated_rc.write_text("")
    code, _, err = call(capsys, "config", "set", "chunking.target_tokens", "100", "--global", "--root", str(tmp_path))
    assert code == 2 and _one_error_line(err) and "min_tokens = 150" in err and str(project) in err, err
    assert isolated_rc.read_text() == ""
    # In an order that keeps every step valid, both values go in, and every command reads them.
    code, _, err = call(capsys, "config", "set", "chunking.target_tokens", "1000", "--root", str(tmp_path))
    assert code == 0, err
    code, _, err = call(capsys, "config", "set", "chunking.min_tokens", "500", "--root", str(tmp_path))
    assert code == 0, err
    s = load_settings(tmp_path)
    assert (s.chunking.min_tokens, s.chunking.target_tokens) == (500, 1000)


def test_config_set_rewrites_the_file_in_one_step_keeping_its_mode_and_symlink(tmp_path, isolated_rc, monkeypatch, capsys):
    real = tmp_path / "dotfiles" / "ragxrc"
    real.parent.mkdir()
    real.write_text("# mine\n[graph]\nk = 5\n")
    real.chmod(0o600)
    link = tmp_path / "ragxrc-link"
    link.symlink_to(real)
    monkeypatch.setenv("RAGX_RC", str(link))
    code, _, err = call(capsys, "config", "set", "graph.min_sim", "0.7", "--global", "--root", str(tmp_path))
    assert code == 0, err
    assert link.is_symlink() and "# mine" in real.read_text() and "min_sim = 0.7" in real.read_text()
    assert real.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in real.parent.iterdir()) == ["ragxrc"]  # no temporary file left


@pytest.mark.parametrize(
    "key, value, allowed",
    [
        ("embeddings.engine", "bogus", "'embedded', 'openai', 'sentence-transformers'"),
        ("embeddings.precision", "int4", "'fp32', 'int8'"),
        ("embeddings.device", "quantum", "'cpu', 'cuda'"),
        ("rerank.device", "cuda:x", "'cpu', 'cuda'"),
    ],
)
def test_config_set_refuses_a_value_outside_the_key_s_choices(tmp_path, capsys, key, value, allowed):
    code, _, err = call(capsys, "config", "set", key, value, "--root", str(tmp_path))
    assert code == 2 and _one_error_line(err) and key in err and repr(value) in err and allowed in err, err
    assert not (tmp_path / "ragx.toml").exists()


@pytest.mark.parametrize(
    "key, value",
    [
        ("embeddings.engine", "sentence-transformers"),
        ("embeddings.precision", "int8"),
        ("embeddings.device", "cuda:1"),
        ("embeddings.device", ""),
        ("rerank.device", "mps"),
    ],
)
def test_config_set_takes_each_allowed_value(tmp_path, capsys, key, value):
    code, _, err = call(capsys, "config", "set", key, value, "--root", str(tmp_path))
    assert code == 0, err
    section, name = key.split(".")
    assert getattr(getattr(load_settings(tmp_path), section), name) == value


def test_an_engine_registered_at_run_time_can_be_set(tmp_path, capsys, monkeypatch):
    import ragx.config as config
    import ragx.models.registry as registry

    monkeypatch.setattr(registry, "_ENGINES", dict(registry._ENGINES))
    monkeypatch.setattr(config, "_ENGINE_NAMES", set(config._ENGINE_NAMES))
    registry.register_engine("my-plugin", lambda model, **opts: None)
    code, _, err = call(capsys, "config", "set", "embeddings.engine", "my-plugin", "--root", str(tmp_path))
    assert code == 0, err
    monkeypatch.delitem(registry._ENGINES, "my-plugin")
    config._ENGINE_NAMES.discard("my-plugin")  # a process that never registered it
    # A process that did not register it still reads the corpus's settings (status, config get); a
    # command that embeds refuses the engine when it builds it.
    code, out, err = call(capsys, "config", "get", "embeddings.engine", "--root", str(tmp_path))
    assert code == 0 and out.strip() == "my-plugin", err


@pytest.mark.parametrize("value, stored", [("-0.2", -0.2), ("-1", -1.0), ("-1e-1", -0.1), ("-0", 0.0)])
def test_config_set_takes_a_negative_number(tmp_path, capsys, value, stored):
    code, _, err = call(capsys, "config", "set", "graph.min_sim", value, "--root", str(tmp_path))
    assert code == 0, err
    assert load_settings(tmp_path).graph.min_sim == stored
    code, _, err = call(capsys, "config", "set", "search.query_floor", value, "--global")
    assert code == 0, err


@pytest.mark.parametrize("value", ["-5", "-inf", "-nan"])
def test_a_negative_number_out_of_range_is_refused_by_the_range_check(tmp_path, capsys, value):
    code, _, err = call(capsys, "config", "set", "graph.min_sim", value, "--root", str(tmp_path))
    assert code == 2 and _one_error_line(err) and "graph.min_sim" in err and "out of range" in err, err
    assert not (tmp_path / "ragx.toml").exists()
    code, _, err = call(capsys, "config", "set", "graph.min_sim", value, "--bogus", "--root", str(tmp_path))
    assert code == 2 and _one_error_line(err), err  # an unknown option is still no value


def test_config_set_warns_when_the_rc_overrides_the_value_it_wrote(tmp_path, isolated_rc, capsys):
    isolated_rc.write_text("[graph]\nk = 12\n")
    code, _, err = call(capsys, "config", "set", "graph.k", "5", "--root", str(tmp_path))
    assert code == 0 and "k = 5" in (tmp_path / "ragx.toml").read_text()
    assert "warning" in err and str(isolated_rc) in err and "overrides" in err, err


def test_config_commands_load_no_model_library(tmp_path):
    """`ragx config` checks engines, precisions and devices without importing numpy, onnxruntime or torch."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    report = tmp_path / "modules.json"
    code = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: json.dump(sorted(sys.modules), open({str(report)!r}, 'w')))\n"
        "from ragx.cli.main import run\n"
        f"run(['config', 'set', {{0!r}}, {{1!r}}, '--root', {str(tmp_path)!r}])\n"
    )
    env = dict(os.environ, RAGX_RC=str(tmp_path / "rc"), PYTHONPATH=str(Path(__file__).parent))
    for key, value in [("embeddings.engine", "openai"), ("embeddings.precision", "int8"), ("embeddings.device", "cuda"),
                       ("rerank.device", "bogus")]:
        done = subprocess.run([sys.executable, "-c", code.format(key, value)], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == (2 if value == "bogus" else 0), done.stderr
        loaded = json.loads(report.read_text())
        heavy = [m for m in loaded if m.split(".")[0] in ("torch", "onnxruntime", "transformers") or m == "numpy._core"]
        assert heavy == [], (key, heavy)
