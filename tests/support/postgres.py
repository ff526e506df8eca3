"""A real PostgreSQL server for the tests: a cluster of its own, made in a temporary
directory and started on a free 127.0.0.1 port, never the Debian ``main`` cluster.

``postgres_server`` (session): the running server. ``postgres_url``: a fresh database for
one test, owned by the role ``syncd`` (password ``PASSWORD``), and its URL.
``engine_kind`` / ``store_url``: the store's tests and a set of end-to-end tests run once
per engine; ``store_url`` is None for SQLite (syncd.db in the state directory) and a fresh
PostgreSQL database's URL otherwise.

The server runs as the ``postgres`` user when the tests run as root (PostgreSQL refuses
root), and dies with the test process: it is stopped at the session's end, and the kernel
sends it SIGINT (a fast shutdown) if pytest itself is killed (``PR_SET_PDEATHSIG``). With
no PostgreSQL installed the tests that need it fail, saying how to install it: they are
never skipped.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import psycopg
import pytest

from tests.support.processes import die_with_parent_in_own_group, free_port, wait_until_serving
from tests.support.waiting import scaled

ROLE = "syncd"
PASSWORD = "pg-secret-Zq7"  # the test role's: tests check it is never shown
START_TIMEOUT = scaled(60.0)
STOP_TIMEOUT = scaled(30.0)
_numbers = itertools.count(1)


def binaries() -> Path:
    """The newest installed PostgreSQL's bin directory; pytest.fail when there is none."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3])
    )
    if not found:
        pytest.fail(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): "
            "`make system-packages` installs Debian's postgresql"
        )
    return Path(found[-1]).parent


def _server_user() -> tuple[int, int] | None:
    """(uid, gid) to run the server as: ``postgres`` when we are root, else ourselves."""
    if os.getuid() != 0:
        return None
    entry = pwd.getpwnam("postgres")
    return entry.pw_uid, entry.pw_gid


