"""The state database across backups and upgrades, as README's "Backup and upgrade" says."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from syncd import snapshot as store
from syncd.cli import run_cli
from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_OK, StateError
from tests.engine.company import World, department, employee, small_company


@pytest.fixture
def world(tmp_path: Path, emulator: RunningEmulator) -> World:
    return World(tmp_path, emulator, small_company())


def test_a_backup_taken_while_syncd_writes_restores_and_the_next_run_catches_up(
    world: World,
) -> None:
    assert world.sync().exit_code == EXIT_OK
    database = world.folder / "state" / "syncd.db"
    backup = world.folder / "syncd-backup.db"
    # The daemon, mid-write: a transaction holds the write lock, not yet committed.
    with closing(sqlite3.connect(database, isolation_level=None)) as daemon:
        daemon.execute("BEGIN IMMEDIATE")
        daemon.execute("DELETE FROM employees")
        with closing(sqlite3.connect(database)) as admin:  # README's command, in Python
            admin.execute("VACUUM INTO ?", [str(backup)])
        daemon.execute("ROLLBACK")
    # Syncs after the backup: a department and a person created on the platform.
    world.company.departments.append(department("D5", "Support", "D1"))
    world.company.employees.append(employee("E6", "fay", "D5"))
    assert world.sync().exit_code == EXIT_OK

    # Restored as README says: syncd stopped, the -wal and -shm files gone, the copy in place.
    for leftover in database.parent.glob("syncd.db*"):
        leftover.unlink()
    backup.rename(database)
    with closing(sqlite3.connect(database)) as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (1,)
        assert db.execute("SELECT count(*) FROM employees").fetchone() == (5,)
    assert world.sync().exit_code == EXIT_OK
    platform = world.platform()
    assert platform.same_as(world.company.expected())
    assert sorted(platform.serials) == sorted(set(platform.serials))  # nothing made twice
    assert sorted(platform.usernames) == sorted(set(platform.usernames))
    final = world.sync()
    assert final.plan is not None and final.plan.changes == ()


def test_a_database_of_a_newer_syncd_is_refused_with_what_to_do(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    assert world.sync().exit_code == EXIT_OK
    database = world.folder / "state" / "syncd.db"
    newer = store.SCHEMA_VERSION + 1
    with closing(sqlite3.connect(database)) as db:
        db.execute(f"PRAGMA user_version = {newer}")

    refusal = (
        f"state database {database} has schema version {newer}, newer than this syncd "
        f"({store.SCHEMA_VERSION}): upgrade syncd"
    )
    with pytest.raises(StateError) as caught:
        store.open_engine(database)
    assert str(caught.value) == refusal
    assert run_cli(["reports", "list", "--config", str(world.folder / "syncd.toml")]) == 3
    assert refusal in capsys.readouterr().err
    with closing(sqlite3.connect(database)) as db:  # left as it was: nothing migrated back
        assert db.execute("PRAGMA user_version").fetchone() == (newer,)
