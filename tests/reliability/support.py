"""What the reliability tests share: a configurable site, processes, and the invariants.

A ``Rig`` is ``tests.engine.company.World`` with every settings section open to the
test (platform timeouts and batch sizes, an LDAP source instead of the CSV files, top
level keys). The invariants are the promises under test: nothing twice on the platform,
the snapshot agreeing with it, nothing removed or locked by a bad read.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syncd.config import Settings, load_settings
from syncd.emulator import RunningEmulator
from syncd.snapshot import sql as store_sql
from tests.engine.company import Company, Platform, World, department, employee
from tests.support.cli import SYNCD
from tests.support.snapshot_rows import IN_FLIGHT_ITEMS
from tests.support.traffic import requests_to
from tests.support.waiting import DEADLINE as DEADLINE
from tests.support.waiting import POLL

KILLER = Path(__file__).with_name("killer.py")
WRITE_PREFIXES = ("POST /v1/admin", "DELETE /v1/admin")
TABLES = ("departments", "employees", "cursors", "tokens", "runs", "run_items", "rejected_rows")


def toml_value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)  # JSON scalars and arrays are TOML too


@dataclass
class Rig(World):
    """A World whose settings file the test shapes section by section."""

    platform_options: dict[str, Any] = field(default_factory=dict)
    top_options: dict[str, Any] = field(default_factory=dict)
    source_lines: list[str] | None = None  # replaces the CSV [source] section when set
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)  # more [sections]

    @property
    def config(self) -> Path:
        return self.folder / "syncd.toml"

    @property
    def database(self) -> Path:
        return self.folder / "state" / "syncd.db"

    def settings_text(self, **sync: Any) -> str:
        platform = {
            "base_url": self.emulator.base_url,
            "domain_id": "acme",
            "org_code": "acme",
            "client_id": "syncd",
            "client_secret": "demo-secret",
            "org_id": "acme",
            "retry_backoff": 0.01,
            "retry_backoff_max": 0.05,
            "batch_size": 2,
            **self.platform_options,
        }
        top = {
            "state_dir": str(self.folder / "state"),
            "database_url": self.database_url,
            **self.top_options,
        }
        source = self.source_lines or [
            "[source]",
            'kind = "csv"',
            "[source.csv]",
            f"employees = {toml_value(str(self.folder / 'employees.csv'))}",
            f"departments = {toml_value(str(self.folder / 'departments.csv'))}",
            'departed_values = ["departed"]',
        ]
        options = {**self.sync_settings, **sync}
        lines = [f"{k} = {toml_value(v)}" for k, v in top.items() if v is not None]
        lines += source
        lines += ["[platform]"]
        lines += [f"{k} = {toml_value(v)}" for k, v in platform.items() if v is not None]
        lines += ["[sync]", *(f"{k} = {toml_value(v)}" for k, v in options.items())]
        for name, section in self.sections.items():
            lines += [f"[{name}]", *(f"{k} = {toml_value(v)}" for k, v in section.items())]
        return "\n".join(lines) + "\n"

    def settings(self, **sync: Any) -> Settings:
        self.write_config(**sync)
        return load_settings(self.config)

    def write_config(self, **sync: Any) -> Path:
        self.config.write_text(self.settings_text(**sync), encoding="utf-8")
        self.config.chmod(0o600)
        return self.config

    # ------------------------------------------------------------ processes

    def cli(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``syncd ARGS --config <this rig's file>``, run to its end."""
        return subprocess.run(
            [SYNCD, *args, "--config", str(self.config)],
            env=clean_env(env),
            capture_output=True,
            text=True,
            timeout=DEADLINE * 2,
            check=False,
        )

    def writes(self) -> dict[str, int]:
        return writes(self.emulator)

    def runs(self) -> list[dict[str, Any]]:
        return self.rows("SELECT * FROM runs ORDER BY id")

    def rows(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        """A query's rows as dicts (``?`` placeholders, no ``%`` in ``sql``): the SQLite
        file read directly, or the PostgreSQL database through the store's engine."""
        if self.database_url is None:
            return query(self.database, sql, *args)
        engine = self.engine()
        try:
            with engine.connect() as conn:
                return [dict(r) for r in store_sql.run(conn, sql, args).mappings()]
        finally:
            engine.dispose()

    def admin_view(self) -> dict[str, tuple[str, bool]]:
        """Each person on the platform: the name of their primary node, and locked."""
        state = self.emulator.state()
        names = {n["id"]: n["name"] for n in state["nodes"]}
        return {
            e["username"]: (
                next(names[p["org_id"]] for p in e["positions"] if p["primary"]),
                bool(e["locked"]),
            )
            for e in state["employees"]
        }


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNCD_", "NOTIFY_"))}
    env.pop("CREDENTIALS_DIRECTORY", None)
    return {**env, **(extra or {})}


def sync_under_killer(rig: Rig, sql: str, nth: int, when: str) -> subprocess.CompletedProcess[str]:
    """``syncd sync`` run by killer.py, which SIGKILLs it at the ``nth`` SQL statement holding
    ``sql`` (``when``: before or after it runs)."""
    return subprocess.run(
        [sys.executable, str(KILLER), "sync", "--yes", "--config", str(rig.config)],
        env=clean_env({"KILL_SQL": sql, "KILL_NTH": str(nth), "KILL_WHEN": when}),
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )


def writes(emulator: RunningEmulator) -> dict[str, int]:
    """Write requests the emulator has seen, by endpoint."""
    requests: dict[str, int] = emulator.stats()["requests"]
    return {k: n for k, n in requests.items() if k.startswith(WRITE_PREFIXES)}


def query(database: Path, sql: str, *args: Any) -> list[dict[str, Any]]:
    with closing(sqlite3.connect(database, timeout=30)) as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute(sql, args)]


