"""The release: the built wheel, installed with pipx into a fresh environment, answers a query.

scripts/check/check_wheel.sh does the work (build, pipx install with the CPU torch first, index and query a
small corpus with a fresh model cache). It takes several minutes on a 2-core machine (installing
torch and the model's packages into a new virtualenv), so it runs only when asked:
RAGX_CHECK_WHEEL=1 pytest -q tests/test_wheel.py
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("RAGX_CHECK_WHEEL") != "1", reason="set RAGX_CHECK_WHEEL=1: builds the wheel and pipx-installs it with torch (minutes)")
def test_the_wheel_installed_with_pipx_answers_a_query():
    done = subprocess.run(["bash", str(REPO / "scripts" / "check" / "check_wheel.sh")], cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "top result: notes/bicycle.md" in done.stdout
    assert "ok: the wheel installed with pipx answers a query" in done.stdout
