"""Validated settings (issue 11): every number has a range, checked in one place, and every bad file,
key or value is one ConfigError line naming the file and the key. Also the rules that sit beside them:
the corpus root is never / or the home folder by accident, credentials never reach a message, and the
CLI's error boundary turns disk and database failures into one line with a hint."""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import sqlite3
from pathlib import Path

import pytest
from cli_runner import call

from ragx.config import LIMITS, ORDERED, SECTIONS, load_settings, parse_value, resolve_root
from ragx.errors import ConfigError, CorruptIndexError, NoCorpusError, RagxError, StorageError, as_ragx_error, redact

NUMBER_KEYS = [
    f"{section}.{f.name}"
    for section, cls in SECTIONS.items()
    for f in dataclasses.fields(cls)
    if f.type in (int, float, "int", "float")
]


def test_every_number_setting_has_a_range_and_the_defaults_are_inside():
    assert NUMBER_KEYS and set(NUMBER_KEYS) == set(LIMITS)
    s = load_settings(None)
    for dotted, limit in LIMITS.items():
        section, key = dotted.split(".")
        assert limit.allows(getattr(getattr(s, section), key)), dotted


def _toml(dotted: str, value) -> str:
    section, key = dotted.split(".")
    return f"[{section}]\n{key} = {value}\n"


def _outside(dotted: str) -> list:
    """Values just outside the key's range (and NaN for floats), as TOML literals."""
    limit, is_int = LIMITS[dotted], dotted in NUMBER_KEYS and _is_int(dotted)
    step = 1 if is_int else 0.5
    values = []
    if limit.low is not None:
        values.append(limit.low if limit.low_open else limit.low - step)
    if limit.high is not None:
        values.append(limit.high + step)
    values = [int(v) if is_int else float(v) for v in values]
    return values + ([] if is_int else ["nan", "inf"])


def _is_int(dotted: str) -> bool:
    section, key = dotted.split(".")
    return next(f for f in dataclasses.fields(SECTIONS[section]) if f.name == key).type in (int, "int")


@pytest.mark.parametrize("dotted", sorted(LIMITS))
def test_a_value_out_of_range_is_one_line_naming_file_and_key(dotted, tmp_path):
    for value in _outside(dotted):
        (tmp_path / "ragx.toml").write_text(_toml(dotted, value))
        with pytest.raises(ConfigError) as info:
            load_settings(tmp_path)
        message = str(info.value)
        assert str(tmp_path / "ragx.toml") in message and dotted in message and "\n" not in message, message


