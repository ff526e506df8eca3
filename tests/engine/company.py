"""A company in CSV files, syncd settings pointing at the emulator, and what the platform holds."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from syncd import snapshot as store
from syncd.config import Settings, load_settings
from syncd.emulator import RunningEmulator
from syncd.run.runner import RunRequest, RunResult, run_sync
from syncd.snapshot import sql as store_sql
from tests.support.settings import emulator_platform

EMPLOYEE_COLUMNS = [
    "id",
    "username",
    "name",
    "department",
    "positions",
    "job_title",
    "email",
    "mobile",
    "sn",
    "status",
]
DEPARTMENT_COLUMNS = ["id", "name", "parent_id"]
PATHS_HEADER = "id,username,name,department,email,mobile,status"  # the employees file, paths


def department(id: str, name: str, parent: str = "") -> dict[str, str]:
    return {"id": id, "name": name, "parent_id": parent}


def employee(id: str, username: str, dept: str, **extra: str) -> dict[str, str]:
    number = "".join(c for c in id if c.isdigit()) or "0"
    row = {
        "id": id,
        "username": username,
        "name": extra.pop("name", username.title()),
        "department": dept,
        "email": f"{username}@acme.example",
        "mobile": f"138{int(number):08d}",
        "status": "active",
    }
    row.update(extra)
    return row


def small_company() -> Company:
    return Company(
        departments=[
            department("D1", "Head Office"),
            department("D2", "R&D", "D1"),
            department("D3", "Backend", "D2"),
            department("D4", "Sales", "D1"),
        ],
        employees=[
            employee("E1", "ann", "D1", job_title="CEO"),
            employee("E2", "bob", "D2"),
            employee("E3", "cat", "D3", positions="D4"),
            employee("E4", "dan", "D4"),
            employee("E5", "eve", "D3"),
        ],
    )


@dataclass
class Company:
    departments: list[dict[str, str]]
    employees: list[dict[str, str]]

    def write(self, folder: Path) -> None:
        _write(folder / "departments.csv", DEPARTMENT_COLUMNS, self.departments)
        _write(folder / "employees.csv", EMPLOYEE_COLUMNS, self.employees)

    def person(self, username: str) -> dict[str, str]:
        return next(e for e in self.employees if e["username"] == username)

    def unit(self, id: str) -> dict[str, str]:
        return next(d for d in self.departments if d["id"] == id)

    def expected(self) -> Platform:
        """What the platform must hold once this company is synced (departed people locked)."""
        nodes = {d["id"]: (d["name"], d["parent_id"] or None) for d in self.departments}
        people: dict[str, PersonThere] = {}
        for e in self.employees:
            secondary = [p for p in e.get("positions", "").split(";") if p]
            people[e["username"]] = (
                e["name"],
                e["id"],
                e["department"],
                tuple(sorted(secondary)),
                e.get("status") == "departed",
            )
        return Platform(nodes, people)


def _write(path: Path, columns: list[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(rows)


# A person on the platform: name, extension_id, the primary node's serial_no, the other
# nodes' serials, locked.
PersonThere = tuple[str, str | None, str | None, tuple[str, ...], bool]


@dataclass
class Platform:
    """The emulator's state, by source keys: nodes by serial_no, people by username."""

    nodes: dict[str, tuple[str, str | None]]
    people: dict[str, PersonThere]
    serials: list[str] = field(default_factory=list)  # every serial_no, duplicates kept
    usernames: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, emulator: RunningEmulator) -> Platform:
        state = emulator.state()
        by_id = {n["id"]: n for n in state["nodes"]}
        serials = [n["serial_no"] for n in state["nodes"] if n.get("serial_no")]
        nodes = {}
        for n in state["nodes"]:
            if n.get("serial_no"):
                parent = by_id.get(n.get("parent_org_id"), {})
                nodes[n["serial_no"]] = (n["name"], parent.get("serial_no") or None)
        people = {}
        for e in state["employees"]:
            primary = [by_id[p["org_id"]].get("serial_no") for p in e["positions"] if p["primary"]]
            others = [
                by_id[p["org_id"]].get("serial_no") for p in e["positions"] if not p["primary"]
            ]
            people[e["username"]] = (
                e["name"],
                e.get("extension_id"),
                primary[0] if primary else None,
                tuple(sorted(others)),
                bool(e["locked"]),
            )
        return cls(nodes, people, serials, [e["username"] for e in state["employees"]])

    def same_as(self, other: Platform) -> bool:
        return self.nodes == other.nodes and self.people == other.people


@dataclass
class World:
    """One test's company, settings and emulator."""

    folder: Path
    emulator: RunningEmulator
    company: Company
    sync_settings: dict[str, Any] = field(default_factory=dict)
    more_settings: list[str] = field(default_factory=list)  # TOML lines, after [sync]
    database_url: str | None = None  # None: SQLite, syncd.db in the state directory

    def settings(self, **sync: Any) -> Settings:
        options = {**self.sync_settings, **sync}
        lines = [
            f'state_dir = "{self.folder / "state"}"',
            *([f'database_url = "{self.database_url}"'] if self.database_url else []),
            "[source]",
            'kind = "csv"',
            "[source.csv]",
            f'employees = "{self.folder / "employees.csv"}"',
            f'departments = "{self.folder / "departments.csv"}"',
            'departed_values = ["departed"]',
            *emulator_platform(self.emulator),
            "batch_size = 2",
            "[sync]",
            *(f"{key} = {json.dumps(value)}" for key, value in options.items()),
            *self.more_settings,
        ]
        path = self.folder / "syncd.toml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        path.chmod(0o600)
        return load_settings(path)

    def paths_layout(self, rows: list[str]) -> Settings:
        """The settings with the CSV layout ``paths`` (the departments are the paths the rows
        name), and the employees file: PATHS_HEADER, then ``rows``."""
        self.settings()  # writes syncd.toml, for the two-files layout
        config = self.folder / "syncd.toml"
        config.write_text(
            config.read_text(encoding="utf-8").replace(
                f'departments = "{self.folder / "departments.csv"}"', 'layout = "paths"'
            ),
            encoding="utf-8",
        )
        employees = "\n".join([PATHS_HEADER, *rows]) + "\n"
        (self.folder / "employees.csv").write_text(employees, encoding="utf-8")
        return load_settings(config)

    def sync(self, **request: Any) -> RunResult:
        self.company.write(self.folder)
        sync = request.pop("sync", {})
        return run_sync(self.settings(**sync), RunRequest(**request))

    def platform(self) -> Platform:
        return Platform.read(self.emulator)

    def engine(self) -> Engine:
        """The state database, on whichever engine this world uses."""
        return store.open_engine(self.folder / "state" / "syncd.db", self.database_url)

    def state(self) -> store.StateStore:
        """The state database's store, on whichever engine this world uses (close it)."""
        return store.StateStore.open(self.folder / "state" / "syncd.db", self.database_url)

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """A query's rows from the state database (``?`` placeholders, both engines)."""
        engine = self.engine()
        try:
            with engine.connect() as conn:
                return [tuple(row) for row in store_sql.run(conn, sql, params)]
        finally:
            engine.dispose()

    def writes(self) -> dict[str, int]:
        """Write requests the emulator has seen, by endpoint."""
        requests: dict[str, int] = self.emulator.stats()["requests"]
        return {k: n for k, n in requests.items() if k.startswith(("POST /v1/admin", "DELETE"))}
