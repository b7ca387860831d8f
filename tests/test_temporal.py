"""File dates (frontmatter, git, mtime), --since/--until/--recent/--oldest, and `stale` in results.

The git repository is built here, with a commit date per file set through GIT_COMMITTER_DATE.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from cli_runner import call

from ragx.index.dates import FIRST_SECOND, frontmatter_date, frontmatter_value, git_dates, iso, parse_date, parse_git_log

BODY = "The harbour log: boats, tides, moorings and the keel of the old ketch were checked again."


pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake


def git(root, *args, when=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    if when:
        env |= {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


@pytest.fixture
def repo(tmp_path, capsys):
    git(tmp_path, "init", "-q")
    for name, when in [("log-2019.md", "2019-03-01T10:00:00+00:00"), ("log-2021.md", "2021-06-15T10:00:00+00:00"),
                       ("log-2024.md", "2024-01-20T10:00:00+00:00")]:
        (tmp_path / name).write_text(f"# {name}\n\n{BODY} {name}\n", encoding="utf-8")
        git(tmp_path, "add", name)
        git(tmp_path, "commit", "-q", "-m", name, when=when)
    # Committed in 2024 too, but its frontmatter says when its content was last updated.
    (tmp_path / "front.md").write_text(f"---\ntitle: x\nupdated: 2020-02-02\n---\n\n# front\n\n{BODY} front\n", encoding="utf-8")
    git(tmp_path, "add", "front.md")
    git(tmp_path, "commit", "-q", "-m", "front", when="2024-05-05T10:00:00+00:00")
    (tmp_path / "untracked.md").write_text(f"# untracked\n\n{BODY} untracked\n", encoding="utf-8")
    os.utime(tmp_path / "untracked.md", (1_600_000_000, 1_600_000_000))  # 2020-09-13
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    return tmp_path


def results(capsys, root, *extra):
    code, out, err = call(capsys, "query", "harbour log boats tides keel", "--root", str(root), "--json", "--files-only", *extra)
    return code, (json.loads(out) if out else None), err


def test_each_result_says_its_date_and_where_it_came_from(repo, capsys):
    code, doc, _ = results(capsys, repo)
    assert code == 0
    by_file = {r["file"]: (r["date"], r["date_source"]) for r in doc["results"]}
    assert by_file == {
        "log-2019.md": ("2019-03-01T10:00:00Z", "git"),
        "log-2021.md": ("2021-06-15T10:00:00Z", "git"),
        "log-2024.md": ("2024-01-20T10:00:00Z", "git"),
        "front.md": ("2020-02-02T00:00:00Z", "frontmatter"),
        "untracked.md": ("2020-09-13T12:26:40Z", "mtime"),
    }
    assert all(r["stale"] is False for r in doc["results"])


def test_since_and_until_filter_by_file_date(repo, capsys):
    _, doc, _ = results(capsys, repo, "--since", "2020-06-01")
    assert {r["file"] for r in doc["results"]} == {"log-2021.md", "log-2024.md", "untracked.md"}
    assert doc["time"]["since"] == "2020-06-01T00:00:00Z" and doc["params"]["top"] == 10
    _, doc, _ = results(capsys, repo, "--since", "2020-01-01", "--until", "2021-06-15")
    assert {r["file"] for r in doc["results"]} == {"front.md", "untracked.md", "log-2021.md"}  # the whole last day counts
    _, compact, _ = results(capsys, repo, "--since", "20200101", "--until", "20210615")  # however the day is written
    assert {r["file"] for r in compact["results"]} == {r["file"] for r in doc["results"]} and compact["time"] == doc["time"]
    code, doc, _ = results(capsys, repo, "--since", "2030-01-01")
    assert code == 1 and doc["results"] == []
    assert doc["time"]["reason"] == f"no result's file is dated on or after 2030-01-01 - {doc['time']['candidates']} found before it"
    code, doc, _ = results(capsys, repo, "--since", "2019-01-01", "--until", "2019-01-31")
    n = doc["time"]["candidates"]
    assert code == 1 and doc["time"]["reason"] == f"no result's file is dated between 2019-01-01 and 2019-01-31 - {n} found outside it"
    code, out, _ = call(capsys, "query", "harbour log boats tides keel", "--root", str(repo), "--since", "2019-01-01", "--until", "2019-01-31")
    assert code == 1 and f"no result's file is dated between 2019-01-01 and 2019-01-31 - {n} found outside it" in out


def test_a_cut_off_within_a_day_is_reported_with_its_time_and_early_years_with_four_digits(repo, capsys):
    code, doc, _ = results(capsys, repo, "--since", "2030-01-01T09:30")
    assert code == 1 and doc["time"]["reason"].startswith("no result's file is dated on or after 2030-01-01T09:30:00Z - ")
    code, doc, _ = results(capsys, repo, "--since", "0001-01-01", "--until", "0999-12-31")
    assert code == 1 and doc["time"]["since"] == "0001-01-01T00:00:00Z"
    assert doc["time"]["reason"].startswith("no result's file is dated between 0001-01-01 and 0999-12-31 - ")


def test_until_alone_says_the_results_lie_after_it(repo, capsys):
    code, doc, _ = results(capsys, repo, "--until", "2000-01-01")
    n = doc["time"]["candidates"]
    assert code == 1 and doc["results"] == [] and n == 5
    assert doc["time"]["reason"] == "no result's file is dated on or before 2000-01-01 - 5 found after it"
    code, out, _ = call(capsys, "query", "harbour log boats tides keel", "--root", str(repo), "--until", "2000-01-01")
    assert code == 1 and "no result's file is dated on or before 2000-01-01 - 5 found after it" in " ".join(out.split())
    assert "before it" not in out


def test_dendron_epoch_milliseconds_date_a_note_and_filter_it(tmp_path, capsys):
    """Dendron writes `updated:`/`created:` as integer milliseconds since the epoch (UTC)."""
    notes = {
        "dendron.md": "---\nid: ChcCM1Q2qrDTy7YnLUHiL\ntitle: Harbour\ndesc: ''\nupdated: 1670254035385\ncreated: 1639113925844\n---\n\n",
        "quoted.md": "---\nupdated: '1600000000000'\n---\n\n",  # 2020-09-13T12:26:40Z
        "absurd.md": "---\nupdated: 99999999999999999\n---\n\n",  # past 9999 either way: unparseable, like `soon`
    }
    for name, head in notes.items():
        (tmp_path / name).write_text(f"{head}# {name}\n\n{BODY} {name}\n", encoding="utf-8")
        os.utime(tmp_path / name, (1_700_000_000, 1_700_000_000))  # 2023-11-14: what the mtime would say
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    _, doc, _ = results(capsys, tmp_path)
    assert {r["file"]: (r["date"], r["date_source"]) for r in doc["results"]} == {
        "dendron.md": ("2022-12-05T15:27:15Z", "frontmatter"),
        "quoted.md": ("2020-09-13T12:26:40Z", "frontmatter"),
        "absurd.md": ("2023-11-14T22:13:20Z", "mtime"),
    }
    _, doc, _ = results(capsys, tmp_path, "--since", "2022-12-05", "--until", "2022-12-05")
    assert [r["file"] for r in doc["results"]] == ["dendron.md"]
    _, doc, _ = results(capsys, tmp_path, "--since", "2022-12-06")
    assert [r["file"] for r in doc["results"]] == ["absurd.md"]
    _, doc, _ = results(capsys, tmp_path, "--until", "2022-12-04")
    assert [r["file"] for r in doc["results"]] == ["quoted.md"]


@pytest.mark.parametrize("edit_another", [False, True])
def test_an_index_dated_under_older_rules_is_re_dated_on_its_next_run(tmp_path, capsys, edit_another):
    """An index from before integer epoch dates (no `date_rules` in its manifest) had dated a Dendron
    note by its mtime; its next run, with nothing changed or with another file edited, dates every file
    under today's rules."""
    import sqlite3

    (tmp_path / "dendron.md").write_text(f"---\nupdated: 1670254035385\n---\n\n# Harbour\n\n{BODY}\n", encoding="utf-8")
    (tmp_path / "other.md").write_text(f"# Other\n\n{BODY} other\n", encoding="utf-8")
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    db = sqlite3.connect(tmp_path / ".ragx" / "index.sqlite")
    with db:  # what the older rules had stored
        db.execute("UPDATE file_dates SET date = 1700000000, source = 'mtime' WHERE path = 'dendron.md'")
        db.execute("DELETE FROM manifest WHERE key = 'date_rules'")
    db.close()
    _, doc, _ = results(capsys, tmp_path)
    assert {r["file"]: r["date_source"] for r in doc["results"]}["dendron.md"] == "mtime"
    if edit_another:
        (tmp_path / "other.md").write_text(f"# Other\n\n{BODY} other, edited\n", encoding="utf-8")
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    _, doc, _ = results(capsys, tmp_path)
    assert {r["file"]: (r["date"], r["date_source"]) for r in doc["results"]}["dendron.md"] == ("2022-12-05T15:27:15Z", "frontmatter")


