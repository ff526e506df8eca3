"""Faults on the platform's side, injected by the emulator, during whole syncs.

Each test runs real syncs (the runner in this process, or ``syncd sync`` as a process)
against the emulator over HTTP and checks the promises: the platform ends equal to the
source, nothing is created twice, the snapshot agrees with the platform, and the report
says what happened (retries, failures, their text).
"""

from __future__ import annotations

import json
import logging
import re

import pytest

from syncd import snapshot as store
from syncd.errors import EXIT_FAILED, EXIT_OK, EXIT_PARTIAL
from syncd.run.runner import RunRequest, run_sync
from tests.engine.company import employee
from tests.support.runs import plan_of
from tests.support.waiting import wait_until

from .support import (
    Rig,
    assert_converged,
    assert_nothing_twice,
    big_company,
    query,
    snapshot_tables,
    when_requests,
)

IMPORT_EMPLOYEES = "import-employees"
IMPORT_ORGS = "import-orgs"


def summary_of(rig: Rig, run_id: int) -> dict[str, object]:
    (row,) = query(rig.database, "SELECT summary FROM runs WHERE id = ?", run_id)
    summary: dict[str, object] = json.loads(row["summary"])
    return summary


def test_ten_thousand_people_through_5pc_http_500_and_5pc_429(rig: Rig) -> None:
    rig.company = big_company(10_000)
    rig.platform_options.update(
        batch_size=200, concurrency=4, retry_attempts=8, retry_backoff=0.01, retry_backoff_max=0.05
    )
    # Retry-After says 1 s, longer than the longest backoff (0.05 s): waited in full.
    rig.emulator.set_faults(seed=11, http_500_rate=0.05, http_429_rate=0.05, retry_after=1)

    result = rig.sync()

    assert result.exit_code == EXIT_OK, result.error
    stats = rig.emulator.stats()
    injected = stats["faults"].get("http_500", 0) + stats["faults"].get("http_429", 0)
    assert stats["faults"].get("http_500", 0) > 0 and stats["faults"].get("http_429", 0) > 0
    summary = summary_of(rig, result.run_id)
    # Every faulted request was sent once more, and nothing else was: the client's count.
    assert summary["retries"] == injected
    calls = summary["calls"]
    assert isinstance(calls, dict) and sum(calls.values()) == stats["total_requests"]
    rig.emulator.set_faults()
    assert_converged(rig)
    shown = rig.cli("reports", "show", str(result.run_id))
    assert shown.returncode == 0, shown.stderr
    assert f"{injected} retries" in shown.stdout


def test_a_platform_down_for_the_whole_run_fails_cleanly_and_the_next_run_completes(
    rig: Rig,
) -> None:
    rig.platform_options.update(retry_attempts=3)
    assert rig.sync().exit_code == EXIT_OK
    rig.company.person("bob")["name"] = "Robert"
    rig.company.employees.append(employee("E9", "ivy", "D2"))
    rig.company.write(rig.folder)
    rig.write_config()
    before = snapshot_tables(rig.database)
    platform_before = rig.platform()
    rig.emulator.set_faults(down=True)

    done = rig.cli("sync", "--yes")

    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr
    assert "unavailable" in done.stderr and "503" in done.stderr
    assert snapshot_tables(rig.database) == before
    assert rig.platform().same_as(platform_before)
    last = rig.runs()[-1]
    assert (last["outcome"], last["exit_code"]) == ("failed", EXIT_FAILED)
    assert "unavailable" in json.loads(last["summary"])["error"]
    listed = rig.cli("reports", "list")
    assert re.search(rf"^\s*{last['id']}\b.*failed", listed.stdout, re.M), listed.stdout

    rig.emulator.set_faults()
    again = rig.cli("sync", "--yes")
    assert again.returncode == EXIT_OK, again.stdout + again.stderr
    assert_converged(rig)


def test_a_platform_that_goes_down_during_the_apply_keeps_what_landed(rig: Rig) -> None:
    rig.company = big_company(60, departments=6)
    rig.platform_options.update(retry_attempts=2, batch_size=5, concurrency=1)
    rig.emulator.set_faults(latency_ms=20)
    with when_requests(
        rig.emulator, IMPORT_EMPLOYEES, 4, lambda: rig.emulator.set_faults(down=True)
    ) as went_down:
        result = rig.sync()
    assert went_down.is_set()
    assert (result.outcome, result.exit_code) == ("failed", EXIT_FAILED)
    rig.emulator.set_faults()
    # What landed is in the snapshot; nothing was left unanswered.
    assert_nothing_twice(rig.emulator)
    landed = {e["username"] for e in rig.emulator.state()["employees"]}
    synced = {r["username"] for r in query(rig.database, "SELECT username FROM employees")}
    assert synced == landed and 0 < len(landed) < 60
    assert rig.sync().exit_code == EXIT_OK
    assert_converged(rig)


@pytest.mark.parametrize(
    ("fault", "endpoint"),
    [
        ("drop_before", IMPORT_ORGS),
        ("drop_after", IMPORT_ORGS),
        ("timeout", IMPORT_ORGS),
        ("drop_before", IMPORT_EMPLOYEES),
        ("drop_after", IMPORT_EMPLOYEES),
        ("timeout", IMPORT_EMPLOYEES),
    ],
)
def test_a_lost_answer_is_resent_and_lands_once(rig: Rig, fault: str, endpoint: str) -> None:
    rig.company = big_company(12, departments=4)
    rig.platform_options.update(batch_size=4, timeout=0.5)
    if fault == "timeout":  # the answer comes after the client stopped waiting
        rule = {"match": endpoint, "fault": "latency", "latency_ms": 1500, "count": 2}
    else:
        rule = {"match": endpoint, "fault": fault, "count": 2}
    rig.emulator.set_faults(scripted=[rule])

    result = rig.sync()

    assert result.exit_code == EXIT_OK, result.error
    assert summary_of(rig, result.run_id)["retries"] == 2
    if fault == "timeout":  # the late originals are processed too: let them land first
        wait_until(lambda: rig.emulator.stats()["faults"].get("latency", 0) == 2, "latency")
    assert_converged(rig)
    items = query(rig.database, "SELECT outcome FROM run_items WHERE run_id = ?", result.run_id)
    assert {i["outcome"] for i in items} == {"ok"}


