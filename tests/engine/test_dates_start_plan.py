"""Start dates in the planner, one rule at a time, with plain values and a simulated platform
(tests/engine/dated_world.py): a future hire is created in the window before the start,
locked until the start day, then unlocked; a re-hire is held locked until the new start;
nobody already active or departed is changed by a start date."""

from __future__ import annotations

from dataclasses import replace

from syncd.plan import Action, Limits, SyncedEmployee, check_guards, employee_hash, reactivations
from syncd.plan.dates import ENDED, NOT_STARTED
from tests.engine.dated_world import World, actions, at, directory, paris, person


def test_a_future_hire_is_created_in_the_window_locked_and_unlocked_on_the_start_day() -> None:
    world = World(paris(days_before=7))
    ann = person(start_date="2026-12-01")
    p = world.sync([ann], at("2026-11-23T22:59"))  # Paris: 23:59 on the 23rd
    assert actions(p) == []
    [s] = p.scheduled
    assert (s.action, s.at_ms) == ("create", at("2026-11-23T23:00"))
    assert s.message == (
        "create at 2026-11-24 00:00 Europe/Paris, locked until 2026-12-01 00:00 "
        "Europe/Paris (start date 2026-12-01)"
    )
    assert p.removal_due == at("2026-11-23T23:00")  # the clock changes the plan then

    p = world.sync([ann], at("2026-11-23T23:00"))
    assert actions(p) == ["create", "lock"]
    lock = next(c for c in p.changes if c.action is Action.LOCK)
    assert lock.lock_reason == NOT_STARTED
    assert lock.message.endswith("created before the start date 2026-12-01: locked until then")
    assert p.removals == 0  # a new hire locked until the start takes nobody's access
    assert [s.message for s in p.scheduled] == [
        "unlock at 2026-12-01 00:00 Europe/Paris (start date 2026-12-01)"
    ]
    assert world.people["e1"].locked and world.people["e1"].lock_reason == NOT_STARTED

    assert actions(world.sync([ann], at("2026-11-30T22:59"))) == []
    snapshot = world.snapshot()
    p = world.plan([ann], at("2026-11-30T23:00"))
    assert actions(p) == ["unlock"]
    assert p.changes[-1].reason == "start date 2026-12-01 reached"
    # Not a re-activation: the guard does not count a new hire's first day.
    assert reactivations(p, snapshot).total == 0
    limits = Limits(max_reactivations=0, max_reactivation_ratio=0.0)
    assert all(g.passed for g in check_guards(p, directory([ann]), snapshot, limits))


def test_a_future_hire_is_not_created_before_the_start_when_so_set() -> None:
    world = World(paris(days_before=7, before_start="not_created"))
    ann = person(start_date="2026-12-01")
    p = world.sync([ann], at("2026-11-27T10:00"))
    assert actions(p) == []
    assert [s.message for s in p.scheduled] == [
        "create at 2026-12-01 00:00 Europe/Paris (start date: 2026-12-01)"
    ]
    assert actions(world.sync([ann], at("2026-11-30T22:59"))) == []
    assert actions(world.sync([ann], at("2026-11-30T23:00"))) == ["create"]
    assert not world.people["e1"].locked


def test_a_start_date_in_the_past_is_an_ordinary_hire() -> None:
    world = World(paris(days_before=7))
    p = world.sync([person(start_date="2020-01-01")], at("2026-11-27T10:00"))
    assert actions(p) == ["create"]
    assert p.scheduled == ()


def test_a_future_hire_whose_username_an_account_holds_waits_for_the_start() -> None:
    world = World(paris(days_before=7))
    world.sync([person("e0", "ann")], at("2026-11-01T09:00"))
    newcomer = person("e9", "ann", start_date="2026-12-01")
    p = world.sync([newcomer], at("2026-11-27T09:00"))  # e0 left the source: a leaver
    assert actions(p, "e9") == []
    assert [(s.key, s.action) for s in p.scheduled] == [("e9", "create")]
    assert "an account already holds the username" in p.scheduled[0].message


def test_a_future_hire_whose_lock_failed_is_locked_again_before_the_start() -> None:
    world = World(paris(days_before=7))
    ann = person(start_date="2026-12-01")
    p = world.plan([ann], at("2026-11-25T09:00"))
    assert actions(p) == ["create", "lock"]
    # The create lands, the lock fails (the platform refused it): ann is active, early.
    world.apply(replace(p, changes=tuple(c for c in p.changes if c.action is not Action.LOCK)), 0)
    assert not world.people["e1"].locked and world.people["e1"].lock_reason == NOT_STARTED
    p = world.sync([ann], at("2026-11-26T09:00"))
    assert actions(p) == ["lock"]
    assert p.changes[-1].lock_reason == NOT_STARTED and p.removals == 0
    assert world.people["e1"].locked


def test_after_the_start_a_failed_early_lock_is_not_made_up_for() -> None:
    world = World(paris(days_before=7))
    ann = person(start_date="2026-12-01")
    p = world.plan([ann], at("2026-11-25T09:00"))
    world.apply(replace(p, changes=tuple(c for c in p.changes if c.action is not Action.LOCK)), 0)
    assert actions(world.sync([ann], at("2026-12-01T09:00"))) == []
    assert not world.people["e1"].locked


def test_someone_active_is_never_locked_by_a_start_date_moved_later() -> None:
    world = World(paris(days_before=7))
    world.sync([person()], at("2026-11-01T09:00"))
    p = world.sync([person(start_date="2027-01-01")], at("2026-11-10T09:00"))
    assert actions(p) == []
    assert not world.people["e1"].locked


def test_a_re_hire_is_held_locked_until_the_new_start_and_counted_as_a_re_activation() -> None:
    world = World(paris(days_before=7))
    world.sync([person(end_date="2026-06-30")], at("2026-06-01T09:00"))
    world.sync([person(end_date="2026-06-30")], at("2026-07-01T09:00"))
    assert world.people["e1"].lock_reason == ENDED
    rehired = person(start_date="2026-09-01", end_date="2026-06-30")
    p = world.sync([rehired], at("2026-08-20T09:00"))
    assert actions(p) == []
    assert [s.action for s in p.scheduled] == ["unlock"]
    snapshot = world.snapshot()
    p = world.plan([rehired], at("2026-08-31T22:00"))
    assert actions(p) == ["unlock"]
    back = reactivations(p, snapshot)
    assert back.returning == 1  # the usual guard judges a return
    limits = Limits(max_reactivations=0, max_reactivation_ratio=0.0)
    assert not all(g.passed for g in check_guards(p, directory([rehired]), snapshot, limits))


def test_someone_departed_in_the_source_stays_locked_before_a_new_start() -> None:
    world = World(paris())
    hashed = employee_hash(person(), {})
    world.people["e1"] = SyncedEmployee("e1", "ann", 5, hashed, True, "departed", 1)
    p = world.sync([person(start_date="2027-01-01")], at("2026-12-01T09:00"))
    assert actions(p) == []
    assert world.people["e1"].locked and world.people["e1"].lock_reason == "departed"
