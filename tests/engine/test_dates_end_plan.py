"""End dates in the planner, one rule at a time, with plain values and a simulated platform
(tests/engine/dated_world.py): an end date locks at the end of that day in the zone (where
the clocks go back, go forward, or midnight comes twice), a recorded one even when the row
is not read; changed or removed before it passes, it locks nobody."""

from __future__ import annotations

import datetime as dt

from syncd.model import Department, Kind, RejectedRow, build_directory
from syncd.plan import Action, DatePolicy, Limits, Policy, check_guards, plan
from syncd.plan.dates import ENDED, day_end_ms
from tests.engine.dated_world import World, actions, at, directory, local_date, paris, person


def test_an_end_date_locks_at_the_end_of_that_day_in_the_zone_and_is_shown_scheduled() -> None:
    world = World(paris())
    ann = person(end_date="2026-12-31")
    p = world.sync([ann], at("2026-12-01T09:00"))
    assert actions(p) == ["create"]
    [s] = p.scheduled
    assert s.message == (
        "lock at 2027-01-01 00:00 Europe/Paris (the end of 2026-12-31, the end date)"
    )
    assert not any(c.action is Action.LOCK for c in p.changes)  # scheduled, not done
    assert world.end_dates == {"e1": "2026-12-31"}

    assert actions(world.sync([ann], at("2026-12-31T22:59:59.999"))) == []  # 23:59:59.999
    p = world.sync([ann], at("2026-12-31T23:00"))
    assert actions(p) == ["lock"]
    assert p.changes[-1].lock_reason == ENDED
    assert p.changes[-1].reason == "end date 2026-12-31 passed (2027-01-01 00:00 Europe/Paris)"
    assert actions(world.sync([ann], at("2027-01-05T10:00"))) == []  # stays locked


def test_an_end_date_on_the_day_the_clocks_go_back() -> None:
    """Paris leaves summer time on 2026-10-25 (03:00 -> 02:00): that day has 25 hours and
    ends at 23:00 UTC, not at 22:00 as the day before."""
    world = World(paris())
    ann = person(end_date="2026-10-25")
    world.sync([ann], at("2026-10-01T09:00"))
    assert actions(world.sync([ann], at("2026-10-25T22:30"))) == []  # 23:30 in Paris
    assert actions(world.sync([ann], at("2026-10-25T23:00"))) == ["lock"]


def test_an_end_date_on_the_day_the_clocks_go_forward() -> None:
    """2026-03-29 in Paris has 23 hours: it ends at 22:00 UTC."""
    world = World(paris())
    ann = person(end_date="2026-03-29")
    world.sync([ann], at("2026-03-01T09:00"))
    assert actions(world.sync([ann], at("2026-03-29T21:59"))) == []
    assert actions(world.sync([ann], at("2026-03-29T22:00"))) == ["lock"]


def test_where_midnight_comes_twice_the_day_ends_at_the_first() -> None:
    """Havana sets its clocks back from 01:00 to 00:00 on 2026-11-01: midnight comes twice,
    both times on the 1st, so the 31st ends at the first (04:00 UTC), not an hour later."""
    zone = "America/Havana"
    end = dt.date(2026, 10, 31)
    end_ms = day_end_ms(end, zone)
    assert local_date(end_ms - 1, zone) <= end < local_date(end_ms, zone)
    assert end_ms == at("2026-11-01T04:00")
    world = World(Policy(dates=DatePolicy(zone)))
    ann = person(end_date=end.isoformat())
    world.sync([ann], end_ms - 86_400_000)
    assert actions(world.sync([ann], end_ms - 1)) == []
    assert actions(world.sync([ann], end_ms)) == ["lock"]


