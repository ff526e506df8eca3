"""The removal and shrink guards, with plain values: each names its numbers and the
override, counts department deletions against the departments, and does not count
people locked as missing long ago."""

from __future__ import annotations

from syncd.plan import DAY_MS, Limits, Policy, Snapshot, check_guards, plan
from tests.engine.plan_world import (
    COMPANY,
    NOW,
    STAFF,
    dept,
    directory,
    empty_view,
    guards,
    person,
    synced,
)


def test_removal_guard_names_the_numbers_and_the_override() -> None:
    staff = [person(f"e{i}", f"user{i}", "rd") for i in range(100)]
    snapshot, view = synced(directory(COMPANY, staff))
    d = directory(COMPANY, staff[:80])
    p = plan(d, snapshot, view, Policy(), NOW)
    assert p.removals == 20
    guard = guards(p, d, snapshot)["max_removals"]
    assert not guard.passed
    assert "20 removals planned" in guard.message and "--allow-removals 20" in guard.message
    assert guards(p, d, snapshot, allow_removals=20)["max_removals"].overridden
    assert not guards(p, d, snapshot, allow_removals=19)["max_removals"].passed
    assert guards(p, d, snapshot, max_removal_ratio=0.5)["max_removals"].passed


def test_an_empty_or_shrunken_source_is_blocked() -> None:
    staff = [person(f"e{i}", f"user{i}", "rd") for i in range(30)]
    snapshot, view = synced(directory(COMPANY, staff))
    empty = directory(COMPANY, [])
    p = plan(empty, snapshot, view, Policy(), NOW)
    decided = guards(p, empty, snapshot, max_removals=1000, max_removal_ratio=1.0)
    assert not decided["source_shrink"].passed
    assert "returned 0 employees, 30 were synced" in decided["source_shrink"].message
    fine = directory(COMPANY, staff[:28])
    p = plan(fine, snapshot, view, Policy(), NOW)
    assert all(g.passed for g in check_guards(p, fine, snapshot, Limits()))


def test_the_shrink_guard_does_not_count_people_locked_as_missing_long_ago() -> None:
    staff = [person(f"e{i}", f"user{i}", "rd") for i in range(100)]
    gone = {f"e{i}": NOW - 400 * DAY_MS for i in range(85, 100)}  # left long ago, locked
    snapshot, view = synced(directory(COMPANY, staff), locked=gone)
    d = directory(COMPANY, staff[:85])
    p = plan(d, snapshot, view, Policy(leaver_policy="lock"), NOW)
    assert p.changes == ()
    decided = guards(p, d, snapshot)
    assert all(g.passed for g in decided.values())
    assert decided["source_shrink"].message == (
        "the source returned 85 employees, 85 were synced before "
        "(not counting 15 locked as missing from earlier reads)"
    )
    shrunk = directory(COMPANY, staff[:70])
    p = plan(shrunk, snapshot, view, Policy(leaver_policy="lock"), NOW)
    assert not guards(p, shrunk, snapshot, max_removals=1000)["source_shrink"].passed


def test_department_deletions_are_guarded_against_the_number_of_departments() -> None:
    # 50 departments among 650 records: all of them deleted is under 10% of the records.
    staff = [person(f"e{i}", f"user{i}", None) for i in range(600)]
    departments = [dept(f"d{i}", f"D{i}") for i in range(50)]
    snapshot, view = synced(directory(departments, staff))
    d = directory([], staff)
    p = plan(d, snapshot, view, Policy(), NOW)
    assert p.removals == 50
    guard = guards(p, d, snapshot)["max_removals"]
    assert not guard.passed
    assert guard.message == (
        "50 removals planned (locks, removals, department deletions); the limits are 50 and "
        "10% of 650 synced records, and 10% of 50 synced departments (50 to delete): rerun "
        "with --allow-removals 50 if this is intended"
    )
    assert guards(p, d, snapshot, allow_removals=50)["max_removals"].overridden
    few = directory(departments[5:], staff)
    assert guards(plan(few, snapshot, view, Policy(), NOW), few, snapshot)["max_removals"].passed


def test_guards_pass_on_a_first_sync() -> None:
    d = directory(COMPANY, STAFF)
    p = plan(d, Snapshot(), empty_view(), Policy(), NOW)
    assert all(g.passed for g in check_guards(p, d, Snapshot(), Limits()))
