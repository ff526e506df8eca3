"""Without the emulator extra (FastAPI, uvicorn), the commands that need it say what to install."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from syncd.cli import run_cli


@pytest.mark.parametrize(
    "command", [["demo", "--folder", "{tmp}/demo"], ["emulator", "--port", "0"]]
)
def test_a_missing_emulator_extra_is_one_line_naming_it(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "fastapi", None)  # as if not installed: no spec found

    code = run_cli([arg.format(tmp=tmp_path) for arg in command])

    captured = capsys.readouterr()
    assert code == 3
    # The checkout this environment installed syncd from, never a name on a package index.
    checkout = Path(__file__).resolve().parents[2]
    assert captured.err.splitlines() == [
        f"error: syncd {command[0]} needs the platform emulator, which is not installed "
        "(fastapi missing): install syncd's emulator extra from the wheel or checkout syncd "
        f"came from: pip install -e '{checkout}[emulator]'"
    ]
    assert list(tmp_path.iterdir()) == []