def test_a_changed_or_removed_end_date_before_it_passes_cancels_the_lock() -> None:
    world = World(paris())
    world.sync([person(end_date="2026-12-31")], at("2026-12-01T09:00"))
    p = world.sync([person(end_date="2027-03-31")], at("2026-12-15T09:00"))
    assert [s.message for s in p.scheduled] == [
        "lock at 2027-04-01 00:00 Europe/Paris (the end of 2027-03-31, the end date)"
    ]
    assert world.end_dates == {"e1": "2027-03-31"}
    assert actions(world.sync([person(end_date="2027-03-31")], at("2027-01-02T09:00"))) == []
    p = world.sync([person()], at("2027-02-01T09:00"))  # the end date removed
    assert p.scheduled == () and world.end_dates == {}
    assert actions(world.sync([person()], at("2027-05-01T09:00"))) == []
    assert not world.people["e1"].locked


def _rejected(key: str, username: str) -> RejectedRow:
    return RejectedRow("employees.csv:2", "column 'mobile': bad", Kind.EMPLOYEE, key, username)


def test_a_recorded_end_date_locks_someone_whose_row_is_not_read() -> None:
    """An incremental read that does not return them, or their row rejected: the recorded
    end date still locks them at its end."""
    world = World(paris())
    world.sync([person(end_date="2026-12-31")], at("2026-12-01T09:00"))
    p = world.sync([], at("2026-12-20T09:00"), complete=False)
    assert actions(p) == []
    assert [s.action for s in p.scheduled] == ["lock"]
    p = world.sync([], at("2027-01-01T09:00"), complete=False)
    assert actions(p) == ["lock"]
    assert p.changes[-1].lock_reason == ENDED
    assert "recorded, the row was not read" in p.changes[-1].reason

    # A complete read whose row for them was rejected: kept as they are, the date kept.
    other = World(paris())
    other.sync([person(end_date="2026-12-31")], at("2026-12-01T09:00"))
    d = build_directory(
        [("departments.csv:2", Department("rd", "R&D"))],
        [],
        rejected=[_rejected("e1", "ann")],
    )
    p = plan(d, other.snapshot(), other.view(), other.policy, at("2027-01-01T09:00"))
    assert actions(p) == ["lock"]


def test_a_removed_row_after_a_recorded_end_date_stays_locked() -> None:
    world = World(paris())
    world.sync([person(end_date="2026-12-31")], at("2026-12-01T09:00"))
    world.sync([person(end_date="2026-12-31")], at("2027-01-01T09:00"))
    assert world.people["e1"].locked
    for when in ("2027-01-02T09:00", "2027-02-02T09:00"):
        assert actions(world.sync([], at(when))) == []
        assert actions(world.sync([], at(when), complete=False)) == []
        assert world.people["e1"].locked


def test_end_date_changes_are_reported_for_recording() -> None:
    world = World(paris())
    p = world.plan([person(end_date="2026-12-31")], at("2026-12-01T09:00"))
    assert p.dates == {"e1": (None, "2026-12-31")}
    world.apply(p, at("2026-12-01T09:00"))
    assert world.plan([person(end_date="2026-12-31")], at("2026-12-02T09:00")).dates == {}
    assert world.plan([person()], at("2026-12-02T09:00")).dates == {"e1": (None, None)}


def test_rows_dropped_after_their_end_date_do_not_make_the_source_look_shrunken() -> None:
    """HR exports only current staff: once 3 of 10 are locked past their end date, their
    rows go, and the read of 7 is whole (the shrink guard does not count them)."""
    world = World(paris())
    staff = [
        person(f"e{n}", f"user{n}", end_date="2026-12-31" if n < 3 else None) for n in range(10)
    ]
    world.sync(staff, at("2026-12-01T09:00"))
    world.sync(staff, at("2027-01-01T09:00"))
    assert sum(s.locked for s in world.people.values()) == 3
    current = staff[3:]
    p = world.plan(current, at("2027-01-02T09:00"))
    limits = Limits(max_removal_ratio=0.10)
    decisions = {g.name: g for g in check_guards(p, directory(current), world.snapshot(), limits)}
    assert decisions["source_shrink"].passed, decisions["source_shrink"].message
    assert "past their end date" in decisions["source_shrink"].message
