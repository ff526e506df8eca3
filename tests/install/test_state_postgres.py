"""The state database on PostgreSQL (``database_url``): what differs from SQLite, on a real
server (tests/support/postgres.py): one writer at a time across processes, the URL's
password shown nowhere, a server gone or restarted, backups left to pg_dump."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy import Engine, text

from syncd import snapshot as store
from syncd.cli import run_cli
from syncd.config import Settings, load_settings
from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_FAILED, EXIT_OK, ConfigError, StateError
from syncd.snapshot import SCHEMA_VERSION, postgres
from tests.engine.company import World, small_company
from tests.support.postgres import PASSWORD, PostgresServer


@pytest.fixture
def engine(tmp_path: Path, postgres_url: str) -> Iterator[Engine]:
    opened = store.open_engine(tmp_path / "state" / "syncd.db", postgres_url)
    yield opened
    opened.dispose()


@pytest.fixture
def world(tmp_path: Path, emulator: RunningEmulator, postgres_url: str) -> World:
    return World(tmp_path, emulator, small_company(), database_url=postgres_url)


SOURCE = {
    "kind": "csv",
    "csv": {"employees": "e.csv", "departments": "d.csv", "departed_values": ["departed"]},
}


def _start(engine: Engine) -> int:
    return store.start_run(
        engine, trigger="shell", mode="apply", read="full", source="test", started_at=0
    )


def test_the_open_engine_shows_no_password(engine: Engine) -> None:
    shown = [repr(engine), str(engine.url), repr(engine.url), store.describe(engine)]
    assert all(PASSWORD not in text for text in shown), shown
    assert store.describe(engine).endswith("(PostgreSQL)")
    assert engine.url.render_as_string(hide_password=False).count(PASSWORD) == 1  # it is there


def test_the_schema_version_is_kept_in_its_table_and_a_newer_one_is_refused(
    tmp_path: Path, postgres_url: str
) -> None:
    engine = store.open_engine(tmp_path / "state" / "syncd.db", postgres_url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version FROM syncd_schema")).all() == [(SCHEMA_VERSION,)]
    with store.write(engine) as conn:
        conn.execute(text("UPDATE syncd_schema SET version = :v"), {"v": SCHEMA_VERSION + 1})
    engine.dispose()
    with pytest.raises(StateError, match=r"newer than this syncd .*upgrade syncd"):
        store.open_engine(tmp_path / "state" / "syncd.db", postgres_url)
    assert not (tmp_path / "state" / "syncd.db").exists()  # no SQLite file made beside it


def test_run_ids_from_many_writers_at_once_are_all_distinct(
    tmp_path: Path, postgres_url: str
) -> None:
    """write() takes the one write lock first, as SQLite's BEGIN IMMEDIATE does: run ids
    (the newest id + 1, read and written in one transaction) are never given twice."""
    engines = [store.open_engine(tmp_path / "state" / "syncd.db", postgres_url) for _ in range(6)]
    barrier = threading.Barrier(len(engines))
    found: list[int] = []
    failures: list[BaseException] = []

    def start(engine: Engine) -> None:
        try:
            barrier.wait()
            for _ in range(5):
                found.append(_start(engine))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=start, args=(e,)) for e in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for engine in engines:
        engine.dispose()
    assert failures == []
    assert sorted(found) == list(range(1, 31))


def test_a_writer_waits_for_the_write_lock_another_holds(engine: Engine) -> None:
    released = threading.Event()
    done: list[int] = []
    with store.write(engine) as conn:
        store.set_cursor(conn, "first", "1")

        def second() -> None:
            with store.write(engine) as other:
                done.append(len(other.execute(text("SELECT name FROM cursors")).all()))
            released.set()

        waiter = threading.Thread(target=second)
        waiter.start()
        deadline = time.monotonic() + 30
        while not _waiting_for_advisory_lock(engine):  # the second writer is blocked
            assert time.monotonic() < deadline, "the second writer never waited for the lock"
        assert done == []
    waiter.join(30)
    assert released.is_set() and done == [1]  # it wrote after the first committed, seeing it


def _waiting_for_advisory_lock(engine: Engine) -> bool:
    with engine.connect() as conn:
        return bool(
            conn.execute(
                text(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                    "AND database = (SELECT oid FROM pg_database "
                    "WHERE datname = current_database())"
                )
            ).scalar()
        )


def test_a_bad_or_unreachable_database_is_one_clear_error_without_the_password(
    tmp_path: Path, postgres_server: PostgresServer, postgres_url: str
) -> None:
    path = tmp_path / "state" / "syncd.db"
    name = postgres_url.rsplit("/", 1)[1]
    closed = f"postgresql://syncd:{PASSWORD}@127.0.0.1:1/{name}"
    cases = {
        closed: "on 127.0.0.1:1 (PostgreSQL): the server cannot be used",
        postgres_server.url(name, password="wrong-" + PASSWORD): "password authentication failed",
        postgres_server.url("no_such_database"): 'database "no_such_database" does not exist',
        f"postgresql://syncd:{PASSWORD}@127.0.0.1:port/{name}": "not a PostgreSQL URL",
        f"mysql://syncd:{PASSWORD}@127.0.0.1/{name}": "is not PostgreSQL",
    }
    for url, expected in cases.items():
        with pytest.raises(StateError) as caught:
            store.open_engine(path, url)
        shown = str(caught.value)
        assert expected in shown, shown
        chain: BaseException | None = caught.value
        while chain is not None:  # neither the error nor its causes quote the password
            assert PASSWORD not in str(chain) and PASSWORD not in repr(chain), repr(chain)
            chain = chain.__cause__ or chain.__context__


def test_libpq_password_sources_work_with_no_password_in_the_url(
    tmp_path: Path,
    postgres_server: PostgresServer,
    postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = postgres_url.rsplit("/", 1)[1]
    bare = postgres_server.url(name, password=None)
    with pytest.raises(StateError, match="password"):
        store.open_engine(tmp_path / "state" / "syncd.db", bare)
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    store.open_engine(tmp_path / "state" / "syncd.db", bare).dispose()
    monkeypatch.delenv("PGPASSWORD")
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{postgres_server.port}:{name}:syncd:{PASSWORD}\n")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    store.open_engine(tmp_path / "state" / "syncd.db", bare).dispose()


def test_the_url_is_a_secret_of_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"postgresql+psycopg://syncd:{PASSWORD}@db.example:6432/syncd"
    monkeypatch.setenv("SYNCD_DATABASE_URL", url)
    settings = Settings.model_validate({"source": SOURCE, "platform": None})
    assert settings.database_url is not None
    assert settings.database_url.get_secret_value() == url
    assert PASSWORD in settings.secret_values() and url in settings.secret_values()
    assert PASSWORD not in repr(settings) and PASSWORD not in str(settings.model_dump())
    assert settings.database_place == "syncd on db.example:6432 (PostgreSQL)"
    monkeypatch.setenv("SYNCD_DATABASE_URL", f"mysql://syncd:{PASSWORD}@db/syncd")
    with pytest.raises(ValidationError):
        Settings.model_validate({"source": SOURCE, "platform": None})
    config = tmp_path / "syncd.toml"
    config.write_text(
        '[source]\nkind = "csv"\n[source.csv]\nemployees = "e.csv"\n'
        'departments = "d.csv"\ndeparted_values = ["departed"]\n'
    )
    with pytest.raises(ConfigError) as caught:  # as syncd tells it
        load_settings(config, platform=False)
    assert "key database_url: Value error, a PostgreSQL URL is expected" in str(caught.value)
    assert "SYNCD_DATABASE_URL" in str(caught.value) and PASSWORD not in str(caught.value)


def test_sync_status_and_logs_never_show_the_password(
    world: World, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    assert world.sync().exit_code == EXIT_OK
    config = str(world.folder / "syncd.toml")
    out, err = "", ""
    for command in (
        ["sync", "--yes"],
        ["status"],
        ["status", "--output", "json"],
        ["reports", "list"],
        ["reports", "show", "latest"],
    ):
        code = run_cli([*command, "--config", config])
        shown = capsys.readouterr()
        assert code == EXIT_OK, (command, shown.err)
        out, err = out + shown.out, err + shown.err
    assert PASSWORD not in out + err + caplog.text
    assert "run 2: ok" in out and '"id": 2' in out, out  # read back from PostgreSQL


def test_backup_says_to_use_pg_dump_and_compact_vacuums(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    assert world.sync().exit_code == EXIT_OK
    config = str(world.folder / "syncd.toml")
    target = world.folder / "copy.db"
    assert run_cli(["state", "backup", str(target), "--config", config]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert "pg_dump" in err and "(PostgreSQL)" in err and PASSWORD not in err, err
    assert not target.exists()
    engine = world.engine()
    try:
        assert store.compact(engine, world.folder / "state" / "syncd.db") >= 0
    finally:
        engine.dispose()


def test_a_restarted_server_fails_one_statement_clearly_and_the_next_one_reconnects(
    engine: Engine, postgres_server: PostgresServer
) -> None:
    run_id = _start(engine)
    postgres_server.stop()
    try:
        with pytest.raises(StateError) as caught:
            store.run_summary(engine, run_id)
        shown = str(caught.value)
        assert f"on 127.0.0.1:{postgres_server.port} (PostgreSQL)" in shown, shown
        assert PASSWORD not in shown
    finally:
        postgres_server.restart()
    # The pool's connections died with the server: fresh ones are opened (pool_pre_ping).
    assert _start(engine) == run_id + 1
    store.finish_run(engine, run_id + 1, outcome="ok", exit_code=0, finished_at=1, summary="{}")
    assert store.run_summary(engine, run_id + 1) == {}


def test_a_sync_after_the_server_restarted_under_the_daemons_engine(
    world: World, postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon keeps one engine for its life: a server restarted between two runs must
    not wedge it. Its runs are minutes apart: its connections are tested before use."""
    from syncd.run.runner import RunRequest, run_sync

    monkeypatch.setattr(postgres, "IDLE_BEFORE_PING_S", 0.0)  # the runs far apart

    settings = world.settings()
    world.company.write(world.folder)
    with store.StateStore.open(settings.database, settings.database_url) as state:
        assert run_sync(settings, RunRequest(), state=state).exit_code == EXIT_OK
        postgres_server.restart()
        world.company.person("bob")["mobile"] = "13900000042"
        world.company.write(world.folder)
        assert run_sync(settings, RunRequest(), state=state).exit_code == EXIT_OK
    assert world.platform().same_as(world.company.expected())