def test_recent_and_oldest_reorder_by_date(repo, capsys):
    _, doc, _ = results(capsys, repo, "--recent")
    assert doc["results"][0]["file"] == "log-2024.md"
    assert doc["results"][0]["time_boost"] == 0.5
    assert [r["rank"] for r in doc["results"]] == list(range(1, len(doc["results"]) + 1))
    _, doc, _ = results(capsys, repo, "--oldest")
    assert doc["results"][0]["file"] == "log-2019.md"
    scores = [r["score"] for r in doc["results"]]
    assert scores == sorted(scores, reverse=True)


def test_bad_time_options_are_usage_errors(repo, capsys):
    for extra in (["--since", "last tuesday"], ["--recent", "--oldest"], ["--since", "2024-01-01", "--until", "2023-01-01"]):
        code, doc, err = results(capsys, repo, *extra)
        assert code == 2 and doc is None and len(err.strip().splitlines()) == 1, extra


def test_stale_marks_files_changed_since_indexing_and_status_lists_them(repo, capsys):
    (repo / "log-2021.md").write_text(f"# edited\n\n{BODY} edited\n", encoding="utf-8")
    (repo / "untracked.md").unlink()
    code, out, _ = call(capsys, "query", "harbour log boats tides keel", "--root", str(repo), "--json", "--top", "20")
    stale = {r["file"]: r["stale"] for r in json.loads(out)["results"]}
    assert stale["log-2021.md"] is True and stale["untracked.md"] is True and stale["log-2019.md"] is False
    code, out, _ = call(capsys, "status", "--root", str(repo), "--json")
    doc = json.loads(out)
    assert doc["drift"]["changed"] == 1 and doc["drift"]["deleted"] == 1
    assert doc["drifted"] == {"new": [], "changed": ["log-2021.md"], "deleted": ["untracked.md"]}
    code, text, _ = call(capsys, "status", "--root", str(repo))
    assert "changed: log-2021.md" in text and "deleted: untracked.md" in text