@dataclass
class PostgresServer:
    """One running cluster: ``url(database)`` for the ``syncd`` role, ``admin()`` for the
    superuser; ``create_database()`` makes a fresh database owned by ``syncd``."""

    directory: Path
    port: int
    process: subprocess.Popen[bytes]
    host: str = "127.0.0.1"
    durable: bool = False

    def url(self, database: str, *, password: str | None = PASSWORD, driver: str = "") -> str:
        secret = f":{password}" if password is not None else ""
        scheme = "postgresql+psycopg" if driver else "postgresql"
        return f"{scheme}://{ROLE}{secret}@{self.host}:{self.port}/{database}"

    def admin(self, database: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(
            host=self.host, port=self.port, user="postgres", dbname=database, autocommit=True
        )

    def create_database(self, prefix: str = "test") -> str:
        name = f"{prefix}_{os.getpid()}_{next(_numbers)}"
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}" OWNER {ROLE}')
        return name

    def drop_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """A fast shutdown (SIGINT), then SIGKILL if it lingers; waits for the server to go."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def restart(self) -> None:
        """Stop the server and start it again on the same port and data."""
        self.stop()
        self.process = _launch(self.directory, self.port, durable=self.durable)
        _wait_until_ready(self)


def _launch(directory: Path, port: int, *, durable: bool = False) -> subprocess.Popen[bytes]:
    """The server on ``port``; ``durable``: fsync on, as a production server runs (the
    benchmarks), else off (a throw-away cluster need not survive a power cut)."""
    user = _server_user()
    speed = [] if durable else ["-c", "fsync=off", "-c", "full_page_writes=off"]
    log = (directory / "server.log").open("ab")
    process = subprocess.Popen(
        [
            str(binaries() / "postgres"),
            "-D", str(directory / "data"),
            "-p", str(port),
            "-c", "listen_addresses=127.0.0.1",
            "-c", f"unix_socket_directories={directory}",
            "-c", "max_connections=200",
            *speed,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        user=user[0] if user else None,
        group=user[1] if user else None,
        extra_groups=[] if user else None,
        # SIGINT (a fast shutdown) if the test process goes away; Ctrl-C reaches pytest,
        # which then stops the server in order.
        preexec_fn=partial(die_with_parent_in_own_group, signal.SIGINT),
        cwd=directory,
    )  # fmt: skip
    log.close()
    return process


class _ExitedAtStart(RuntimeError):
    """The server ended before it answered (its port taken, say): worth another try."""


def _wait_until_ready(server: PostgresServer) -> None:
    def probe() -> str | None:
        try:
            with server.admin():
                return None
        except psycopg.OperationalError as exc:
            return str(exc)

    def tail() -> str:
        return (server.directory / "server.log").read_text("utf-8", "replace")[-3000:]

    status = wait_until_serving(
        "PostgreSQL", server.process, probe, timeout=START_TIMEOUT, tail=tail, pause=0.05
    )
    if status is not None:
        raise _ExitedAtStart(f"PostgreSQL exited at start ({status}):\n{tail()}")


def start_server(directory: Path | None = None, *, durable: bool = False) -> PostgresServer:
    """initdb a cluster in ``directory`` (a new temporary one by default), start it on a
    free loopback port, and make the ``syncd`` role (password ``PASSWORD``); ``durable``:
    with fsync (the benchmarks), else without (the tests)."""
    bin_dir = binaries()
    directory = directory or Path(tempfile.mkdtemp(prefix="syncd-postgres-"))
    user = _server_user()
    if user is not None:
        os.chown(directory, *user)
    directory.chmod(0o700)
    result = subprocess.run(
        [str(bin_dir / "initdb"), "-D", str(directory / "data"), "-U", "postgres",
         "--auth-local=trust", "--auth-host=trust", "-E", "UTF8", "--locale=C.UTF-8",
         "--no-sync"],
        capture_output=True,
        user=user[0] if user else None,
        group=user[1] if user else None,
        extra_groups=[] if user else None,
        cwd=directory,
        check=False,
    )  # fmt: skip
    if result.returncode != 0:
        output = (result.stdout + result.stderr).decode("utf-8", "replace")
        raise RuntimeError(f"initdb failed ({result.returncode}):\n{output}")
    hba = directory / "data" / "pg_hba.conf"
    # The syncd role signs in with its password (scram); the superuser is trusted.
    hba.write_text(
        f"local all all trust\nhost all {ROLE} 127.0.0.1/32 scram-sha-256\n"
        "host all postgres 127.0.0.1/32 trust\n"
    )
    for attempt in range(5):
        port = free_port()
        process = _launch(directory, port, durable=durable)
        server = PostgresServer(directory, port, process, durable=durable)
        try:
            _wait_until_ready(server)
            break
        except _ExitedAtStart:
            if attempt == 4:
                raise
    with server.admin() as conn:
        conn.execute(f"CREATE ROLE {ROLE} LOGIN CREATEDB PASSWORD '{PASSWORD}'")
    return server


def stop_server(server: PostgresServer) -> None:
    server.stop()
    shutil.rmtree(server.directory, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = start_server()
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh database for this test, owned by ``syncd``: its URL, password included."""
    if not postgres_server.running():  # a test stopped it and failed before restarting it
        postgres_server.restart()
    name = postgres_server.create_database()
    yield postgres_server.url(name)
    with suppress(psycopg.Error):
        postgres_server.drop_database(name)


ENGINES = ("sqlite", "postgresql")


@pytest.fixture(params=ENGINES)
def engine_kind(request: pytest.FixtureRequest) -> str:
    """Each engine in turn: the test runs once on SQLite and once on PostgreSQL."""
    kind: str = request.param
    return kind


@pytest.fixture
def store_url(engine_kind: str, request: pytest.FixtureRequest) -> str | None:
    """The state database's URL for ``engine_kind``: None (SQLite in the state directory)
    or a fresh PostgreSQL database's."""
    if engine_kind == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres_url")
    return url
