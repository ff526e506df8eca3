"""The state database across backups and upgrades, as README's "Backup and upgrade" says."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

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


# ---------------------------------------------------------------- a damaged state database
# Issue 24 case 7: SQLite's own exception, without the file's name, reached the operator.

COMMANDS = [
    ["sync"],
    ["sync", "--dry-run"],
    ["run"],
    ["status"],
    ["reports", "list"],
    ["reports", "show", "latest"],
]


def _checkpointed(database: Path) -> bytes:
    with closing(sqlite3.connect(database)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for leftover in database.parent.glob("syncd.db-*"):
        leftover.unlink()
    return database.read_bytes()


def _garbage(good: bytes) -> bytes:
    return bytes((i * 7919) % 251 for i in range(len(good)))


def _pages_garbled(good: bytes) -> bytes:
    """The header and the schema page intact, every other page garbage."""
    page = int.from_bytes(good[16:18], "big")
    return good[:page] + _garbage(good[page:])


DAMAGE = {
    "garbage": _garbage,
    "truncated": lambda good: good[: len(good) // 3],
    "not_sqlite": lambda good: b"syncd.toml?\n[platform]\nbase_url = 'https://example'\n",
    "cut_in_the_header": lambda good: good[:60],
    "pages_garbled": _pages_garbled,
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_state_database_is_one_clear_error_for_every_command(
    world: World, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    assert world.sync().exit_code == EXIT_OK
    database = world.folder / "state" / "syncd.db"
    damaged = DAMAGE[damage](_checkpointed(database))
    database.write_bytes(damaged)
    config = str(world.folder / "syncd.toml")
    capsys.readouterr()
    for command in COMMANDS:
        code = run_cli([*command, "--config", config])
        err = capsys.readouterr().err
        assert code == 3, (command, err)
        assert f"state database {database} is damaged" in err, (command, err)
        assert "restore the latest backup" in err and "syncd state rebuild" in err, err
        assert "internal error" not in err and "Traceback" not in err, err
        assert "sqlalche.me" not in err, err
    # `syncd check` reads the source alone: a damaged state database is not its business.
    assert run_cli(["check", "--config", config]) == EXIT_OK
    assert database.read_bytes() == damaged  # left as it was, for the operator to move aside


def test_a_state_database_locked_by_another_program_is_one_clear_error(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert world.sync().exit_code == EXIT_OK
    database = world.folder / "state" / "syncd.db"
    config = str(world.folder / "syncd.toml")
    monkeypatch.setattr("syncd.snapshot.engine.BUSY_TIMEOUT_MS", 200)  # not a minute
    with closing(sqlite3.connect(database, isolation_level=None)) as other:
        other.execute("PRAGMA locking_mode = EXCLUSIVE")  # readers shut out too
        other.execute("BEGIN EXCLUSIVE")
        other.execute("DELETE FROM cursors WHERE name = 'nobody'")
        capsys.readouterr()
        for command in (["sync"], ["status"], ["reports", "list"]):
            code = run_cli([*command, "--config", config])
            err = capsys.readouterr().err
            assert code == 3, (command, err)
            assert f"state database {database}: database is locked" in err, (command, err)
            assert "another program has held it locked" in err and "try again" in err, err
            assert "internal error" not in err and "Traceback" not in err, err
        other.execute("ROLLBACK")


@settings(
    max_examples=25,
    deadline=None,
    phases=[Phase.generate],  # each example runs three commands: no long shrinking
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    cut=st.one_of(st.none(), st.integers(min_value=0, max_value=200_000)),
    offset=st.integers(min_value=0, max_value=200_000),
    noise=st.binary(min_size=1, max_size=4096),
)
def test_any_damage_is_a_clear_error_or_no_error(
    world: World, capsys: pytest.CaptureFixture[str], cut: int | None, offset: int, noise: bytes
) -> None:
    """Bytes overwritten anywhere, the file cut anywhere: never an internal error, and a
    failure names the state database."""
    database = world.folder / "state" / "syncd.db"
    if not database.exists():
        assert world.sync().exit_code == EXIT_OK
        (world.folder / "good.db").write_bytes(_checkpointed(database))
    good = (world.folder / "good.db").read_bytes()
    at = offset % len(good)
    damaged = (good[:at] + noise + good[at + len(noise) :])[: cut if cut is not None else None]
    for leftover in database.parent.glob("syncd.db*"):
        leftover.unlink()
    database.write_bytes(damaged)
    config = str(world.folder / "syncd.toml")
    capsys.readouterr()
    for command in (["reports", "list"], ["status"], ["sync", "--dry-run"]):
        code = run_cli([*command, "--config", config])
        err = capsys.readouterr().err
        assert "internal error" not in err and "Traceback" not in err, (command, err)
        assert code in (0, 1, 2, 3), (command, err)  # `status`: 3 is "no daemon runs here"
        for line in err.splitlines():
            if line.startswith("error:"):
                assert f"state database {database}" in line, (command, err)