@pytest.mark.parametrize(
    "text, words",
    [
        ("[index]\nmax_file_bytes = -1\n", ("index.max_file_bytes", ">= 1")),
        ("[graph]\nk = 0\n", ("graph.k",)),
        ("[graph]\nk = -3\n", ("graph.k",)),
        ("[graph]\nk = 1000000\n", ("graph.k", "<= 1000")),
        ("[graph]\nk = 1e6\n", ("graph.k must be int",)),
        ("[graph]\nmin_sim = -5\n", ("graph.min_sim", ">= -1")),
        ("[chunking]\ntarget_tokens = 0\n", ("chunking.target_tokens",)),
        ("[chunking]\nmin_tokens = -5\n", ("chunking.min_tokens",)),
        ("[embeddings]\nbatch_size = 0\n", ("embeddings.batch_size",)),
        ("[chunking]\ntarget_tokens = 40\nmin_tokens = 100\n", ("chunking.min_tokens = 100 must not exceed chunking.target_tokens = 40",)),
        ("[graph]\nkk = 3\n", ("unknown config key graph.kk",)),
        ("[nope]\nx = 1\n", ("unknown config section [nope]",)),
        ("graph = 3\n", ("'graph' must be a [section] table",)),
    ],
)
def test_the_settings_of_issue_11_are_refused_naming_the_file(tmp_path, text, words):
    (tmp_path / "ragx.toml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    assert str(tmp_path / "ragx.toml") in str(info.value)
    for w in words:
        assert w in str(info.value)


def test_the_rc_file_is_named_too(tmp_path, isolated_rc):
    isolated_rc.write_text("[graph]\nk = 0\n")
    with pytest.raises(ConfigError, match=f"{isolated_rc}: graph.k"):
        load_settings(tmp_path)


def test_order_is_checked_after_merging_layers(tmp_path, isolated_rc):
    (tmp_path / "ragx.toml").write_text("[chunking]\nmin_tokens = 150\n")
    isolated_rc.write_text("[chunking]\ntarget_tokens = 100\n")
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    assert ORDERED[0][0] in str(info.value) and str(isolated_rc) in str(info.value)


def test_a_ragx_toml_that_is_not_utf8_is_one_line(tmp_path):
    (tmp_path / "ragx.toml").write_bytes(b"# caf\xe9\n[graph]\nk = 5\n")
    with pytest.raises(ConfigError, match="not valid UTF-8"):
        load_settings(tmp_path)


def test_config_set_checks_the_range_before_writing(tmp_path):
    with pytest.raises(ConfigError, match="graph.k = 0 is out of range"):
        parse_value("graph.k", "0")
    with pytest.raises(ConfigError, match="graph.min_sim"):
        parse_value("graph.min_sim", "nan")
    assert parse_value("graph.min_sim", "-1") == -1.0 and math.isclose(parse_value("search.decay", "1"), 1.0)


def test_config_get_works_while_the_config_is_broken(tmp_path, capsys):
    (tmp_path / "ragx.toml").write_text("[graph]\nkk = 3\nk = 0\nmin_sim = 0.7\n")
    code, out, err = call(capsys, "config", "get", "--root", str(tmp_path))
    assert code == 2
    assert "graph.k = 8" in out and "graph.min_sim = 0.7" in out  # the good value kept, the bad at its default
    assert "graph.kk" in err and "graph.k = 0" in err and str(tmp_path / "ragx.toml") in err
    code, out, err = call(capsys, "config", "get", "graph.min_sim", "--root", str(tmp_path), "--json")
    doc = json.loads(out)
    assert code == 2 and doc["value"] == 0.7 and len(doc["problems"]) == 2
    code, out, err = call(capsys, "status", "--root", str(tmp_path))
    assert code == 2 and err.count("\n") == 1 and "graph.kk" in err


# ---- the corpus root ----------------------------------------------------------------------------

def test_home_and_filesystem_root_are_never_an_implicit_corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NoCorpusError, match="home folder.*--root"):
        resolve_root(None)
    assert resolve_root(None, allow_broad=True) == tmp_path.resolve()
    assert resolve_root(str(tmp_path)) == tmp_path.resolve()  # asked for explicitly: allowed
    (tmp_path / "ragx.toml").write_text("")
    assert resolve_root(None) == tmp_path.resolve()  # marked as a corpus: allowed
    if not Path("/ragx.toml").exists() and not Path("/.ragx").exists():
        monkeypatch.chdir("/")
        with pytest.raises(NoCorpusError, match="filesystem root"):
            resolve_root(None)


def test_cd_home_then_status_refuses_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    code, out, err = call(capsys, "status")
    assert code == 2 and out == "" and err.count("\n") == 1 and "--root" in err


# ---- credentials and the terminal ---------------------------------------------------------------

def test_one_redaction_helper_for_every_message():
    assert redact("server http://alice:pw@host:1234/v1 failed") == "server http://***@host:1234/v1 failed"
    assert redact("https://tok@h/v1?api_key=abc&x=1") == "https://***@h/v1?api_key=***&x=1"
    assert redact("http://localhost:1234/v1") == "http://localhost:1234/v1"
    assert str(RagxError("cannot reach http://u:secret@h/v1\nsecond line")) == "cannot reach http://***@h/v1 second line"


def test_version_json_never_prints_a_password(tmp_path, capsys, monkeypatch):
    (tmp_path / "ragx.toml").write_text('[embeddings]\nbase_url = "http://alice:s3cret@h:1/v1"\n')
    monkeypatch.chdir(tmp_path)
    code, out, _ = call(capsys, "version", "--json")
    assert code == 0 and "s3cret" not in out and "***@h:1" in out


def test_control_characters_never_reach_the_terminal():
    from ragx.cli.app import visible

    assert visible("a\x1b[31mred\x07.md") == "a\\x1b[31mred\\x07.md"
    assert visible("tab\tand\nnewline") == "tab\tand\nnewline"
    assert visible("bad\udcffname") == "bad\\udcffname"


