"""The state database across backups and upgrades, as README's "Backup and upgrade" says."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from contextlib import closing
from importlib.metadata import version
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from syncd import snapshot as store
from syncd.cli import run_cli
from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_OK, StateError
from tests.engine.company import World, department, employee, small_company
from tests.support.examples import examples


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
    ["sync", "--yes"],
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
    monkeypatch.setattr("syncd.snapshot.sqlite.BUSY_TIMEOUT_MS", 200)  # not a minute
    with closing(sqlite3.connect(database, isolation_level=None)) as other:
        other.execute("PRAGMA locking_mode = EXCLUSIVE")  # readers shut out too
        other.execute("BEGIN EXCLUSIVE")
        other.execute("DELETE FROM cursors WHERE name = 'nobody'")
        capsys.readouterr()
        for command in (["sync", "--yes"], ["status"], ["reports", "list"]):
            code = run_cli([*command, "--config", config])
            err = capsys.readouterr().err
            assert code == 3, (command, err)
            assert f"state database {database}: database is locked" in err, (command, err)
            assert "another program has held it locked" in err and "try again" in err, err
            assert "internal error" not in err and "Traceback" not in err, err
        other.execute("ROLLBACK")


@settings(
    max_examples=examples(25),
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


def test_state_backup_writes_a_private_consistent_copy_that_restores(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    assert world.sync().exit_code == EXIT_OK
    config = str(world.folder / "syncd.toml")
    database = world.folder / "state" / "syncd.db"
    copy = world.folder / "backups" / "syncd-before-upgrade.db"
    copy.parent.mkdir()
    previous = os.umask(0o022)  # the usual umask: a plain copy would be readable by all
    try:
        assert run_cli(["state", "backup", str(copy), "--config", config]) == EXIT_OK
    finally:
        os.umask(previous)
    said = capsys.readouterr().out
    assert f"backed up {database} to {copy}" in said and "mode 0600" in said
    assert copy.stat().st_mode & 0o777 == 0o600  # it holds the access token
    assert run_cli(["state", "backup", str(copy), "--config", config]) == 3  # never overwritten
    assert f"{copy} exists already" in capsys.readouterr().err

    world.company.employees.append(employee("E6", "fay", "D2"))  # a run after the backup
    assert world.sync().exit_code == EXIT_OK
    # Restored as README says: syncd stopped, the database and its -wal and -shm replaced.
    for leftover in database.parent.glob("syncd.db*"):
        leftover.unlink()
    shutil.copy2(copy, database)
    after = world.sync()
    assert after.exit_code == EXIT_OK
    assert after.run_id == 3  # run ids go on past the run the backup did not see
    assert world.platform().same_as(world.company.expected())


def test_a_migration_says_what_it_does_and_keeps_the_database_as_it_was(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    assert world.sync().exit_code == EXIT_OK
    database = world.folder / "state" / "syncd.db"
    older = store.SCHEMA_VERSION - 1
    with closing(sqlite3.connect(database)) as db:  # as the syncd before this one left it
        db.execute(f"PRAGMA user_version = {older}")
        db.commit()

    config = str(world.folder / "syncd.toml")
    for read_only in (["reports", "list"], ["reports", "show", "latest"], ["status"]):
        assert run_cli([*read_only, "--config", config]) == 3, read_only
        told = " ".join(capsys.readouterr().err.split())
        assert f"state database {database} has schema version {older}, older than" in told
        assert (
            "this command only reads it and leaves it as it is: the next sync migrates it" in told
        )
        assert "syncd sync --dry-run is enough" in told
        assert not re.search(r"syncd\.(?!db)[a-z_]", told), told  # no module of syncd named
    kept = database.with_name(f"syncd.db.schema-{older}")
    assert not kept.exists()  # nothing migrated, nothing copied
    with closing(sqlite3.connect(database)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (older,)

    assert run_cli(["sync", "--dry-run", "--config", config]) == EXIT_OK  # migrates

    said = " ".join(capsys.readouterr().err.split())
    assert (
        f"state database {database}: schema {older} is migrated to {store.SCHEMA_VERSION}, "
        f"for this syncd (syncd {version('syncd')}): " in said
    ), said
    assert f"The database as it was is kept in {kept}" in said
    assert kept.stat().st_mode & 0o777 == 0o600
    with closing(sqlite3.connect(kept)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (older,)
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    with closing(sqlite3.connect(database)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (store.SCHEMA_VERSION,)
    assert run_cli(["reports", "list", "--config", str(world.folder / "syncd.toml")]) == EXIT_OK
    assert "migrated" not in capsys.readouterr().err  # once


@pytest.mark.skipif(os.getuid() != 0, reason="needs root: it plays another user")
@pytest.mark.parametrize("left", ["database", "directory"])
def test_state_a_root_command_left_names_its_owner_and_the_fix(left: str) -> None:
    site = Path(tempfile.mkdtemp(prefix="syncd-owner-"))  # a folder another user can enter
    try:
        site.chmod(0o755)
        state = site / "state"
        store.open_engine(state / "syncd.db").dispose()  # root's dry run made them
        # The service user's own directory (writable), or one root made (mode 0755).
        state.chmod(0o777 if left == "database" else 0o755)

        said = as_nobody(lambda: store.open_engine(state / "syncd.db").dispose())

        if left == "database":
            assert said.startswith(f"state database {state}/syncd.db cannot be opened by nobody")
            assert "it belongs to root:root (mode 0600)" in said
            every = " ".join(str(p) for p in sorted(state.iterdir()))  # not only syncd.db*
            assert f"sudo chown nobody: {every})" in said, said
        else:
            assert said.startswith(f"state directory {state} is not writable by nobody")
            assert "it belongs to root:root (mode 0755)" in said
            assert f"sudo chown -R nobody: {state}" in said
        assert "sudo -u nobody syncd" in said
    finally:
        shutil.rmtree(site)


def as_nobody(use: Callable[[], None]) -> str:
    """``use()`` in a child process that is the user nobody: the error it says, or 'ok'."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no exec, so syncd's modules stay loaded
        try:
            os.setgid(65534)
            os.setuid(65534)
            try:
                use()
                said = "ok"
            except StateError as exc:
                said = str(exc)
            except Exception as exc:
                said = f"{type(exc).__name__}: {exc}"
            os.write(write, said.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, encoding="utf-8") as answer:
        said = answer.read()
    os.waitpid(pid, 0)
    return said
