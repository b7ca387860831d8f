"""Run the real CLI entry point in-process and capture what a shell would see."""

from __future__ import annotations

import pytest

from ragx.cli.main import run


def call(capsys, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `ragx ARGS...`."""
    with pytest.raises(SystemExit) as exit_info:
        run(list(args))
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err
