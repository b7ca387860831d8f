"""lab promote writes defaults.toml through tomlkit; "the defaults" are config.load_settings's; old weight names still read."""

from __future__ import annotations

import tomllib

from ragx.config import DEFAULTS_PATH, load_settings

from lab.promote import current_defaults, write_defaults


def test_rewriting_the_same_search_table_leaves_the_file_byte_identical(tmp_path):
    path = tmp_path / "defaults.toml"
    text = DEFAULTS_PATH.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    provenance = [line[2:] for line in text.split("[search]\n")[1].splitlines() if line.startswith("# ")][2:]
    write_defaults(current_defaults(), provenance, path)
    assert path.read_text(encoding="utf-8") == text


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


def test_the_defaults_in_force_come_from_load_settings_even_with_an_rc_search_section(isolated_rc):
    isolated_rc.write_text("[search]\ndecay = 0.125\n", encoding="utf-8")
    assert current_defaults() == load_settings(None, warn=False).search
    assert current_defaults().decay == 0.125


def test_old_weight_names_are_still_read_with_a_warning(tmp_path, isolated_rc, capsys):
    (tmp_path / "ragx.toml").write_text("[search]\nalpha = 0.25\ndelta = 0.125\n", encoding="utf-8")
    isolated_rc.write_text("[search]\nbeta = 0.5\n", encoding="utf-8")
    s = load_settings(tmp_path).search
    assert (s.rerank_weight, s.lexical_weight, s.heat_weight) == (0.25, 0.125, 0.5)
    err = capsys.readouterr().err
    assert "search.alpha is deprecated, read as search.rerank_weight" in err and "search.beta" in err
