"""`syncd demo`: two real syncs into a local emulator, and a folder it never wipes."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncd.cli import run_cli


def demo(capsys: pytest.CaptureFixture[str], folder: Path) -> tuple[int, str]:
    code = run_cli(["demo", "--folder", str(folder)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_demo_refuses_a_folder_holding_files_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    precious = tmp_path / "thesis.tex"
    precious.write_text("years of work", encoding="utf-8")
    code, output = demo(capsys, tmp_path)
    assert code == 3
    assert f"demo folder {tmp_path}: it is not empty and not a previous demo's" in output
    assert precious.read_text(encoding="utf-8") == "years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thesis.tex"]


def test_the_demo_runs_again_in_its_own_folder_keeping_what_others_put_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "demo"
    code, output = demo(capsys, folder)
    assert code == 0, output
    assert (folder / "report.html").exists() and (folder / "state" / "syncd.db").exists()
    notes = folder / "my-notes.txt"
    notes.write_text("kept", encoding="utf-8")

    code, output = demo(capsys, folder)
    assert code == 0, output
    # Its own state was replaced: the runs are numbered from 1 again.
    assert "run 1: ok (exit 0)" in output and "run 3:" not in output
    assert notes.read_text(encoding="utf-8") == "kept"
