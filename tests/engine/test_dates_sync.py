"""Effective dates, whole syncs: CSV files with start and end date columns, the emulator over
HTTP, a real state database; each run is given its time (RunRequest.now_ms), never slept for.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path

from syncd import snapshot as store
from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_OK
from syncd.report import render_html, render_json
from syncd.report.text import render_text
from syncd.run.runner import RunResult
from syncd.run.runs import load_report
from tests.engine.company import (
    DEPARTMENT_COLUMNS,
    EMPLOYEE_COLUMNS,
    Company,
    World,
    _write,
    employee,
    small_company,
)

DATES = [
    "[sync.dates]",
    'time_zone = "Europe/Paris"',
    "create_days_before_start = 3",
    'before_start = "locked"',
    "[source.csv.columns]",
    'start_date = "start_date"',
    'end_date = "end_date"',
]


class DatedCompany(Company):
    def write(self, folder: Path) -> None:
        _write(folder / "departments.csv", DEPARTMENT_COLUMNS, self.departments)
        _write(
            folder / "employees.csv", [*EMPLOYEE_COLUMNS, "start_date", "end_date"], self.employees
        )


def at(text: str) -> int:
    moment = dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def dated_world(world: World) -> World:
    company = DatedCompany(world.company.departments, world.company.employees)
    company.person("ann")["end_date"] = "2026-12-31"
    company.employees.append(employee("E6", "fay", "D2", start_date="2027-01-04"))
    world.company = company
    world.more_settings = DATES
    world.sync_settings["max_removal_ratio"] = 1.0  # a tiny company: 1 of 9 records is 11%
    return world


def sync(world: World, when: str) -> RunResult:
    result = world.sync(now_ms=at(when))
    assert (result.outcome, result.exit_code) == ("ok", EXIT_OK), result.error
    return result


def locked(world: World, username: str) -> bool:
    return world.platform().people[username][4]


def test_future_hires_and_end_dates_take_effect_at_their_hour_in_the_zone(
    tmp_path: Path, emulator: RunningEmulator, store_url: str | None
) -> None:
    """On both engines: the dates are recorded and read back by SQL written for both."""
    world = dated_world(World(tmp_path, emulator, small_company(), database_url=store_url))
    first = sync(world, "2026-12-20T09:00")
    _nothing_is_done_before_the_dates(world, first)
    _the_report_shows_them_scheduled_not_done(world, first)
    assert world.query("SELECT * FROM effective_dates") == [("E1", None, "2026-12-31")]
    _the_eve_changes_nothing(world)
    _midnight_ends_ann_and_opens_fays_window(world)
    _a_dropped_row_stays_locked(world)
    _fays_first_day_unlocks_her(world)


def _nothing_is_done_before_the_dates(world: World, first: RunResult) -> None:
    people = world.platform().people
    assert "fay" not in people  # her window opens on 2027-01-01 in Paris
    assert not people["ann"][4]
    assert first.plan is not None
    assert [(s.display, s.action) for s in first.plan.scheduled] == [
        ("ann", "lock"),
        ("fay", "create"),
    ]


def _the_report_shows_them_scheduled_not_done(world: World, first: RunResult) -> None:
    """The report: scheduled, not done; not counted among the changes."""
    with world.state() as state:
        report = load_report(state, first.run_id)
    text = render_text(report)
    assert (
        "scheduled: ann: lock at 2027-01-01 00:00 Europe/Paris "
        "(the end of 2026-12-31, the end date)" in text
    )
    assert "scheduled: fay: create at 2027-01-01 00:00 Europe/Paris, locked until" in text
    page = render_html(report)
    assert "Scheduled, not done (2)" in page
    assert "create at 2027-01-01 00:00 Europe/Paris, locked until" in page
    document = json.loads(render_json(report))
    assert document["scheduled"]["count"] == 2
    assert document["scheduled"]["items"][0]["at"].startswith("2026-12-31T23:00:00")
    assert "lock" not in document["totals"]["by_action"]


def _the_eve_changes_nothing(world: World) -> None:
    """23:59 in Paris on the 31st: nothing yet. The second such run does not even read the
    unchanged file: the memo of the first holds until the next scheduled moment."""
    assert sync(world, "2026-12-31T22:00").plan.changes == ()  # type: ignore[union-attr]
    before = sync(world, "2026-12-31T22:59")
    assert before.plan is not None and before.plan.changes == ()
    assert before.directory is None  # not read: unchanged since the run before
    assert [(s.display, s.action) for s in before.plan.scheduled] == [
        ("ann", "lock"),
        ("fay", "create"),
    ]  # still told, as the run that read the file found it
    assert not locked(world, "ann") and "fay" not in world.platform().people


def _midnight_ends_ann_and_opens_fays_window(world: World) -> None:
    """Midnight in Paris: ann's end date is over, fay's window opens."""
    midnight = sync(world, "2026-12-31T23:00")
    assert midnight.plan is not None
    assert {(c.action.value, c.display) for c in midnight.plan.changes} == {
        ("lock", "ann"),
        ("create", "fay"),
        ("lock", "fay"),
    }
    assert locked(world, "ann") and locked(world, "fay")
    reasons = dict(world.query("SELECT username, lock_reason FROM employees WHERE locked"))
    assert reasons == {"ann": "ended", "fay": "not_started"}


def _a_dropped_row_stays_locked(world: World) -> None:
    """HR drops ann's row: she stays locked."""
    world.company.employees.remove(world.company.person("ann"))
    sync(world, "2027-01-02T09:00")
    assert locked(world, "ann")


def _fays_first_day_unlocks_her(world: World) -> None:
    """fay's first day: unlocked at midnight in Paris, and not counted as a re-activation."""
    sync(world, "2027-01-03T22:59")
    assert locked(world, "fay")
    start = sync(world, "2027-01-03T23:00")
    assert start.plan is not None
    assert [(c.action.value, c.display) for c in start.plan.changes] == [("unlock", "fay")]
    assert all(g.name != "max_reactivations" for g in start.guards)
    assert not locked(world, "fay")


def test_a_bad_date_rejects_that_row_and_the_rest_syncs(world: World) -> None:
    world = dated_world(world)
    world.company.person("bob")["end_date"] = "31/12/2026"
    result = sync(world, "2026-12-20T09:00")
    assert result.directory is not None
    (row,) = result.directory.rejected
    assert row.where.endswith("employees.csv:3")
    assert row.reason == "column 'end_date': '31/12/2026' is not a date (YYYY-MM-DD)"
    assert row.key == "E2" and not row.may_hide_rows
    people = world.platform().people
    assert "bob" not in people and "ann" in people  # the rest is synced


def test_a_state_database_from_before_dates_is_migrated_and_records_them(world: World) -> None:
    world = dated_world(world)
    sync(world, "2026-12-20T09:00")
    database = world.folder / "state" / "syncd.db"
    with sqlite3.connect(database) as db:  # as syncd before effective dates left it
        db.execute("DROP TABLE effective_dates")
        db.execute("PRAGMA user_version = 7")
    sync(world, "2026-12-21T09:00")
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (store.SCHEMA_VERSION,)
        assert db.execute("SELECT * FROM effective_dates").fetchall() == [
            ("E1", None, "2026-12-31")
        ]
    # Gone from the state with the person: ann removed from the platform and the source.
    world.sync_settings.update(leaver_policy="remove")
    world.company.employees.remove(world.company.person("ann"))
    sync(world, "2026-12-22T09:00")
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT * FROM effective_dates").fetchall() == []
