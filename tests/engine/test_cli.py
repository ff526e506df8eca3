"""The syncd command, in-process: what it prints and the exit codes it gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncd.run.lock import run_lock
from tests.engine.company import World, employee
from tests.support.cli import syncd


def config_of(world: World) -> str:
    world.company.write(world.folder)
    world.settings()
    return str(world.folder / "syncd.toml")


def test_check_reads_the_source_without_the_platform(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world.company.employees.append(employee("E9", "", "D1"))  # no username: rejected
    code, output = syncd(capsys, "check", "--config", config_of(world))
    assert code == 0, output
    assert "employees   5" in output and "rejected    1" in output
    assert "employees.csv:7: employee: column 'username' is empty, and it is required" in output
    assert world.emulator.stats()["total_requests"] == 0


def test_dry_run_prints_the_plan_and_check_exits_1_when_changes_are_pending(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    config = config_of(world)
    code, output = syncd(capsys, "sync", "--dry-run", "--config", config)
    assert code == 0, output
    assert "plan: 9 to create" in output
    assert "+ create department Acme/Head Office/R&D/Backend" in output
    assert "dry run 1: ok (exit 0)" in output
    assert syncd(capsys, "sync", "--check", "--config", config)[0] == 1
    assert syncd(capsys, "sync", "--yes", "--config", config)[0] == 0
    assert syncd(capsys, "sync", "--check", "--config", config)[0] == 0


def test_a_broken_settings_file_is_one_clear_error_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "syncd.toml"
    path.write_text("[platform]\nbatch_size = 'lots'\n")
    code, output = syncd(capsys, "sync", "--yes", "--config", str(path))
    assert code == 3
    assert "key platform.batch_size: Input should be a valid integer" in output
    assert "Traceback" not in output


def test_a_second_sync_while_one_runs_exits_3_naming_the_holder(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    config = config_of(world)
    with run_lock(world.folder / "state", "schedule sync"):
        code, output = syncd(capsys, "sync", "--yes", "--config", config)
    assert code == 3
    assert "another syncd process is running (schedule sync, pid" in output
    assert world.emulator.stats()["total_requests"] == 0


def test_a_wrong_secret_is_exit_3_and_never_printed(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    config = config_of(world)
    Path(config).write_text(Path(config).read_text().replace("demo-secret", "wrong-secret-123"))
    code, output = syncd(capsys, "sync", "--yes", "--config", config)
    assert code == 3
    assert "202104" in output or "authentication failed" in output
    assert "wrong-secret-123" not in output


def test_values_are_printed_as_they_are_never_as_markup(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # "[/x]" closes a style never opened (rich raised MarkupError: exit 1, no message),
    # "[hr]" vanished as an unknown style, ":smile:" became an emoji.
    folder = world.folder / "[hr] [/x] :smile:"  # two folders: "[hr] [" and "x] :smile:"
    folder.mkdir(parents=True)
    config = folder / "syncd.toml"
    missing = folder / "employees.csv"
    settings = Path(config_of(world)).read_text(encoding="utf-8")
    config.write_text(settings.replace(str(world.folder / "employees.csv"), str(missing)))
    config.chmod(0o644)  # it holds a secret: the warning names the file

    code, output = syncd(capsys, "check", "--config", str(config))
    assert code == 3, output
    assert f"warning: {config} holds a secret and is readable by other users" in output
    assert f"error: {missing}: file not found (source.csv.employees)" in output

    code, output = syncd(capsys, "sync", "--dry-run", "--config", str(config))
    assert code == 3, output
    assert f"error: {missing}: file not found (source.csv.employees)" in output
    assert output.count("file not found") == 1  # told once: not also as a log line


def test_paths_in_plain_output_lines_are_shown_as_they_are(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # Lines printed as plain strings (check's source, status's state database): the
    # consoles themselves must not read them as markup.
    folder = world.folder / "[hr] [/x] :smile:"
    folder.mkdir(parents=True)
    settings = Path(config_of(world)).read_text(encoding="utf-8")
    for name in ("employees.csv", "departments.csv"):
        (folder / name).write_bytes((world.folder / name).read_bytes())
        settings = settings.replace(str(world.folder / name), str(folder / name))
    settings = settings.replace(str(world.folder / "state"), str(folder / "state"))
    config = folder / "syncd.toml"
    config.write_text(settings)
    config.chmod(0o600)

    code, output = syncd(capsys, "check", "--config", str(config))
    assert code == 0, output
    assert f"source      csv:{folder / 'employees.csv'},{folder / 'departments.csv'}" in output

    code, output = syncd(capsys, "status", "--config", str(config))
    assert f"no runs recorded yet (no state database at {folder / 'state'}" in output, output


def test_plan_lines_show_names_as_they_are(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world.company.unit("D3")["name"] = "Back [b]end :smile:"
    code, output = syncd(capsys, "sync", "--dry-run", "--config", config_of(world))
    assert code == 0, output
    assert "+ create department Acme/Head Office/R&D/Back [b]end :smile:" in output
