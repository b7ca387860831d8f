"""The fault suite of issue 11 in its bounded form: every case of scripts/check/fault_suite.py, run with the
real CLI entry point over a small corpus and a hashing embedder (no model), asserting exit codes,
one-line messages and an intact index after each case.

The race and the corrupted-vectors cases hold since the snapshot-per-read and array-checksum work.
A case the machine cannot stage (no root for a tmpfs or a bind mount) is reported as SKIPPED with the
reason; `ulimit -f` covers the disk failures without root.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts" / "check"))

import fault_suite  # noqa: E402

RACE_QUERIES = 12


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    import fakes_registration  # noqa: F401  (the "test-hash" engine, in this process for in-process runs)

    with pytest.MonkeyPatch.context() as mp:
        rc = tmp_path_factory.mktemp("rc") / "ragxrc"
        mp.setenv("RAGX_RC", str(rc))
        mp.setenv("NO_COLOR", "1")
        import os

        env = dict(os.environ, COLUMNS="200")
        s = fault_suite.Suite(fault_suite.hash_engine_cli(), tmp_path_factory.mktemp("faults"), env,
                              fault_suite.HASH_TOML, quick=True)
        fault_suite.build_corpus(s.corpus)
        s.write_toml()
        first = s.ragx("index", "--root", str(s.corpus))
        assert first.code == 0, first.err
        s.rebaseline()
        yield s


@pytest.mark.parametrize("name", [name for name, _, _ in fault_suite.CASES])
def test_fault_case(suite, name, isolated_rc):
    fn = next(f for n, _, f in fault_suite.CASES if n == name)
    before = len(suite.rows)
    fn(suite, RACE_QUERIES) if name == "race" else fn(suite)
    rows = suite.rows[before:]
    assert rows, f"case {name} recorded nothing"
    info = suite.status()
    assert info.get("consistent") and (info.get("generation"), info.get("chunks")) == suite.baseline, (
        f"index not intact after {name}: {info.get('problems')}"
    )
    not_run = [r for r in rows if r.code is None and r.note.startswith("not run") and not r.needs]
    failed = [r for r in rows if not r.ok and r not in not_run]
    assert not failed, "\n" + fault_suite.table(failed)
    if not_run:
        pytest.skip("; ".join(f"{r.case}: {r.note}" for r in not_run))
