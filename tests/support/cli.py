"""syncd's command line: run in the test's process, or the console script for subprocesses."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from syncd.cli import run_cli

SYNCD = str(Path(sys.executable).with_name("syncd"))  # the console script of this environment


def syncd(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Exit code and everything printed (stdout and stderr) of one command."""
    code = run_cli(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err
