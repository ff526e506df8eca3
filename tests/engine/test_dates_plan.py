"""Effective dates in the planner, with plain values and a simulated platform: the clock is
a number each plan is given, never the wall clock (no sleeps).

The oracles here read the zone's calendar directly (the local date of an instant), not
syncd's own day arithmetic: "locked" must mean the end day is over in that zone.

The rules one at a time: test_dates_start_plan.py (start dates: creations, unlocks) and
test_dates_end_plan.py (end dates: locks); the simulated platform: dated_world.py.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from syncd.model import State
from syncd.plan import DatePolicy, Plan, Policy, SyncedEmployee
from syncd.plan.dates import NOT_STARTED, day_end_ms, day_start_ms
from tests.engine.dated_world import MAX_REPEAT, ZONES, World, actions, day, local_date, person
from tests.support.examples import examples

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


def _end_then(end: dt.date | None, how: str, start: dt.date | None) -> dt.date | None:
    """The end date as HR has it at the next run."""
    end = _end_after(end, how)
    if end is not None and start is not None and end < start:
        end = None if how != "kept" else end  # a re-hire's earlier end, sometimes
    return end


@dataclass(frozen=True)
class Run:
    """One run of a generated history: what was read, what syncd held before and after,
    what the plan did, and the zone's calendar at that instant."""

    start: dt.date | None
    end: dt.date | None
    days_before: int
    before_start: str
    state: State
    read: str
    now: int
    before: SyncedEmployee | None
    after: SyncedEmployee | None
    recorded: dt.date | None  # the end date syncd had recorded before the run
    recorded_start: dt.date | None
    p: Plan
    done: list[str]
    today: dt.date
    surely_today: dt.date  # the date, even if the clocks went back by the most any zone does

    @property
    def rehire_back(self) -> bool:
        start, end = self.start, self.end
        return start is not None and end is not None and start > end and self.today >= start

    @property
    def row_of_the_active(self) -> bool:
        return self.read == "row" and self.state is State.ACTIVE


def _run(world: World, h: dict[str, Any], now: int, read: str, end: dt.date | None) -> Run:
    """Sync the world once, as the history says, and what that run saw and did."""
    zone, start = h["zone"], h["start"]
    state = State.DEPARTED if h["departed"] else State.ACTIVE
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
    return Run(
        start=start,
        end=end,
        days_before=h["days_before"],
        before_start=h["before_start"],
        state=state,
        read=read,
        now=now,
        before=before,
        after=world.people.get("e1"),
        recorded=recorded,
        recorded_start=recorded_start,
        p=p,
        done=actions(p),
        today=local_date(now, zone),
        surely_today=local_date(now - int(MAX_REPEAT.total_seconds() * 1000), zone),
    )


# ---------------------------------------------------------------- the oracle's invariants


def _check_created_only_in_the_window(r: Run) -> None:
    """Only someone read, active and not held yet is created: never before the window (nor
    before the start, when so set), nor after their end; created early, locked at once."""
    if "create" not in r.done:
        return
    start, end, today = r.start, r.end, r.today
    assert r.before is None
    assert r.read == "row" and r.state is State.ACTIVE
    if start is not None:
        assert today >= start - dt.timedelta(days=r.days_before)
        if r.before_start == "not_created":
            assert today >= start
        if today < start:  # created early: locked at once, until the start
            assert "lock" in r.done
    if end is not None and not (start is not None and start > end):
        assert today <= end  # nobody is created after their end


def _check_created_once_the_window_opens(r: Run) -> None:
    """A hire read whose window surely opened (and who has not ended) is created."""
    start, end = r.start, r.end
    if not (r.before is None and start is not None and r.row_of_the_active):
        return
    window = start - dt.timedelta(days=r.days_before)
    opened = r.surely_today >= window and r.before_start == "locked"
    if r.surely_today >= start or opened:
        ended = end is not None and end >= start and r.today > end
        if not ended:
            assert "create" in r.done


