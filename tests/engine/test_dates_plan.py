"""Effective dates in the planner, with plain values and a simulated platform: the clock is
a number each plan is given, never the wall clock (no sleeps).

The oracles here read the zone's calendar directly (the local date of an instant), not
syncd's own day arithmetic: "locked" must mean the end day is over in that zone.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from zoneinfo import ZoneInfo

from hypothesis import example, given, settings
from hypothesis import strategies as st

from syncd.model import (
    Department,
    Directory,
    Employee,
    Kind,
    Position,
    RejectedRow,
    State,
    build_directory,
)
from syncd.plan import (
    Action,
    DatePolicy,
    Limits,
    Plan,
    PlatformNode,
    PlatformPerson,
    PlatformView,
    Policy,
    Snapshot,
    SyncedDepartment,
    SyncedEmployee,
    check_guards,
    employee_hash,
    plan,
    reactivations,
)
from syncd.plan.dates import ENDED, NOT_STARTED, day_end_ms, day_start_ms
from syncd.spelling import look_alike
from tests.support.examples import examples

ROOT = 1
UTC = dt.UTC
# Zones whose clocks jump at midnight, skip a day, move by 30 minutes or 2 hours, or never.
ZONES = (
    "UTC",
    "Europe/Paris",
    "America/New_York",
    "America/Santiago",
    "America/Havana",
    "America/Asuncion",
    "America/Sao_Paulo",
    "Asia/Beirut",
    "Asia/Shanghai",
    "Australia/Lord_Howe",
    "Pacific/Apia",
    "Pacific/Kiritimati",
    "Antarctica/Troll",
)
MAX_REPEAT = dt.timedelta(hours=3)  # no zone sets its clocks back by more than this


def at(text: str) -> int:
    """An instant, written in UTC ("2026-10-25T22:59"), as ms."""
    moment = dt.datetime.fromisoformat(text).replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def local_date(now_ms: int, zone: str) -> dt.date:
    moment = dt.datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    return moment.astimezone(ZoneInfo(zone)).date()


def day(text: str | None) -> dt.date | None:
    return dt.date.fromisoformat(text) if text else None


def person(id: str = "e1", username: str = "ann", **kw: Any) -> Employee:
    return Employee(id, username, username.title(), (Position("rd", primary=True),), **kw)


# ---------------------------------------------------------------- a simulated platform


@dataclass
class World:
    """What syncd holds after each applied plan: its people and the end dates it recorded."""

    policy: Policy
    people: dict[str, SyncedEmployee] = field(default_factory=dict)
    end_dates: dict[str, str] = field(default_factory=dict)
    start_dates: dict[str, str] = field(default_factory=dict)
    next_id: int = 1000

    def snapshot(self) -> Snapshot:
        departments = {"rd": SyncedDepartment("rd", 100, "Acme/R&D", "")}
        return Snapshot(
            departments,
            dict(self.people),
            end_dates=dict(self.end_dates),
            start_dates=dict(self.start_dates),
        )

    def view(self) -> PlatformView:
        nodes = {ROOT: PlatformNode(ROOT, "Acme", None), 100: PlatformNode(100, "R&D", ROOT, "rd")}
        people = {
            look_alike(s.username): PlatformPerson(s.employee_id or 0, s.username, s.locked)
            for s in self.people.values()
        }
        return PlatformView(ROOT, "Acme", nodes, True, people)

    def plan(self, rows: list[Employee], now: int, *, complete: bool = True) -> Plan:
        d = build_directory(
            [("departments.csv:2", Department("rd", "R&D"))],
            [(f"employees.csv:{n}", e) for n, e in enumerate(rows, 2)],
            complete=complete,
        )
        return plan(d, self.snapshot(), self.view(), self.policy, now)

    def apply(self, p: Plan, now: int) -> None:
        for c in p.changes:
            if c.kind is not Kind.EMPLOYEE:
                continue
            held = self.people.get(c.key)
            if c.action is Action.CREATE:
                self.people[c.key] = SyncedEmployee(
                    c.key, c.display, self.next_id, c.hash, lock_reason=c.lock_reason
                )
                self.next_id += 1
            elif c.action is Action.UPDATE and held is not None:
                self.people[c.key] = held._replace(hash=c.hash)
            elif c.action is Action.LOCK and held is not None:
                reason = c.lock_reason or ("departed" if c.record is not None else "missing")
                since = held.locked_since if held.locked else now
                self.people[c.key] = held._replace(
                    locked=True, lock_reason=reason, locked_since=since
                )
            elif c.action is Action.UNLOCK and held is not None:
                self.people[c.key] = held._replace(
                    locked=False, lock_reason=None, locked_since=None
                )
            elif c.action is Action.REMOVE:
                self.people.pop(c.key, None)
        for key, (start, end) in p.dates.items():
            for kept, value in ((self.start_dates, start), (self.end_dates, end)):
                if value is None or key not in self.people:
                    kept.pop(key, None)
                else:
                    kept[key] = value
        self.end_dates = {k: v for k, v in self.end_dates.items() if k in self.people}
        self.start_dates = {k: v for k, v in self.start_dates.items() if k in self.people}

    def sync(self, rows: list[Employee], now: int, *, complete: bool = True) -> Plan:
        p = self.plan(rows, now, complete=complete)
        self.apply(p, now)
        return p


def actions(p: Plan, key: str = "e1") -> list[str]:
    return [c.action.value for c in p.changes if c.kind is Kind.EMPLOYEE and c.key == key]


def paris(
    days_before: int = 0, before_start: Literal["locked", "not_created"] = "locked"
) -> Policy:
    return Policy(
        leaver_policy="lock",
        dates=DatePolicy("Europe/Paris", days_before, before_start),
    )


# ---------------------------------------------------------------- the day's end, by the calendar


@settings(max_examples=examples(400), deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    end=st.dates(dt.date(2010, 1, 1), dt.date(2035, 12, 31)),
    offset=st.integers(-6 * 3600_000, 6 * 3600_000),
)
@example(zone="Europe/Paris", end=dt.date(2026, 10, 25), offset=-1)
@example(zone="Europe/Paris", end=dt.date(2026, 3, 29), offset=0)
@example(zone="Pacific/Apia", end=dt.date(2011, 12, 29), offset=0)
@example(zone="America/Santiago", end=dt.date(2026, 9, 5), offset=-1)
@example(zone="America/Havana", end=dt.date(2026, 10, 31), offset=0)
@example(zone="America/Santiago", end=dt.date(2026, 9, 5), offset=0)
def test_an_end_day_ends_when_the_zone_s_calendar_leaves_it_for_good(
    zone: str, end: dt.date, offset: int
) -> None:
    """Before the end instant the zone still shows the end day (or an earlier one); from it
    on, a later day, for good: even where midnight is skipped or comes twice."""
    end_ms = day_end_ms(end, zone)
    assert local_date(end_ms - 1, zone) <= end
    t = end_ms + offset
    if offset >= 0:
        assert local_date(t, zone) > end
    else:
        assert local_date(t, zone) <= end
    assert day_start_ms(end + dt.timedelta(days=1), zone) == end_ms


# ---------------------------------------------------------------- generated histories


@st.composite
def histories(draw: st.DrawFn) -> dict[str, Any]:
    zone = draw(st.sampled_from(ZONES))
    base = draw(st.dates(dt.date(2011, 1, 1), dt.date(2030, 12, 31)))
    start = draw(st.none() | st.integers(-20, 40).map(lambda n: base + dt.timedelta(days=n)))
    end = draw(st.none() | st.integers(-20, 60).map(lambda n: base + dt.timedelta(days=n)))
    days_before = draw(st.integers(0, 10))
    before_start = draw(st.sampled_from(["locked", "not_created"]))
    departed = draw(st.integers(0, 9)) == 0
    # Runs: near a day's edge in the zone (the interesting instants), or anywhere.
    edges = [d for d in (start, end) if d is not None] or [base]
    near_edge = st.tuples(st.sampled_from(edges), st.integers(-1, 1), st.integers(-3, 3)).map(
        lambda t: day_end_ms(t[0] + dt.timedelta(days=t[1]), zone) + t[2] * 1800_000 - 1
    )
    anywhere = st.integers(-30, 70).map(
        lambda n: day_start_ms(base + dt.timedelta(days=n), zone) + 3 * 3600_000
    )
    nows = sorted(draw(st.lists(near_edge | anywhere, min_size=1, max_size=8)))
    # What each run reads: the row, a complete read without it, an incremental read
    # without it; and the end date as HR has it then (changed, removed, kept).
    reads = draw(
        st.lists(
            st.sampled_from(["row", "row", "row", "dropped", "incremental"]),
            min_size=len(nows),
            max_size=len(nows),
        )
    )
    new_ends = draw(
        st.lists(
            st.sampled_from(["kept", "kept", "kept", "removed", "later", "earlier"]),
            min_size=len(nows),
            max_size=len(nows),
        )
    )
    return {
        "zone": zone,
        "start": start,
        "end": end,
        "days_before": days_before,
        "before_start": before_start,
        "departed": departed,
        "nows": nows,
        "reads": reads,
        "new_ends": new_ends,
    }


def _end_after(end: dt.date | None, how: str) -> dt.date | None:
    if how == "removed":
        return None
    if end is not None and how == "later":
        return end + dt.timedelta(days=5)
    if end is not None and how == "earlier":
        return end - dt.timedelta(days=1)
    return end


@settings(max_examples=examples(300), deadline=None)
@given(h=histories())
def test_dates_never_lock_early_always_lock_after_and_create_nobody_before_the_window(
    h: dict[str, Any],
) -> None:
    zone, start = h["zone"], h["start"]
    policy = Policy(
        leaver_policy="lock",
        dates=DatePolicy(zone, h["days_before"], h["before_start"]),
    )
    world = World(policy)
    end = h["end"]
    state = State.DEPARTED if h["departed"] else State.ACTIVE
    for now, read, how in zip(h["nows"], h["reads"], h["new_ends"], strict=True):
        end = _end_after(end, how)
        if end is not None and start is not None and end < start:
            end = None if how != "kept" else end  # a re-hire's earlier end, sometimes
        row = person(
            start_date=start.isoformat() if start else None,
            end_date=end.isoformat() if end else None,
            state=state,
        )
        before = world.people.get("e1")
        recorded = day(world.end_dates.get("e1"))
        recorded_start = day(world.start_dates.get("e1"))
        rows = [row] if read == "row" else []
        p = world.sync(rows, now, complete=read != "incremental")
        done = actions(p)
        today = local_date(now, zone)
        surely_today = local_date(now - int(MAX_REPEAT.total_seconds() * 1000), zone)
        rehire_back = start is not None and end is not None and start > end and today >= start
        after = world.people.get("e1")

        if "create" in done:
            assert before is None
            assert read == "row" and state is State.ACTIVE
            if start is not None:
                assert today >= start - dt.timedelta(days=h["days_before"])
                if h["before_start"] == "not_created":
                    assert today >= start
                if today < start:  # created early: locked at once, until the start
                    assert "lock" in done
            if end is not None and not (start is not None and start > end):
                assert today <= end  # nobody is created after their end
        if before is None and start is not None and read == "row" and state is State.ACTIVE:
            window = start - dt.timedelta(days=h["days_before"])
            if surely_today >= start or (surely_today >= window and h["before_start"] == "locked"):
                ended = end is not None and end >= start and today > end
                if not ended:
                    assert "create" in done

        if "lock" in done and before is not None and not before.locked:
            # Someone syncd held unlocked: locked only by their own end date, once over.
            if read == "row" and state is State.ACTIVE:
                assert end is not None and today > end and not rehire_back
            elif read == "incremental":
                assert recorded is not None and today > recorded
        if "unlock" in done and read == "incremental":
            # A hire created locked before the start, not read: by the recorded start.
            assert before is not None and before.lock_reason == NOT_STARTED
            assert recorded_start is not None and today >= recorded_start
            assert recorded is None or today <= recorded or recorded < recorded_start
        elif "unlock" in done:
            assert read == "row" and state is State.ACTIVE
            assert start is None or today >= start
            assert end is None or rehire_back or today <= end
        early = before is not None and before.locked and before.lock_reason == NOT_STARTED
        if early and after is not None and read == "incremental" and recorded_start is not None:
            over = recorded is not None and recorded >= recorded_start and today > recorded
            if surely_today >= recorded_start and not over:
                assert not after.locked, "the recorded start day came; the row was not read"

        held = after is not None and before is not None
        if held and read == "row" and state is State.ACTIVE and end is not None:
            assert after is not None
            assert after.locked or not (surely_today > end and not rehire_back), "held past the end"
        back = recorded_start is not None and recorded is not None and recorded_start > recorded
        back = back and recorded_start is not None and today >= recorded_start  # a re-hire
        if held and read == "incremental" and recorded is not None and surely_today > recorded:
            assert after is not None
            assert after.locked or back, "the recorded end date passed; the row was not read"
        if after is not None and read == "dropped" and before is not None:
            assert after.locked  # a leaver (leaver_policy lock), end date or not
        for s in p.scheduled:
            assert s.at_ms > now  # what is scheduled is not done yet
            assert s.key == "e1" and s.action in ("create", "unlock", "lock")
        if p.scheduled:
            assert p.removal_due is not None and p.removal_due <= p.scheduled[0].at_ms


# ---------------------------------------------------------------- the rules, one by one


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
    assert all(g.passed for g in check_guards(p, _directory([ann]), snapshot, limits))


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
    assert not all(g.passed for g in check_guards(p, _directory([rehired]), snapshot, limits))


def test_a_future_hire_whose_username_an_account_holds_waits_for_the_start() -> None:
    world = World(paris(days_before=7))
    world.sync([person("e0", "ann")], at("2026-11-01T09:00"))
    newcomer = person("e9", "ann", start_date="2026-12-01")
    p = world.sync([newcomer], at("2026-11-27T09:00"))  # e0 left the source: a leaver
    assert actions(p, "e9") == []
    assert [(s.key, s.action) for s in p.scheduled] == [("e9", "create")]
    assert "an account already holds the username" in p.scheduled[0].message


def test_someone_departed_in_the_source_stays_locked_before_a_new_start() -> None:
    world = World(paris())
    hashed = employee_hash(person(), {})
    world.people["e1"] = SyncedEmployee("e1", "ann", 5, hashed, True, "departed", 1)
    p = world.sync([person(start_date="2027-01-01")], at("2026-12-01T09:00"))
    assert actions(p) == []
    assert world.people["e1"].locked and world.people["e1"].lock_reason == "departed"


def _directory(rows: list[Employee]) -> Directory:
    return build_directory(
        [("departments.csv:2", Department("rd", "R&D"))],
        [(f"employees.csv:{n}", e) for n, e in enumerate(rows, 2)],
    )


def _rejected(key: str, username: str) -> RejectedRow:
    return RejectedRow("employees.csv:2", "column 'mobile': bad", Kind.EMPLOYEE, key, username)


def test_end_date_changes_are_reported_for_recording() -> None:
    world = World(paris())
    p = world.plan([person(end_date="2026-12-31")], at("2026-12-01T09:00"))
    assert p.dates == {"e1": (None, "2026-12-31")}
    world.apply(p, at("2026-12-01T09:00"))
    assert world.plan([person(end_date="2026-12-31")], at("2026-12-02T09:00")).dates == {}
    assert world.plan([person()], at("2026-12-02T09:00")).dates == {"e1": (None, None)}


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
    decisions = {g.name: g for g in check_guards(p, _directory(current), world.snapshot(), limits)}
    assert decisions["source_shrink"].passed, decisions["source_shrink"].message
    assert "past their end date" in decisions["source_shrink"].message
