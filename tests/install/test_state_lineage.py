"""A state database lost, restored from an older backup, or pointed at another platform
(issue 25, case 5): leavers are never orphaned, run ids never reused, another platform
refused (README, "Backup and upgrade")."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from syncd.cli import run_cli
from syncd.emulator import EmulatorOptions, RunningEmulator, serve_in_thread
from syncd.errors import EXIT_FAILED, EXIT_OK
from tests.engine.company import World, employee, small_company
from tests.support.runs import plan_of


@pytest.fixture
def world(tmp_path: Path, emulator: RunningEmulator) -> World:
    # One leaver in a company of five is over the default removal ratio's guard.
    return World(tmp_path, emulator, small_company(), {"max_removal_ratio": 1.0})


def database(world: World) -> Path:
    return world.folder / "state" / "syncd.db"


def back_up(world: World) -> Path:
    backup = world.folder / "syncd-backup.db"
    with closing(sqlite3.connect(database(world))) as db:  # README's command, in Python
        db.execute("VACUUM INTO ?", [str(backup)])
    return backup


def restore(world: World, backup: Path) -> None:
    """As README says: syncd stopped, the -wal and -shm files gone, the copy in place."""
    for leftover in database(world).parent.glob("syncd.db*"):
        leftover.unlink()
    backup.rename(database(world))


def cli(world: World, *args: str) -> int:
    return run_cli([*args, "--config", str(world.folder / "syncd.toml")])


def fay_joins_after_the_backup(world: World) -> Path:
    """The company synced, backed up; fay joins and is synced; the backup is restored and
    fay leaves: only the platform still knows syncd wrote her."""
    assert world.sync().exit_code == EXIT_OK
    backup = back_up(world)
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK
    assert "fay" in world.platform().people
    restore(world, backup)
    world.company.employees.pop()  # fay leaves
    return backup


def test_a_leaver_is_never_orphaned_by_a_restored_state_database(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    fay_joins_after_the_backup(world)
    before = world.writes()

    stopped = world.sync()  # before: exit 0, fay left active for ever
    assert stopped.exit_code == EXIT_FAILED
    assert stopped.error is not None
    assert f"state database {database(world)} is behind the platform" in stopped.error
    assert "person fay (extension_id E6)" in stopped.error
    assert "syncd state rebuild" in stopped.error
    assert world.writes() == before  # nothing sent

    capsys.readouterr()
    assert cli(world, "state", "rebuild", "--dry-run") == EXIT_OK
    shown = capsys.readouterr().out
    assert "would adopt person fay (extension_id E6)" in shown
    assert world.sync().exit_code == EXIT_FAILED  # a dry run changes nothing

    assert cli(world, "state", "rebuild") == EXIT_OK
    assert "adopted person fay (extension_id E6)" in capsys.readouterr().out
    result = world.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert result.plan is not None
    assert [(c.action.value, c.key) for c in result.plan.changes] == [("lock", "E6")]
    assert world.platform().people["fay"][4] is True  # locked, as a leaver is
    assert plan_of(world.sync()).changes == ()


def test_a_person_locked_after_the_backup_is_still_removed_after_the_grace_period(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world.sync_settings.update(leaver_policy="lock_then_remove", remove_after_days=30)
    assert world.sync().exit_code == EXIT_OK
    backup = back_up(world)
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK
    world.company.employees.pop()  # fay leaves: locked, to be removed in 30 days
    assert world.sync().exit_code == EXIT_OK
    assert world.platform().people["fay"][4] is True
    restore(world, backup)  # fay, locked, is unknown to the restored database
    world.sync_settings["remove_after_days"] = 0  # (the grace period, run out)

    assert world.sync().exit_code == EXIT_FAILED  # before: exit 0, fay locked for ever
    assert cli(world, "state", "rebuild") == EXIT_OK
    assert "adopted person fay (extension_id E6) (locked)" in capsys.readouterr().out
    result = world.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert result.plan is not None
    assert [(c.action.value, c.key) for c in result.plan.changes] == [("remove", "E6")]
    assert "fay" not in world.platform().people


def test_a_lost_state_directory_stops_the_run_until_rebuilt(world: World) -> None:
    assert world.sync().exit_code == EXIT_OK
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK
    for path in (world.folder / "state").iterdir():  # the whole state directory is lost
        path.unlink()
    world.company.employees.pop()  # fay leaves meanwhile

    stopped = world.sync()
    assert stopped.exit_code == EXIT_FAILED
    assert stopped.error is not None and "person fay (extension_id E6)" in stopped.error
    assert cli(world, "state", "rebuild") == EXIT_OK
    result = world.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert ("lock", "E6") in [(c.action.value, c.key) for c in plan_of(result).changes]


def test_a_lost_state_database_with_nobody_gone_is_adopted_as_before(world: World) -> None:
    assert world.sync().exit_code == EXIT_OK
    for leftover in database(world).parent.glob("syncd.db*"):
        leftover.unlink()
    result = world.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert {c.action.value for c in plan_of(result).changes} <= {"adopt", "update"}
    assert world.platform().same_as(world.company.expected())


def test_run_ids_are_never_given_twice_after_a_restore(world: World) -> None:
    ids = [world.sync().run_id]
    backup = back_up(world)
    ids += [world.sync(dry_run=True).run_id, world.sync().run_id]
    restore(world, backup)  # its newest run is ids[0]
    ids.append(world.sync().run_id)
    assert ids == sorted(set(ids)), ids  # increasing: the restored database went on after ids[2]
    with closing(sqlite3.connect(database(world))) as db:
        assert db.execute("SELECT id FROM runs ORDER BY id").fetchall() == [(ids[0],), (ids[3],)]


def test_records_another_program_wrote_are_accepted_and_left_alone(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """An extension_id another program set looks like syncd's: `syncd state accept`."""
    _import_zed(world.emulator)
    first = world.sync()
    assert first.exit_code == EXIT_FAILED and "person zed (extension_id HR-99)" in (
        first.error or ""
    )
    assert cli(world, "state", "accept") == EXIT_OK
    result = world.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert "zed" in world.platform().people and world.platform().people["zed"][4] is False