def _check_never_locked_early(r: Run) -> None:
    """Someone syncd held unlocked: locked only by their own end date, once over."""
    if not ("lock" in r.done and r.before is not None and not r.before.locked):
        return
    if r.row_of_the_active:
        assert r.end is not None and r.today > r.end and not r.rehire_back
    elif r.read == "incremental":
        assert r.recorded is not None and r.today > r.recorded


def _check_unlocked_only_in_time(r: Run) -> None:
    if "unlock" in r.done and r.read == "incremental":
        # A hire created locked before the start, not read: by the recorded start.
        recorded, recorded_start = r.recorded, r.recorded_start
        assert r.before is not None and r.before.lock_reason == NOT_STARTED
        assert recorded_start is not None and r.today >= recorded_start
        assert recorded is None or r.today <= recorded or recorded < recorded_start
    elif "unlock" in r.done:
        assert r.read == "row" and r.state is State.ACTIVE
        assert r.start is None or r.today >= r.start
        assert r.end is None or r.rehire_back or r.today <= r.end


def _check_unlocked_on_the_recorded_start(r: Run) -> None:
    """A hire locked before the start and not read is unlocked when the recorded start
    day surely came, unless their recorded end is over too."""
    before, recorded, recorded_start = r.before, r.recorded, r.recorded_start
    early = before is not None and before.locked and before.lock_reason == NOT_STARTED
    if early and r.after is not None and r.read == "incremental" and recorded_start is not None:
        over = recorded is not None and recorded >= recorded_start and r.today > recorded
        if r.surely_today >= recorded_start and not over:
            assert not r.after.locked, "the recorded start day came; the row was not read"


def _check_locked_after_the_end(r: Run) -> None:
    """Someone held and read is locked once their end date is surely over."""
    held = r.after is not None and r.before is not None
    if held and r.row_of_the_active and r.end is not None:
        assert r.after is not None
        assert r.after.locked or not (r.surely_today > r.end and not r.rehire_back), (
            "held past the end"
        )


def _check_locked_after_the_recorded_end(r: Run) -> None:
    """Someone held and not read is locked once the recorded end date is surely over,
    unless a recorded start after it came (a re-hire)."""
    held = r.after is not None and r.before is not None
    recorded, recorded_start = r.recorded, r.recorded_start
    back = recorded_start is not None and recorded is not None and recorded_start > recorded
    back = back and recorded_start is not None and r.today >= recorded_start  # a re-hire
    if held and r.read == "incremental" and recorded is not None and r.surely_today > recorded:
        assert r.after is not None
        assert r.after.locked or back, "the recorded end date passed; the row was not read"


def _check_leavers_locked(r: Run) -> None:
    if r.after is not None and r.read == "dropped" and r.before is not None:
        assert r.after.locked  # a leaver (leaver_policy lock), end date or not


def _check_scheduled_later(r: Run) -> None:
    p = r.p
    for s in p.scheduled:
        assert s.at_ms > r.now  # what is scheduled is not done yet
        assert s.key == "e1" and s.action in ("create", "unlock", "lock")
    if p.scheduled:
        assert p.removal_due is not None and p.removal_due <= p.scheduled[0].at_ms


@settings(max_examples=examples(300), deadline=None)
@given(h=histories())
def test_dates_never_lock_early_always_lock_after_and_create_nobody_before_the_window(
    h: dict[str, Any],
) -> None:
    policy = Policy(
        leaver_policy="lock",
        dates=DatePolicy(h["zone"], h["days_before"], h["before_start"]),
    )
    world = World(policy)
    end = h["end"]
    for now, read, how in zip(h["nows"], h["reads"], h["new_ends"], strict=True):
        end = _end_then(end, how, h["start"])
        r = _run(world, h, now, read, end)
        _check_created_only_in_the_window(r)
        _check_created_once_the_window_opens(r)
        _check_never_locked_early(r)
        _check_unlocked_only_in_time(r)
        _check_unlocked_on_the_recorded_start(r)
        _check_locked_after_the_end(r)
        _check_locked_after_the_recorded_end(r)
        _check_leavers_locked(r)
        _check_scheduled_later(r)