def test_every_kind_of_write_survives_lost_answers(rig: Rig) -> None:
    """Renames, moves, locks, unlocks, removals and deletions with many answers lost."""
    rig.sync_settings.update(leaver_policy="remove", max_removal_ratio=1.0, max_removals=100)
    rig.platform_options.update(retry_attempts=12)
    rig.company.employees.append(employee("E6", "fay", "D4"))
    rig.company.departments.append({"id": "D5", "name": "Legal", "parent_id": "D1"})
    assert rig.sync().exit_code == EXIT_OK
    rig.company.person("fay")["status"] = "departed"
    assert rig.sync().exit_code == EXIT_OK
    company = rig.company
    company.unit("D4")["name"] = "Sales & Marketing"  # rename
    company.unit("D3")["parent_id"] = "D1"  # move
    company.person("fay")["status"] = "active"  # unlock
    company.person("dan")["status"] = "departed"  # lock
    company.employees = [e for e in company.employees if e["username"] != "eve"]  # remove
    company.person("cat")["positions"] = ""  # update
    company.departments = [d for d in company.departments if d["id"] != "D5"]  # delete
    company.departments.append({"id": "D6", "name": "Audit", "parent_id": "D3"})  # create
    company.person("bob")["department"] = "D6"
    rig.emulator.set_faults(seed=3, drop_after_rate=0.35, drop_rate=0.15)

    # fay back beside dan who leaves looks like a status column shifted by a row: reviewed.
    result = rig.sync(allow_reactivations=1)

    assert result.exit_code == EXIT_OK, result.error
    faults = rig.emulator.stats()["faults"]
    assert faults.get("drop_after", 0) > 0 and faults.get("drop_before", 0) > 0
    actions = {c.action.value for c in plan_of(result).changes}
    assert actions >= {"create", "update", "move", "lock", "unlock", "remove", "delete"}
    assert summary_of(rig, result.run_id)["retries"] == sum(faults.values())
    rig.emulator.set_faults()
    assert_converged(rig)
    assert plan_of(rig.sync()).changes == ()


def test_a_token_taken_by_another_process_mid_run_is_renewed_once(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.company = big_company(80, departments=4)
    rig.platform_options.update(batch_size=8, concurrency=4)
    rig.emulator.set_faults(latency_ms=30)  # requests in flight when the token changes hands
    caplog.set_level(logging.INFO, logger="syncd")
    with when_requests(rig.emulator, IMPORT_EMPLOYEES, 3, rig.emulator.issue_token) as taken:
        result = rig.sync()

    assert taken.is_set()
    assert result.exit_code == EXIT_OK, result.error
    # syncd's first token, the other process's, and one renewal: no more.
    assert rig.emulator.state()["tokens_issued"] == 3
    renewals = [r for r in caplog.records if "refused the access token" in r.getMessage()]
    assert renewals, "the run never saw its token refused"
    rig.emulator.set_faults()
    assert_converged(rig)


def test_two_syncd_processes_share_one_token(rig: Rig) -> None:
    """A shell sync while another process holds the token takes the stored one: no renewal."""
    settings = rig.settings()
    assert rig.sync().exit_code == EXIT_OK
    rig.company.person("ann")["job_title"] = "Chair"
    rig.company.write(rig.folder)
    done = rig.cli("sync", "--yes")
    assert done.returncode == EXIT_OK, done.stderr
    assert run_sync(settings, RunRequest(dry_run=True)).exit_code == EXIT_OK
    assert rig.emulator.state()["tokens_issued"] == 1


def test_rejected_items_are_reported_with_the_platforms_text_and_retried_next_run(
    rig: Rig,
) -> None:
    rig.company = big_company(30, departments=4)
    message = "mobile number is on the platform's deny list"
    rig.emulator.set_faults(
        reject=[{"field": "username", "pattern": "^user(7|13|21)$", "message": message}]
    )

    result = rig.sync()

    assert (result.outcome, result.exit_code) == ("partial", EXIT_PARTIAL)
    engine = store.open_engine(rig.database)
    assert store.failure_groups(engine, result.run_id) == [(message, 3)]
    failed = query(
        rig.database,
        "SELECT display, error FROM run_items WHERE run_id = ? AND outcome = 'failed'",
        result.run_id,
    )
    assert sorted(f["display"] for f in failed) == ["user13", "user21", "user7"]
    landed = set(rig.platform().people)
    assert landed == {f"user{n}" for n in range(1, 31)} - {"user7", "user13", "user21"}
    shown = rig.cli("reports", "show", str(result.run_id), "--failed-only")
    assert f"3 × {message}" in shown.stdout

    rig.emulator.set_faults()
    again = rig.sync()
    assert again.exit_code == EXIT_OK
    # Only the three are sent again, and they land.
    assert sorted(c.display for c in plan_of(again).changes) == ["user13", "user21", "user7"]
    assert_converged(rig)
