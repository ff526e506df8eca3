"""Planning by effective dates: who is created, locked or unlocked now, and what is scheduled.

The rules (times are those of ``syncd.plan.dates``, in ``sync.dates.time_zone``):

- A future hire syncd does not hold is not created before the window opens
  (``create_days_before_start`` days before the start day); within it, they are created
  and locked until the start day (``before_start = "locked"``), or not created before
  it (``"not_created"``). A hire whose username an account already holds (on the platform,
  or in syncd's snapshot) waits for the start day, when the usual rules adopt or re-key.
- Someone syncd holds is never locked because their start date is in the future: only
  their own end date locks an active person. One held locked stays locked until the
  start day, then comes back by the usual rules (an unlock; the re-activation guard counts
  it, unless the lock was the one made before their start).
- An end date locks the person at the first run after the end of that day. The end date
  read is recorded (``Snapshot.end_dates``; a start date ahead, ``start_dates``): someone
  whose row is not read (an incremental read, a rejected row, a read that cannot say who
  is gone) is locked at its end all the same, and a hire locked before the start
  unlocked on the day. A complete read without them makes them a leaver as before
  (``leaver_policy``). A changed or removed end date, read before it passes, is what
  counts from then on.
- What the clock will do is listed as scheduled (``Plan.scheduled``), not as changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from syncd.model import Employee, Kind, State
from syncd.plan.actions import Action
from syncd.plan.dates import ENDED, NOT_STARTED, Scheduled, Timeline, local_time, timeline
from syncd.plan.values import Snapshot, SyncedEmployee, matches_any

if TYPE_CHECKING:
    from syncd.plan.employees import EmployeePlanner
    from syncd.plan.values import Policy


class EffectiveDates:
    """The dates' part of planning people, for one plan."""

    def __init__(self, policy: Policy, snapshot: Snapshot, now_ms: int) -> None:
        self.policy = policy.dates
        self.snapshot = snapshot
        self.now = now_ms
        self.scheduled: list[Scheduled] = []
        # Source id -> (why, lock_reason) of a lock the dates make.
        self.lock_reasons: dict[str, tuple[str, str | None]] = {}
        self.unlock_reasons: dict[str, str] = {}  # source id -> why, at the start day
        self.early: set[str] = set()  # created now, before their start: locked until then
        self.recorded: dict[str, tuple[str | None, str | None]] = {}  # Plan.dates

    # ------------------------------------------------------------ people read

    def effective(
        self, e: Employee, synced: SyncedEmployee | None, taken: Callable[[Employee], bool]
    ) -> Employee | None:
        """The person as their dates make them now (an ended one departed), or None when
        they are not to be planned yet (a future hire)."""
        t = timeline(e.start_date, e.end_date, self.policy) if e.start_date or e.end_date else None
        before = t is not None and t.before_start(self.now)
        self._record_dates(e, before)
        if t is None:
            return e
        if synced is None and before:
            return self._future_hire(e, t, taken)
        if t.ended(self.now):
            return self._ended(e, synced, t, before)
        if before and synced is not None:
            held = self._held_until_start(e, synced, t)
            if held is not None:
                return held
        self._started(e, synced, t)
        return e

    def _record_dates(self, e: Employee, before: bool) -> None:
        """Recorded: the end date, and the start date while it is ahead."""
        snapshot = self.snapshot
        wanted = (e.start_date if before else None, e.end_date)
        if wanted != (snapshot.start_dates.get(e.id), snapshot.end_dates.get(e.id)):
            self.recorded[e.id] = wanted

    def _ended(
        self, e: Employee, synced: SyncedEmployee | None, t: Timeline, before: bool
    ) -> Employee:
        """Past the end date: departed (locked), and a re-hire back on the new start day."""
        if e.state is State.ACTIVE:
            assert t.end is not None
            why = f"end date {e.end_date} passed ({local_time(t.end, self.policy.time_zone)})"
            self.lock_reasons[e.id] = (why, ENDED)
            e = e._replace(state=State.DEPARTED)
        if before and synced is not None:  # a re-hire: back on the new start day
            self._schedule_start(e, t)
        return e

    def _held_until_start(
        self, e: Employee, synced: SyncedEmployee, t: Timeline
    ) -> Employee | None:
        """A synced person before their start date: kept locked until it (None: not so)."""
        early = synced.lock_reason == NOT_STARTED and not synced.locked
        if early and e.state is State.ACTIVE:
            # Created before the start, and the lock failed: locked again (nobody else is
            # locked because their start date is ahead).
            why = f"created before the start date {e.start_date}: locked until then"
            self.lock_reasons[e.id] = (why, NOT_STARTED)
            self._schedule_start(e, t)
            return e._replace(state=State.DEPARTED)
        if not synced.locked:
            return None
        # Held locked (ended, departed, or created before the start): until the start.
        if e.state is State.ACTIVE:
            why = f"before the start date {e.start_date}"
            self.lock_reasons[e.id] = (why, synced.lock_reason or NOT_STARTED)
            e = e._replace(state=State.DEPARTED)
            self._schedule_start(e, t)
        return e

    def _started(self, e: Employee, synced: SyncedEmployee | None, t: Timeline) -> None:
        """Started (or no start date): unlocked at the start, its end date scheduled."""
        locked = synced is not None and synced.locked
        if locked and synced is not None and synced.lock_reason == NOT_STARTED:
            self.unlock_reasons[e.id] = f"start date {e.start_date} reached"
        ahead = t.end is not None and self.now < t.end  # a re-hire's earlier end is behind
        if ahead and t.end is not None and e.state is State.ACTIVE and not locked:
            self._schedule_end(e.id, e.username, e.end_date or "", t.end)

    def _future_hire(
        self, e: Employee, t: Timeline, taken: Callable[[Employee], bool]
    ) -> Employee | None:
        if e.state is State.DEPARTED:
            return e  # departed in the source: not created, as any departed newcomer
        assert t.start is not None and t.window is not None
        zone, now = self.policy.time_zone, self.now
        locked = self.policy.before_start == "locked"
        if locked and t.in_window(now) and not taken(e):
            self.early.add(e.id)
            self._schedule_start(e, t)
            return e
        if locked and not t.in_window(now):
            message = (
                f"create at {local_time(t.window, zone)}, locked until {local_time(t.start, zone)} "
                f"(start date {e.start_date})"
            )
            self._add(e.id, e.username, Action.CREATE, t.window, message)
        else:
            why = "an account already holds the username" if locked else "start date"
            message = f"create at {local_time(t.start, zone)} ({why}: {e.start_date})"
            self._add(e.id, e.username, Action.CREATE, t.start, message)
        return None

    def _schedule_start(self, e: Employee, t: Timeline) -> None:
        assert t.start is not None
        message = (
            f"unlock at {local_time(t.start, self.policy.time_zone)} (start date {e.start_date})"
        )
        self._add(e.id, e.username, Action.UNLOCK, t.start, message)

    def _schedule_end(self, key: str, display: str, end_date: str, end: int) -> None:
        when = local_time(end, self.policy.time_zone)
        message = f"lock at {when} (the end of {end_date}, the end date)"
        self._add(key, display, Action.LOCK, end, message)

    def _add(self, key: str, display: str, action: Action, at: int, message: str) -> None:
        self.scheduled.append(Scheduled(key, display, action.value, at, message))

    # ------------------------------------------------------------ what the planner asks

    def held_dates(self) -> frozenset[str]:
        """The people the snapshot holds dates for (their dates may have been removed)."""
        return frozenset(self.snapshot.end_dates).union(self.snapshot.start_dates)

    def lock_reason(self, key: str) -> tuple[str, str | None] | None:
        return self.lock_reasons.get(key)

    def created_early(self, planner: EmployeePlanner, e: Employee) -> str | None:
        """A future hire created now, in the window: locked until the start day. Returns
        the lock reason their snapshot row starts with (unlocked, "not_started"): if the
        lock fails, the next run before the start locks them again."""
        if e.id not in self.early:
            return None
        why = f"created before the start date {e.start_date}: locked until then"
        planner.locks.append(
            planner.change(Action.LOCK, e, None, reason=why, lock_reason=NOT_STARTED)
        )
        return NOT_STARTED

    # ------------------------------------------------------------ people not read

    def unread(self, planner: EmployeePlanner) -> None:
        """People syncd holds whose row this read did not give (an incremental read, a
        rejected row, a read that cannot say who is gone), by their recorded dates: locked
        at the end date; a hire created locked before the start, unlocked on the start
        day. Those a complete read lacks are leavers, by the leaver policy."""
        snapshot = self.snapshot
        if not (snapshot.end_dates or snapshot.start_dates):
            return
        for synced in self._unread_with_dates(planner):
            key = synced.source_id
            start_date, end_date = snapshot.start_dates.get(key), snapshot.end_dates.get(key)
            t = timeline(start_date, end_date, self.policy)
            if t.ended(self.now):
                assert end_date is not None
                self._ended_unread(planner, synced, end_date, t)
            elif t.end is not None and self.now < t.end and not synced.locked:
                self._schedule_end(key, synced.username, end_date or "", t.end)
            if synced.locked and synced.lock_reason == NOT_STARTED and t.start is not None:
                self._started_unread(planner, synced, start_date or "", t)

    def _unread_with_dates(self, planner: EmployeePlanner) -> Iterator[SyncedEmployee]:
        """The synced people with recorded dates whose row this read did not give, and
        whose dates are this planner's to keep: not excluded, not deleted on the platform
        (planned with drift), and, when the read says who left, only those rejected."""
        directory, snapshot = planner.directory, self.snapshot
        protected = directory.rejected_keys(Kind.EMPLOYEE)
        excluded = planner.policy.exclude_usernames
        read = directory.employees
        for key in dict.fromkeys((*snapshot.end_dates, *snapshot.start_dates)):
            synced = snapshot.employees.get(key)
            if key in read or synced is None:
                continue
            if directory.leavers_known and not (key in protected or planner.rejected_holds(synced)):
                continue
            if excluded and matches_any(synced.username, excluded):
                continue
            if synced.username not in planner.view.deleted:
                yield synced

    def _ended_unread(
        self, planner: EmployeePlanner, synced: SyncedEmployee, end_date: str, t: Timeline
    ) -> None:
        key = synced.source_id
        if synced.locked or any(c.key == key for c in planner.locks):
            return
        assert t.end is not None
        # Locked on the platform meanwhile, while syncd held them unlocked: not unlocked.
        planner.unlocks[:] = [c for c in planner.unlocks if c.key != key]
        zone = self.policy.time_zone
        when = local_time(t.end, zone)
        why = f"end date {end_date} passed ({when}); recorded, the row was not read"
        planner.locks.append(
            planner.change(Action.LOCK, None, synced, reason=why, lock_reason=ENDED)
        )

    def _started_unread(
        self, planner: EmployeePlanner, synced: SyncedEmployee, start_date: str, t: Timeline
    ) -> None:
        """A hire created locked before their start, not read now: unlocked on the day."""
        key = synced.source_id
        assert t.start is not None
        if self.now < t.start:
            when = local_time(t.start, self.policy.time_zone)
            message = f"unlock at {when} (start date {start_date})"
            self._add(key, synced.username, Action.UNLOCK, t.start, message)
            return
        if t.ended(self.now) or any(c.key == key for c in (*planner.locks, *planner.unlocks)):
            return
        record = planner.drift.as_written(synced, planner.policy.extended_fields)
        why = f"start date {start_date} reached; recorded, the row was not read"
        planner.unlocks.append(planner.change(Action.UNLOCK, record, synced, reason=why))

    def due(self) -> int | None:
        return min((s.at_ms for s in self.scheduled), default=None)

    def in_order(self) -> tuple[Scheduled, ...]:
        return tuple(sorted(self.scheduled, key=lambda s: (s.at_ms, s.display, s.key)))
