import dataclasses
import tomllib

import pytest

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


def test_root_is_found_walking_up(tmp_path, monkeypatch):
    (tmp_path / "ragx.toml").write_text("")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert find_root() == tmp_path