def test_token_renewals_take_turns_under_the_servers_lock(engine: Engine) -> None:
    tokens = store.TokenStore(engine)
    fetched: list[str] = []

    def fetch() -> store.CachedToken:
        fetched.append("one")
        return store.CachedToken(f"token-{len(fetched)}", 2**41)

    first = tokens.renew("app#1", None, fetch, 0)
    tokens.flush()
    other = store.TokenStore(engine)  # another process: takes the stored token, fetches none
    assert other.renew("app#1", None, fetch, 0) == first and len(fetched) == 1
    assert other.get("app#1") == first
    with engine.connect() as conn:  # the session lock is let go after each renewal
        held = conn.execute(
            text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = :k"),
            {"k": postgres.TOKEN_LOCK & 0xFFFFFFFF},
        ).scalar()
    assert held == 0


def test_the_test_cluster_listens_on_loopback_and_its_own_socket_directory(
    postgres_server: PostgresServer,
) -> None:
    assert postgres_server.running()
    with postgres_server.admin() as conn:
        rows = conn.execute(
            "SELECT name, setting FROM pg_settings "
            "WHERE name IN ('listen_addresses', 'unix_socket_directories')"
        ).fetchall()
    settings = {str(name): str(value) for name, value in rows}
    assert settings == {
        "listen_addresses": "127.0.0.1",
        "unix_socket_directories": str(postgres_server.directory),
    }


def test_the_metrics_textfile_reads_its_gauges_from_postgresql(world: World) -> None:
    from syncd.service.metrics import write_textfile

    assert world.sync().exit_code == EXIT_OK
    assert world.sync(dry_run=True).exit_code == EXIT_OK  # dry runs are left out
    with world.state() as state:
        write_textfile(state, world.folder / "syncd.prom")
    gauges = (world.folder / "syncd.prom").read_text()
    assert 'syncd_source_records{kind="employee"} 5.0' in gauges, gauges
    assert "syncd_last_success_timestamp_seconds" in gauges