# ---- the error boundary -------------------------------------------------------------------------

@pytest.mark.parametrize(
    "exc, kind, words",
    [
        (OSError(errno.ENOSPC, "No space left on device", "/c/.ragx/gen-000002/vectors.npy"), StorageError, ("no space", "vectors.npy", "nothing indexed was lost")),
        (OSError(errno.EFBIG, "File too large", "/c/.ragx/x"), StorageError, ("ulimit -f",)),
        (OSError(errno.EROFS, "Read-only file system", "/c/.ragx/lock"), StorageError, ("read-only", ".ragx writable")),
        (PermissionError(errno.EACCES, "Permission denied", "/c/.ragx/lock"), StorageError, ("permission denied",)),
        (OSError("4672 requested and 3040 written"), StorageError, ("disk may be full",)),
        (sqlite3.DatabaseError("database disk image is malformed"), CorruptIndexError, ("damaged", "delete the .ragx folder")),
        (sqlite3.DatabaseError("file is not a database"), CorruptIndexError, ("delete the .ragx folder",)),
        (sqlite3.OperationalError("database or disk is full"), StorageError, ("no space",)),
        (sqlite3.OperationalError("attempt to write a readonly database"), StorageError, ("cannot be written",)),
        (sqlite3.OperationalError("disk I/O error"), StorageError, ("ulimit -f",)),
    ],
)
def test_disk_and_database_failures_become_one_line_with_a_hint(exc, kind, words):
    error = as_ragx_error(exc)
    assert isinstance(error, kind) and "\n" not in str(error)
    for w in words:
        assert w in str(error)


def test_anything_else_is_not_dressed_up_as_a_known_error():
    assert as_ragx_error(ValueError("x")) is None and as_ragx_error(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad")) is None


def test_an_unexpected_exception_is_one_line_not_a_traceback(capsys, monkeypatch, tmp_path):
    import ragx.api

    def boom(*a, **k):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(ragx.api.Corpus, "status", boom)
    code, out, err = call(capsys, "status", "--root", str(tmp_path))
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1 and "internal error: ZeroDivisionError" in err
    monkeypatch.setenv("RAGX_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        from ragx.cli.main import run

        run(["status", "--root", str(tmp_path)])


def test_mcp_tools_say_the_same_line_as_the_cli():
    pytest.importorskip("mcp")
    from ragx.mcp.server import _answer

    def damaged():
        raise sqlite3.DatabaseError("database disk image is malformed")

    result = _answer("status", damaged)
    assert result.is_error and result.content[0].text == str(as_ragx_error(sqlite3.DatabaseError("database disk image is malformed")))


# ---- settings that take one of a set of values --------------------------------------------------

def test_the_defaults_keep_to_the_choices():
    from ragx.config import CHOICES

    s = load_settings(None)
    for dotted, choices in CHOICES.items():
        section, key = dotted.split(".")
        assert choices.allows(getattr(getattr(s, section), key)), dotted


@pytest.mark.parametrize(
    "text, words",
    [
        ('[embeddings]\nprecision = "int4"\n', ("embeddings.precision = 'int4'", "'fp32', 'int8'")),
        ('[embeddings]\ndevice = "quantum"\n', ("embeddings.device = 'quantum'", "'cuda'")),
        ('[rerank]\ndevice = "gpu0"\n', ("rerank.device = 'gpu0'", "'cuda'")),
    ],
)
def test_a_value_outside_its_choices_is_refused_at_load_naming_file_and_key(tmp_path, capsys, text, words):
    (tmp_path / "ragx.toml").write_text(text)
    code, out, err = call(capsys, "status", "--root", str(tmp_path))
    assert code == 2 and out == "" and err.count("\n") == 1 and str(tmp_path / "ragx.toml") in err, err
    for w in words:
        assert w in err
    code, out, err = call(capsys, "config", "get", "--root", str(tmp_path))  # still shows everything, exit 2
    assert code == 2 and "ignored here" in err


def test_devices_take_a_device_number_and_the_empty_default(tmp_path, capsys):
    (tmp_path / "ragx.toml").write_text('[embeddings]\ndevice = "cuda:1"\n[rerank]\ndevice = ""\n')
    code, _, err = call(capsys, "status", "--root", str(tmp_path))
    assert code == 1, err  # not indexed; the settings load