def test_date_parsing():
    assert frontmatter_date("---\ndate: 2021-01-02\nupdated: '2022-03-04T05:06:07Z'\n---\nx") == parse_date("2022-03-04T05:06:07Z")
    assert frontmatter_date("---\ndate: 2021-01-02\n---\n") == parse_date("2021-01-02")
    assert frontmatter_date("no frontmatter\ndate: 2021-01-02") is None
    assert frontmatter_date("---\ndate: soon\n---\n") is None


def test_epoch_frontmatter_dates():
    dec_5 = parse_date("2022-12-05T15:27:15.385Z")
    assert frontmatter_value("1670254035385") == frontmatter_value(1670254035385) == frontmatter_value("'1670254035385'") == dec_5
    assert iso(dec_5) == "2022-12-05T15:27:15Z"
    assert frontmatter_value("1670254035") == frontmatter_value(1670254035) == parse_date("2022-12-05T15:27:15Z")  # seconds
    assert frontmatter_value("100000000") == frontmatter_value(10**11) == parse_date("1973-03-03T09:46:40Z")  # both cut-offs
    assert frontmatter_value("2022120512345") == 2022120512.345  # milliseconds, not fromisoformat's 2022-12-05T23:45
    assert frontmatter_value("20221205") == parse_date("2022-12-05")  # 8 digits: YYYYMMDD, as before
    for absurd in ("2024", 2024, 99_999_999, "-1670254035385", -1670254035385, True, False, "true", 10**16, "9" * 30, "1.6e12", "16_700"):
        assert frontmatter_value(absurd) is None, absurd
    assert frontmatter_value(253402300799000) == parse_date("9999-12-31T23:59:59Z")  # the last second iso can print
    assert frontmatter_value(253402300800000) is None
    assert frontmatter_date("---\nupdated: 1670254035385\ncreated: 1639113925844\n---\n") == dec_5
    assert frontmatter_date("---\ndate: '2020-07-25'\nupdated: 1670254035385\n---\n") == dec_5  # updated wins
    assert frontmatter_date("---\nupdated: -5\ndate: 2021-01-02\n---\n") == parse_date("2021-01-02")  # unparseable: next key


# ---- git names of any bytes; dates `iso` cannot print ------------------------------------------------
def _write_bytes_name(root, name: bytes, text: str) -> None:
    """A file whose name is raw bytes (quotes, tabs, newlines, bytes that are not UTF-8)."""
    with open(os.path.join(os.fsencode(root), name), "wb") as fh:
        fh.write(text.encode("utf-8"))


def _dates(capsys, root, *extra):
    code, doc, err = results(capsys, root, *extra)
    assert code in (0, 1), err
    return {r["file"]: (r["date"], r["date_source"]) for r in doc["results"]}


