"""A property of the planner over whole histories: nobody is locked or removed by mistake.

For ANY sequence of source reads A1..An (complete or incremental, with people present,
departed, absent, or in rejected rows that name them or not, shrinking and growing),
each planned with the snapshot the previous plans left (every change applied, or some
failing), a person is locked or removed only when

- departed in that read (a lock), or
- absent from a complete read whose rejected rows all name their person, and not
  named by one of them (a leaver: lock, or remove per the policy).

Checked on the plan alone: no platform, no database. The existing properties cover the
CSV reader (tests/sources), A-then-B convergence on the emulator (tests/engine) and the
report renderers (tests/reports); this one is about histories of reads.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.model import Department, Directory, Employee, Kind, Position, RejectedRow, State
from syncd.plan import (
    DAY_MS,
    Action,
    Limits,
    PlatformView,
    Policy,
    Snapshot,
    SyncedDepartment,
    SyncedEmployee,
    check_guards,
    department_hash,
    plan,
)
from tests.support.examples import examples

PEOPLE = 8
UNIT = Department("D1", "Unit")
# How a person shows up in one read.
PRESENT, DEPARTED, ABSENT, REJECTED_NAMED, REJECTED_UNNAMED = range(5)


@st.composite
def reads(draw: st.DrawFn) -> tuple[bool, list[int]]:
    complete = draw(st.booleans() | st.just(True))
    shown = draw(
        st.lists(
            st.sampled_from([PRESENT, PRESENT, PRESENT, DEPARTED, ABSENT, REJECTED_NAMED])
            | st.just(REJECTED_UNNAMED),
            min_size=PEOPLE,
            max_size=PEOPLE,
        )
    )
    return complete, shown


def person(n: int, state: State, version: int) -> Employee:
    return Employee(
        f"E{n}", f"u{n}", f"Person {n} v{version}", (Position("D1", primary=True),), state=state
    )


def directory_of(complete: bool, shown: list[int], version: int) -> Directory:
    employees = {}
    rejected = []
    for n, how in enumerate(shown):
        if how == PRESENT:
            employees[f"E{n}"] = person(n, State.ACTIVE, version)
        elif how == DEPARTED:
            employees[f"E{n}"] = person(n, State.DEPARTED, version)
        elif how == REJECTED_NAMED:
            rejected.append(RejectedRow(f"f.csv:{n}", "bad date", Kind.EMPLOYEE, f"E{n}", f"u{n}"))
        elif how == REJECTED_UNNAMED:
            rejected.append(RejectedRow(f"f.csv:{n}", "wrong number of fields", Kind.EMPLOYEE))
    return Directory({"D1": UNIT}, employees, tuple(rejected), complete=complete)


def allowed_to_go(directory: Directory, shown: list[int], key: str, departed_lock: bool) -> bool:
    n = int(key[1:])
    if departed_lock:
        return shown[n] == DEPARTED
    named = directory.rejected_keys(Kind.EMPLOYEE)
    unnamed = any(not (r.key or r.username) for r in directory.rejected)
    return (
        directory.complete
        and not unnamed
        and shown[n] == ABSENT
        and key not in named
        and f"u{n}" not in directory.rejected_by_username()
    )


@settings(max_examples=examples(300), deadline=None)
@given(
    history=st.lists(reads(), min_size=1, max_size=8),
    policy=st.sampled_from(["lock", "remove", "lock_then_remove"]),
    grace_days=st.integers(0, 2),
    failures=st.lists(st.booleans(), min_size=64, max_size=64),
    ratio=st.sampled_from([0.1, 1.0]),
)
def test_nobody_is_locked_or_removed_unless_departed_or_gone_from_a_clean_complete_read(
    history: list[tuple[bool, list[int]]],
    policy: str,
    grace_days: int,
    failures: list[bool],
    ratio: float,
) -> None:
    departments = {"D1": SyncedDepartment("D1", 2, "Acme/Unit", department_hash(UNIT))}
    employees: dict[str, SyncedEmployee] = {}
    view = PlatformView(1, "Acme")
    rules = Policy(leaver_policy=policy, remove_after_days=grace_days)
    fail = iter(failures * 10)
    next_id = 100
    for step, (complete, shown) in enumerate(history):
        now = (step + 1) * DAY_MS
        directory = directory_of(complete, shown, step % 2)
        snapshot = Snapshot(departments, dict(employees))
        the_plan = plan(directory, snapshot, view, rules, now)
        for change in the_plan.changes:
            if change.kind is Kind.EMPLOYEE and change.action in (Action.LOCK, Action.REMOVE):
                departed_lock = change.action is Action.LOCK and change.record is not None
                assert allowed_to_go(directory, shown, change.key, departed_lock), (
                    f"read {step}: {change.message}",
                    complete,
                    shown,
                )
        check_guards(the_plan, directory, snapshot, Limits(50, ratio))  # never raises
        # The changes land, except some that fail (planned again next time).
        for change in the_plan.changes:
            if change.kind is not Kind.EMPLOYEE or next(fail):
                continue
            synced = employees.get(change.key)
            if change.action is Action.CREATE:
                employees[change.key] = SyncedEmployee(
                    change.key, change.display, next_id, change.hash
                )
                next_id += 1
            elif change.action is Action.UPDATE and synced is not None:
                employees[change.key] = synced._replace(hash=change.hash)
            elif change.action is Action.LOCK and synced is not None:
                reason = "departed" if change.record is not None else "missing"
                since = synced.locked_since or now
                employees[change.key] = synced._replace(
                    locked=True, lock_reason=reason, locked_since=since
                )
            elif change.action is Action.UNLOCK and synced is not None:
                employees[change.key] = synced._replace(
                    locked=False, lock_reason=None, locked_since=None
                )
            elif change.action is Action.REMOVE:
                employees.pop(change.key, None)


def test_the_model_can_go_wrong() -> None:
    """The check itself refuses a leaver taken from an incremental read."""
    directory = directory_of(False, [ABSENT] * PEOPLE, 0)
    assert not allowed_to_go(directory, [ABSENT] * PEOPLE, "E1", departed_lock=False)
    complete = directory_of(True, [ABSENT] * PEOPLE, 0)
    assert allowed_to_go(complete, [ABSENT] * PEOPLE, "E1", departed_lock=False)
