"""Whole syncs, from CSV files to the emulator over HTTP, with a real state database: each
test runs on both engines, SQLite and PostgreSQL (``store_url``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from syncd import snapshot as store
from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_BLOCKED, EXIT_FAILED, EXIT_OK, EXIT_PARTIAL
from tests.engine.company import World, department, employee, small_company
from tests.support.runs import plan_of


@pytest.fixture
def world(tmp_path: Path, emulator: RunningEmulator, store_url: str | None) -> World:
    return World(tmp_path, emulator, small_company(), database_url=store_url)


def runs(world: World) -> list[tuple[Any, ...]]:
    return world.query("SELECT id, mode, outcome, exit_code FROM runs ORDER BY id")


def test_initial_sync_makes_the_platform_equal_to_the_source(world: World) -> None:
    result = world.sync()
    assert (result.outcome, result.exit_code) == ("ok", EXIT_OK)
    assert world.platform().same_as(world.company.expected())
    # Parents first, at most one import per depth level with batches of 2: 4 nodes in 3 levels.
    assert world.writes()["POST /v1/admin/organizations/{org_code}/import-orgs"] == 3


def test_a_second_sync_with_nothing_changed_makes_no_write_call(world: World) -> None:
    world.sync()
    before = world.writes()
    result = world.sync()
    assert result.plan is not None and result.plan.changes == ()
    assert world.writes() == before
    assert world.emulator.stats()["requests"]["POST /v1/token"] == 1  # the token was reused


def test_dry_run_sends_nothing_and_is_recorded(world: World) -> None:
    result = world.sync(dry_run=True)
    assert result.plan is not None and len(result.plan.changes) == 9
    assert world.writes() == {}
    assert runs(world) == [(1, "dry_run", "ok", 0)]
    items = store.load_items(world.engine(), 1)
    assert {i["outcome"] for i in items} == {"planned"}
    assert items[0]["message"] == "create department Acme/Head Office"


def test_every_kind_of_change_lands(world: World) -> None:
    world.sync_settings["max_removal_ratio"] = 1.0  # a tiny company: 2 of 9 records is 22%
    company = world.company
    # A former employee the export keeps: its reads tell departed people apart, so dan's
    # return below is judged by the access guard's limits (test_status_evidence: reads
    # that cannot tell stop every return).
    company.employees.append(employee("E9", "gus", "D1", status="departed"))
    world.sync()
    company.unit("D3")["name"] = "Platform"  # rename
    company.unit("D4")["parent_id"] = "D2"  # move, with its people
    company.departments.append(department("D5", "Support", "D1"))  # new department
    company.person("bob")["mobile"] = "13999999999"  # update
    company.person("dan")["status"] = "departed"  # departure
    company.employees.remove(company.person("eve"))  # leaver
    company.employees.append(employee("E6", "fay", "D5"))  # hire
    result = world.sync()
    assert result.exit_code == EXIT_OK, result.error
    expected = company.expected()
    del expected.people["gus"]  # departed before syncd first read him: never made
    expected.people["eve"] = (*world.platform().people["eve"][:4], True)  # eve is locked, kept
    assert world.platform().same_as(expected)
    assert world.platform().people["eve"][4] is True

    company.person("dan")["status"] = "active"  # back again
    company.departments = [d for d in company.departments if d["id"] != "D5"]
    company.person("fay")["department"] = "D1"
    result = world.sync()
    assert result.exit_code == EXIT_OK
    platform = world.platform()
    assert platform.people["dan"][4] is False
    assert "D5" not in platform.nodes  # deleted once it was empty


def test_leavers_are_removed_after_the_grace_period(world: World) -> None:
    world.sync_settings.update(remove_after_days=0, max_removal_ratio=1.0)
    world.sync()
    world.company.employees.remove(world.company.person("eve"))
    world.sync()
    assert world.platform().people["eve"][4] is True  # first locked
    world.sync()
    assert "eve" not in world.platform().people  # then removed
    assert plan_of(world.sync()).changes == ()


def test_per_item_failures_are_reported_and_retried_next_run(world: World) -> None:
    world.emulator.set_faults(
        reject=[
            {
                "field": "username",
                "pattern": "^cat$",
                "message": "mobile already used by another employee",
            }
        ]
    )
    result = world.sync()
    assert (result.outcome, result.exit_code) == ("partial", EXIT_PARTIAL)
    assert "cat" not in world.platform().people
    engine = world.engine()
    assert store.failure_groups(engine, result.run_id) == [
        ("mobile already used by another employee", 1)
    ]
    world.emulator.set_faults()
    again = world.sync()
    assert again.exit_code == EXIT_OK
    assert [c.key for c in plan_of(again).changes] == ["E3"]
    assert world.platform().same_as(world.company.expected())


def test_mass_removal_is_blocked_and_nothing_is_sent(world: World) -> None:
    world.company.employees += [employee(f"E{n}", f"user{n}", "D2") for n in range(10, 40)]
    world.sync()
    before = world.platform()
    writes = world.writes()
    world.company.employees = world.company.employees[:20]
    result = world.sync()
    assert (result.outcome, result.exit_code) == ("blocked", EXIT_BLOCKED)
    assert result.error is not None and "--allow-removals 15" in result.error
    assert world.writes() == writes and world.platform().same_as(before)
    assert runs(world)[-1][2:] == ("blocked", 2)
    overridden = world.sync(allow_removals=15)
    assert overridden.exit_code == EXIT_OK
    assert sum(1 for p in world.platform().people.values() if p[4]) == 15


def test_an_unreachable_platform_fails_cleanly_with_exit_3(world: World) -> None:
    world.sync()
    world.company.person("bob")["mobile"] = "13911111111"
    world.emulator.set_faults(down=True)
    result = world.sync()
    assert (result.outcome, result.exit_code) == ("failed", EXIT_FAILED)
    assert result.error is not None and "unavailable" in result.error
    world.emulator.set_faults()
    assert world.sync().exit_code == EXIT_OK
    assert world.platform().people["bob"] == world.company.expected().people["bob"]


def test_first_run_adopts_what_the_platform_already_has(
    world: World, tmp_path: Path, store_url: str | None, request: pytest.FixtureRequest
) -> None:
    world.sync()
    if store_url is None:
        (world.folder / "state" / "syncd.db").unlink()  # a new host, or a lost state database
        for extra in ("-wal", "-shm"):
            (world.folder / "state" / f"syncd.db{extra}").unlink(missing_ok=True)
    else:  # a new, empty database
        world.database_url = request.getfixturevalue("postgres_server").url(
            request.getfixturevalue("postgres_server").create_database()
        )
    result = world.sync()
    assert result.exit_code == EXIT_OK
    actions = {c.action.value for c in plan_of(result).changes}
    assert actions <= {"adopt", "update"} and "create" not in actions
    platform = world.platform()
    assert sorted(platform.serials) == sorted(set(platform.serials))
    assert platform.same_as(world.company.expected())


def test_run_summary_records_counts_and_guards(world: World) -> None:
    result = world.sync()
    ((stored,),) = world.query("SELECT summary FROM runs WHERE id = ?", result.run_id)
    summary = json.loads(stored)
    assert summary["source"]["employees"] == 5
    assert summary["planned"] == {"department.create": 4, "employee.create": 5}
    assert summary["results"] == {"department.create.ok": 4, "employee.create.ok": 5}
    assert [g["name"] for g in summary["guards"]] == ["max_removals"]