def _import_zed(emulator: RunningEmulator) -> None:
    """Another program's person, through the platform's own API."""
    with httpx.Client(base_url=emulator.base_url) as http:
        token = emulator.issue_token()
        answer = http.post(
            "/v1/admin/organizations/acme/import-employees",
            params={"access_token": token},
            json=[
                {
                    "username": "zed",
                    "name": "Zed",
                    "extension_id": "HR-99",
                    "positions": [{"org_path": "Acme"}],
                }
            ],
        ).json()
    assert answer["status"] == 0 and "zed" in answer["result"]["successes"], answer


# ---------------------------------------------------------------- bound to one platform


@pytest.fixture
def other_platform() -> Iterator[RunningEmulator]:
    with serve_in_thread(EmulatorOptions()) as running:
        yield running


def test_a_state_database_pointed_at_another_platform_refuses(
    world: World, other_platform: RunningEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert world.sync().exit_code == EXIT_OK
    world.emulator = other_platform  # the settings now name another platform
    refused = world.sync()
    assert refused.exit_code == EXIT_FAILED
    message = refused.error or ""
    assert f"state database {database(world)} belongs to another platform" in message
    assert "'http://127.0.0.1:" in message and other_platform.base_url in message
    assert "state_dir" in message and "syncd state rebind" in message
    requests = other_platform.stats()["requests"]
    assert not any(k.startswith(("POST /v1/admin", "DELETE")) for k in requests), requests

    assert cli(world, "state", "rebind") == EXIT_OK
    assert other_platform.base_url in capsys.readouterr().out
    assert world.sync().exit_code == EXIT_OK
