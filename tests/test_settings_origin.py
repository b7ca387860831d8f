"""Settings errors name the file and the key, in one line, exit 2 (issue 42: `engine = "nope"` and
`model = ""` named neither)."""

from __future__ import annotations

import pytest
from cli_runner import call


@pytest.mark.parametrize("toml, key", [
    ('[embeddings]\nengine = "nope"\n', "embeddings.engine = 'nope'"),
    ('[embeddings]\nmodel = ""\n', "embeddings.model = ''"),
    ('[embeddings]\nmodel = "   "\n', "embeddings.model = '"),
])
@pytest.mark.parametrize("command", [("index",), ("query", "wings")])
def test_a_bad_engine_or_empty_model_names_file_and_key(tmp_path, capsys, fake_model, toml, key, command):
    (tmp_path / "a.md").write_text("# wings\n\npressure on wings\n")
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0  # the query then finds an index
    (tmp_path / "ragx.toml").write_text(toml)
    code, _, err = call(capsys, *command, "--root", str(tmp_path))
    lines = [line for line in err.splitlines() if line.startswith("ragx: error:")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert str(tmp_path / "ragx.toml") in lines[0] and key in lines[0], lines[0]