def test_a_git_name_that_is_not_utf8_does_not_stop_the_index(tmp_path, capsys):
    """A name in git history that is not UTF-8 (committed, then removed) made every `ragx index` fail
    with UnicodeDecodeError: git's output is read as bytes and the other files keep their git dates."""
    git(tmp_path, "init", "-q")
    (tmp_path / "a.md").write_text(f"# a\n\n{BODY} a\n", encoding="utf-8")
    _write_bytes_name(tmp_path, b"bad\xffname.md", f"# bad\n\n{BODY} bad\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "init", when="2021-03-04T05:06:07+00:00")
    git(tmp_path, "rm", "-q", b"bad\xffname.md")
    git(tmp_path, "commit", "-q", "-m", "rm", when="2022-01-01T00:00:00+00:00")
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    assert _dates(capsys, tmp_path) == {"a.md": ("2021-03-04T05:06:07Z", "git")}
    # The name is read as discovery reads names (os.fsdecode); discovery refuses it, so it dates no file.
    assert git_dates(tmp_path)[os.fsdecode(b"bad\xffname.md")] == parse_date("2022-01-01")  # its removal


def test_git_dates_reach_names_git_would_quote(tmp_path, capsys):
    """Without -z git quotes names holding `"`, a tab or a newline, which then matched no indexed path
    and fell back to their mtime. The newest commit touching a name wins; a merge names no file."""
    names = [b'quo"te.md', b"tab\tname.md", b"new\nline.md", b"\nleading newline.md", b"sp ace.md",
             "ünï cödé.md".encode(), b"sub/dir name/x.md"]
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "sub" / "dir name").mkdir(parents=True)
    for i, name in enumerate(names):
        _write_bytes_name(tmp_path, name, f"# note {i}\n\n{BODY} note {i}\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "init", when="2020-01-01T00:00:00+00:00")
    git(tmp_path, "checkout", "-q", "-b", "side")
    _write_bytes_name(tmp_path, b'quo"te.md', f"# quote\n\n{BODY} edited on a branch\n")
    git(tmp_path, "commit", "-q", "-am", "edit", when="2021-02-03T04:05:06+00:00")
    git(tmp_path, "checkout", "-q", "main")
    git(tmp_path, "merge", "-q", "--no-ff", "--no-edit", "side", when="2022-01-01T00:00:00+00:00")
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    expected = {os.fsdecode(name): ("2020-01-01T00:00:00Z", "git") for name in names}
    expected['quo"te.md'] = ("2021-02-03T04:05:06Z", "git")  # its newest commit, not the merge's
    assert _dates(capsys, tmp_path) == expected


def test_git_that_fails_in_any_way_leaves_files_dated_by_mtime(tmp_path, capsys, monkeypatch):
    """A root git cannot even be started on, or git output of another shape, means no git dates."""
    assert git_dates(tmp_path / "nul\0in the root") == {}
    for odd in ("\x0112345\nname.md\n", "\0soon\0\nname.md\0", "\0123\0name.md\0"):
        with pytest.raises(ValueError):
            parse_git_log(odd)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_bytes(b"#!/bin/sh\nprintf '\\001123\\n\\377odd\\n'\n")  # the old format, not UTF-8
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text(f"# a\n\n{BODY}\n", encoding="utf-8")
    os.utime(notes / "a.md", (1_600_000_000, 1_600_000_000))
    assert git_dates(notes) == {}
    assert call(capsys, "index", "--root", str(notes))[0] == 0
    assert _dates(capsys, notes) == {"a.md": ("2020-09-13T12:26:40Z", "mtime")}


def test_dates_iso_cannot_print_are_refused_where_they_are_read(tmp_path, capsys):
    """`date: '0001-01-01T00:00:00+14:00'` is in the year 0 in UTC: once stored, every later query
    failed (ValueError: year 0 is out of range). Such a date is unreadable, like `soon`; on the command
    line it is a usage error."""
    heads = {"early.md": "0001-01-01T00:00:00+14:00", "late.md": "9999-12-31T23:59:59-14:00",
             "far.md": "253402300800000", "first.md": "0001-01-01T10:00:00+10:00", "last.md": "9999-12-31T23:59:59Z"}
    for name, when in heads.items():
        (tmp_path / name).write_text(f"---\ndate: '{when}'\n---\n\n# {name}\n\n{BODY} {name}\n", encoding="utf-8")
        os.utime(tmp_path / name, (1_700_000_000, 1_700_000_000))
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    mtime = ("2023-11-14T22:13:20Z", "mtime")
    expected = {"early.md": mtime, "late.md": mtime, "far.md": mtime,
                "first.md": ("0001-01-01T00:00:00Z", "frontmatter"), "last.md": ("9999-12-31T23:59:59Z", "frontmatter")}
    assert _dates(capsys, tmp_path) == expected
    assert _dates(capsys, tmp_path, "--recent") == expected
    assert set(_dates(capsys, tmp_path, "--since", "2000-01-01")) == {"early.md", "late.md", "far.md", "last.md"}
    assert set(_dates(capsys, tmp_path, "--until", "9999-12-31")) == set(expected)
    for extra in (["--since", "0001-01-01T00:00:00+14:00"], ["--until", "9999-12-31T23:59:59-14:00"]):
        code, doc, err = results(capsys, tmp_path, *extra)
        assert code == 2 and doc is None and len(err.strip().splitlines()) == 1, extra


def test_an_index_holding_a_date_iso_cannot_print_is_re_dated_on_its_next_run(tmp_path, capsys):
    """An index dated under the older rules may hold such a date: its next run dates every file again."""
    import sqlite3

    (tmp_path / "early.md").write_text(f"---\ndate: '0001-01-01T00:00:00+14:00'\n---\n\n# early\n\n{BODY}\n", encoding="utf-8")
    os.utime(tmp_path / "early.md", (1_700_000_000, 1_700_000_000))
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    db = sqlite3.connect(tmp_path / ".ragx" / "index.sqlite")
    with db:  # what rules 2 had stored
        db.execute("UPDATE file_dates SET date = ?, source = 'frontmatter'", (FIRST_SECOND - 14 * 3600,))
        db.execute("UPDATE manifest SET value = '2' WHERE key = 'date_rules'")
    db.close()
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    assert _dates(capsys, tmp_path) == {"early.md": ("2023-11-14T22:13:20Z", "mtime")}


def test_the_calendar_edges():
    assert parse_date("0001-01-01T00:00:00+14:00") is None and parse_date("9999-12-31T23:59:59-14:00") is None
    assert parse_date("0001-01-01T00:00:00-14:00") == FIRST_SECOND + 14 * 3600
    last = parse_date("9999-12-31T23:59:59.5Z")
    assert last is not None and iso(last) == "9999-12-31T23:59:59Z"
    assert iso(parse_date("0001-01-01")) == "0001-01-01T00:00:00Z" and iso(parse_date("9999-12-31")) == "9999-12-31T00:00:00Z"
    for absurd in (10**400, 10**30, "99999999999999999999", 253402300800000):  # seconds stop at 10**11 (5138)
        assert frontmatter_value(absurd) is None, absurd  # 10**400 overflowed the division
    assert frontmatter_value(253402300799999) is not None and iso(frontmatter_value(253402300799999)) == "9999-12-31T23:59:59Z"


def test_a_stored_date_beyond_the_calendar_is_shown_at_its_edge_not_a_crash():
    # An index dated before out-of-range dates were refused may hold one until its next run re-dates it.
    assert iso(-1e18) == "0001-01-01T00:00:00Z" and iso(1e18) == "9999-12-31T23:59:59Z"


def test_an_incremental_run_keeps_one_date_for_each_indexed_file(tmp_path, capsys):
    """A deleted file's date goes with it, a changed file's is written again, a new file gets one, and
    the others' are left as they were."""
    import sqlite3

    for name in ("a.md", "b.md", "c.md"):
        (tmp_path / name).write_text(f"# {name}\n\n{BODY} {name}\n", encoding="utf-8")
        os.utime(tmp_path / name, (1_700_000_000, 1_700_000_000))
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0

    def dates():
        db = sqlite3.connect(tmp_path / ".ragx" / "index.sqlite")
        try:
            return dict(db.execute("SELECT path, date FROM file_dates").fetchall())
        finally:
            db.close()

    assert dates() == {"a.md": 1_700_000_000, "b.md": 1_700_000_000, "c.md": 1_700_000_000}
    (tmp_path / "a.md").unlink()
    (tmp_path / "b.md").write_text(f"# b.md\n\n{BODY} b.md, edited\n", encoding="utf-8")
    os.utime(tmp_path / "b.md", (1_710_000_000, 1_710_000_000))
    (tmp_path / "d.md").write_text(f"# d.md\n\n{BODY} d.md\n", encoding="utf-8")
    os.utime(tmp_path / "d.md", (1_720_000_000, 1_720_000_000))
    assert call(capsys, "index", "--root", str(tmp_path))[0] == 0
    assert dates() == {"b.md": 1_710_000_000, "c.md": 1_700_000_000, "d.md": 1_720_000_000}
