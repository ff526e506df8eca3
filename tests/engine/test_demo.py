"""`syncd demo`: two real syncs into a local emulator, and a folder it never wipes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import syncd.emulator
from syncd.emulator import EmulatorOptions, RunningEmulator
from tests.support import cli


def demo(capsys: pytest.CaptureFixture[str], folder: Path) -> tuple[int, str]:
    return cli.syncd(capsys, "demo", "--folder", str(folder))


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


def test_the_demo_previews_its_mapping_rule_and_the_platform_gets_what_it_makes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The demo's emulator stops with the demo: what it holds then is kept for the test.
    held: dict[str, Any] = {}
    serve = syncd.emulator.serve_in_thread

    @contextmanager
    def keeping_state(options: EmulatorOptions | None = None) -> Iterator[RunningEmulator]:
        with serve(options) as running:
            yield running
            held.update(running.state())

    monkeypatch.setattr(syncd.emulator, "serve_in_thread", keeping_state)

    code, output = demo(capsys, tmp_path / "demo")

    assert code == 0, output
    after = output.split("0. the mapping rule, previewed: syncd check --preview wangjianguo ")[1]
    preview = after.split("1. first sync", 1)[0]
    assert "wangjianguo  employees.csv:2" in preview
    (en_name,) = [line.split() for line in preview.splitlines() if "en_name" in line]
    assert en_name[:2] == ["en_name", "en_name"]  # the field, from the attribute...
    assert "replace" in en_name  # ... by the rule
    assert en_name[-4:] == ["en_name=Jianguo", "Wang", "Wang", "Jianguo"]
    # The rule's effect on the platform: English names family name first, for everyone.
    en_names = {e["username"]: e["en_name"] for e in held["employees"]}
    assert en_names["wangjianguo"] == "Wang Jianguo"
    assert en_names["linxue"] == "Lin Xue"  # the hire of the second sync: Xue Lin in the export


def test_the_two_source_demo_joins_hr_and_the_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = cli.syncd(capsys, "demo", "--two-sources", "--folder", str(tmp_path / "demo"))
    assert code == 0, output
    assert "directory: sAMAccountName" in output and "hr: department" in output  # the preview
    assert "wangjianguo@corp.example" in output  # the directory decides e-mail
    # xiting has no account yet: she waits; chenzhiqiang left HR and the directory: locked.
    assert "key '10039'" in output and "waiting for source 'directory'" in output
    assert "lock employee chenzhiqiang" in output
    assert "run 2: ok (exit 0)" in output


def test_the_demo_runs_in_a_shell_that_exported_settings_for_another_syncd(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first-sync guide exports the emulator's secret; the demo's file holds its own. A
    # secret given in two places is a settings error (so a rotated one is never the unused
    # one): the demo reads its file alone, and leaves the shell's variables as they were.
    monkeypatch.setenv("SYNCD_PLATFORM__CLIENT_SECRET", "another-secret")
    monkeypatch.setenv("SYNCD_PLATFORM__BATCH_SIZE", "not a number")
    code, output = demo(capsys, tmp_path / "demo")
    assert code == 0, output
    assert "run 2: ok (exit 0)" in output
    assert os.environ["SYNCD_PLATFORM__CLIENT_SECRET"] == "another-secret"