def rejected(rig: Rig, run_id: int) -> list[dict[str, Any]]:
    """The rows run ``run_id`` set aside, in the order it found them."""
    return query(rig.database, "SELECT * FROM rejected_rows WHERE run_id = ? ORDER BY seq", run_id)


def tables(database: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the state database, to compare before and after."""
    if not database.exists():
        return {}
    with closing(sqlite3.connect(database, timeout=30)) as db:
        every = {}
        for table in TABLES:
            rows = db.execute(f"SELECT * FROM {table}").fetchall()  # noqa: S608 - our names
            every[table] = sorted(rows, key=repr)
        return every


def snapshot_tables(database: Path) -> dict[str, list[tuple[Any, ...]]]:
    """What syncd believes it pushed: departments, employees and cursors."""
    every = tables(database)
    return {t: every[t] for t in ("departments", "employees", "cursors")}


# ---------------------------------------------------------------- invariants


def assert_nothing_twice(emulator: RunningEmulator) -> None:
    platform = Platform.read(emulator)
    serials = sorted(platform.serials)
    usernames = sorted(platform.usernames)
    assert serials == sorted(set(serials)), f"a serial_no twice: {serials}"
    assert usernames == sorted(set(usernames)), f"a person twice: {usernames}"


def assert_snapshot_agrees(database: Path, emulator: RunningEmulator) -> None:
    """Node ids by serial_no and employee ids by username: the state database and the platform."""
    state = emulator.state()
    nodes = {r["source_id"]: r["node_id"] for r in query(database, "SELECT * FROM departments")}
    people = {r["username"]: r["employee_id"] for r in query(database, "SELECT * FROM employees")}
    assert nodes == {n["serial_no"]: n["id"] for n in state["nodes"] if n.get("serial_no")}
    assert people == {e["username"]: e["id"] for e in state["employees"]}
    assert not query(database, IN_FLIGHT_ITEMS)


def assert_converged(rig: Rig, expected: Platform | None = None) -> None:
    """The platform equals the source, nothing twice, the snapshot agrees, nothing left to do."""
    assert_nothing_twice(rig.emulator)
    platform = rig.platform()
    wanted = expected or rig.company.expected()
    assert platform.nodes == wanted.nodes
    assert platform.people == wanted.people
    assert_snapshot_agrees(rig.database, rig.emulator)


# ---------------------------------------------------------------- waiting


@contextmanager
def when_requests(
    emulator: RunningEmulator, fragment: str, count: int, action: Callable[[], object]
) -> Iterator[threading.Event]:
    """In a thread: once the emulator has seen ``count`` requests to ``fragment``, ``action()``.

    The event is set once the action ran; the thread is joined when the block ends.
    """
    done = threading.Event()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            if requests_to(emulator, fragment) >= count:
                action()
                done.set()
                return
            stop.wait(POLL)

    thread = threading.Thread(target=watch, name="when-requests", daemon=True)
    thread.start()
    try:
        yield done
    finally:
        stop.set()
        thread.join(DEADLINE)


# ---------------------------------------------------------------- companies


def big_company(people: int, departments: int = 50) -> Company:
    """Departments two levels deep and ``people`` spread over them."""
    units = [department("D0", "Head Office")]
    units += [
        department(f"D{n}", f"Unit {n}", "D0" if n < 10 else f"D{n % 9 + 1}")
        for n in range(1, departments)
    ]
    staff = [employee(f"E{n}", f"user{n}", f"D{n % departments}") for n in range(1, people + 1)]
    return Company(units, staff)


def figure_kinds(figures: Mapping[str, int], prefix: str) -> str:
    """A suite's figures whose names start with ``prefix``, as ``name count, ...``."""
    found = sorted((k, n) for k, n in figures.items() if k.startswith(prefix))
    return ", ".join(f"{k.removeprefix(prefix)} {n}" for k, n in found) or "none"
