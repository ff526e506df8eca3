"""kill -9 of ``syncd sync`` at many points of an apply, SIGTERM of ``syncd run``.

Each crash point is one real process killed at one moment, then a normal run:

- between and inside batches: the emulator holds each request 40 ms and the test kills
  the process once the emulator has received the Nth request to an endpoint (the way
  tests/engine/test_recovery.py does, here in the second run of a site, where every kind
  of change is planned);
- inside the state database's transactions: the process is started through
  ``killer.py``, which kills it at the Nth statement of a kind, before it runs or after
  it ran and before its transaction commits (a batch's settlement, the snapshot upserts,
  a lock, a removal, a deletion, the journal, the cursors, the run's last update).

After the normal run the platform equals the source, no serial_no and no person is there
twice, the snapshot agrees with the platform, no item is left unanswered, the killed run
is listed as interrupted by ``syncd reports list``, and one more run has nothing to do.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass

import pytest

from syncd.cli import run_cli
from syncd.errors import EXIT_OK, EXIT_PARTIAL
from syncd.run.runner import RunResult
from tests.engine.company import Company, Platform, department, employee
from tests.support.cli import SYNCD
from tests.support.runs import plan_of
from tests.support.traffic import requests_to
from tests.support.waiting import wait_until

from .support import DEADLINE, Rig, assert_converged, clean_env, sync_under_killer

SETTLE = "UPDATE run_items SET outcome = ?"  # a batch's answers, with its snapshot rows
MARK_SENT = "INSERT INTO sent_batches"


@dataclass(frozen=True)
class Point:
    """Where to kill: the Nth request to an endpoint, or the Nth statement of a kind."""

    what: str
    nth: int
    when: str = "http"  # http, or before/after the SQL statement

    def __str__(self) -> str:
        return f"{self.when}:{self.what}#{self.nth}"


POINTS = [
    # Inside the state database's transactions.
    Point("INSERT INTO run_items", 1, "after"),  # the journal, before anything is sent
    Point("UPDATE runs SET summary", 1, "after"),  # the plan's summary, same transaction
    Point(MARK_SENT, 1, "after"),  # the first batch marked sent, never sent
    Point(MARK_SENT, 6, "before"),
    Point(SETTLE, 1, "after"),  # the first departments created, their answer not recorded
    Point("INSERT INTO departments", 2, "after"),  # the second level's snapshot rows
    Point("UPDATE departments SET name_path", 1, "after"),  # a moved subtree's paths
    Point("INSERT INTO employees", 1, "after"),  # the first people's snapshot rows
    Point("INSERT INTO employees", 5, "after"),
    Point(SETTLE, 9, "before"),
    Point("UPDATE employees SET locked", 1, "after"),  # a lock recorded, not committed
    Point("DELETE FROM employees", 1, "after"),  # a removal recorded, not committed
    Point("DELETE FROM departments", 1, "after"),  # a deletion recorded, not committed
    Point("INSERT INTO cursors", 1, "after"),  # everything applied, the cursor not moved
    Point("UPDATE runs SET finished_at", 1, "before"),  # the run's own outcome never written
    # Between and inside batches, on the wire.
    Point("import-orgs", 1),
    Point("POST /v1/admin/organizations/{org_code}/{node_id}", 1),  # a rename or a move
    Point("import-employees", 4),
    Point("/lock", 1),
    Point("DELETE /v1/admin/organizations/{org_code}/{node_id}", 1),
]
LONG_POINTS = [
    *(Point(SETTLE, n, when) for n in range(2, 16) for when in ("before", "after")),
    *(Point(MARK_SENT, n, "after") for n in range(2, 16)),
    *(Point("INSERT INTO employees", n, "before") for n in range(1, 9)),
    *(Point("import-employees", n) for n in range(1, 10)),
    Point("import-orgs", 2),
    Point("INSERT INTO rejected_rows", 1, "after"),
]


def before_company() -> Company:
    return Company(
        departments=[
            department("D1", "Head Office"),
            department("D2", "R&D", "D1"),
            department("D3", "Backend", "D2"),
            department("D4", "Sales", "D1"),
            department("D5", "Legal", "D1"),
        ],
        employees=[
            employee("E1", "ann", "D1", job_title="CEO"),
            employee("E2", "bob", "D2"),
            employee("E3", "cat", "D3", positions="D4"),
            employee("E4", "dan", "D4"),
            employee("E5", "eve", "D5"),
            employee("E6", "fay", "D4"),
            *(employee(f"E{n}", f"user{n}", "D3") for n in range(10, 16)),
        ],
    )


def after_company() -> Company:
    """Every kind of change from ``before_company``: creates two levels deep, updates,
    a rename, a move, a lock, removals, a department deletion, and a bad row."""
    company = before_company()
    company.unit("D4")["name"] = "Sales & Marketing"
    company.unit("D3")["parent_id"] = "D1"
    company.departments = [d for d in company.departments if d["id"] != "D5"]
    company.departments += [department("D6", "Platform", "D3"), department("D7", "SRE", "D6")]
    company.person("fay")["status"] = "departed"
    company.person("cat")["positions"] = ""
    company.person("ann")["job_title"] = "Chair"
    company.employees = [e for e in company.employees if e["username"] not in ("eve", "user10")]
    company.employees += [employee(f"E{n}", f"user{n}", f"D{6 + n % 2}") for n in range(30, 44)]
    return company


def crash_then_recover(rig: Rig, point: Point, capsys: pytest.CaptureFixture[str]) -> None:
    rig.sync_settings.update(leaver_policy="remove", max_removal_ratio=1.0, max_removals=100)
    rig.company = before_company()
    assert rig.sync().exit_code == EXIT_OK
    rig.company = after_company()
    expected = rig.company.expected()
    rig.company.write(rig.folder)
    if point.what == "INSERT INTO rejected_rows":
        rig.company.employees.append(employee("E99", "", "D1"))  # no username: rejected
        rig.company.write(rig.folder)
    rig.write_config()
    rig.emulator.reset(data=False)  # statistics of this run only

    result = killed_then_synced(rig, point, expected)
    outcomes = [r["outcome"] for r in rig.runs()]
    assert outcomes == ["ok", "interrupted", "partial" if result.exit_code else "ok"], outcomes
    assert run_cli(["reports", "list", "--config", str(rig.config)]) == 0
    listed = capsys.readouterr().out
    assert "interrupted" in listed, listed
    assert plan_of(rig.sync()).changes == ()


def killed_then_synced(rig: Rig, point: Point, expected: Platform | None = None) -> RunResult:
    """A sync killed at ``point``, then one more with no faults: it ends well and converges."""
    if point.when == "http":
        kill_on_request(rig, point)
    else:
        kill_in_statement(rig, point)
    rig.emulator.set_faults()
    result = rig.sync()
    assert result.exit_code in (EXIT_OK, EXIT_PARTIAL), result.error
    assert_converged(rig, expected)
    return result


def kill_on_request(rig: Rig, point: Point) -> None:
    rig.emulator.set_faults(latency_ms=40)  # requests stay in flight long enough to be killed
    process = subprocess.Popen(
        [SYNCD, "sync", "--yes", "--config", str(rig.config)],
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def reached() -> bool:
            assert process.poll() is None, f"the sync ended before {point}"
            return requests_to(rig.emulator, point.what) >= point.nth

        wait_until(reached, str(point))
        os.kill(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(DEADLINE)
    assert process.returncode == -signal.SIGKILL


def kill_in_statement(rig: Rig, point: Point) -> None:
    done = sync_under_killer(rig, point.what, point.nth, point.when)
    assert done.returncode == -signal.SIGKILL, f"{point} never came:\n{done.stdout}{done.stderr}"


@pytest.mark.parametrize("point", POINTS, ids=str)
def test_a_sync_killed_at_any_point_is_resolved_by_the_next_run(
    rig: Rig, point: Point, capsys: pytest.CaptureFixture[str]
) -> None:
    crash_then_recover(rig, point, capsys)


@pytest.mark.long
@pytest.mark.parametrize("point", LONG_POINTS, ids=str)
def test_more_crash_points(rig: Rig, point: Point, capsys: pytest.CaptureFixture[str]) -> None:
    crash_then_recover(rig, point, capsys)


def test_two_crashes_in_a_row_then_a_normal_run(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run after a crash crashes too, while resolving the first one's items."""
    rig.sync_settings.update(leaver_policy="remove", max_removal_ratio=1.0, max_removals=100)
    rig.company = before_company()
    assert rig.sync().exit_code == EXIT_OK
    rig.company = after_company()
    rig.company.write(rig.folder)
    rig.write_config()
    kill_in_statement(rig, Point(SETTLE, 3, "after"))
    kill_in_statement(rig, Point(SETTLE, 2, "after"))  # the second run's own batches
    result = rig.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert_converged(rig)
    assert [r["outcome"] for r in rig.runs()] == ["ok", "interrupted", "interrupted", "ok"]
