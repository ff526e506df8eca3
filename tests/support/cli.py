"""syncd's command line, run in the test's process."""

from __future__ import annotations

import pytest

from syncd.cli import run_cli


def syncd(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Exit code and everything printed (stdout and stderr) of one command."""
    code = run_cli(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err
