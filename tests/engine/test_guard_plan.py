"""The re-activation and update guards, with plain values (issue 24, case 6): mass unlocks,
accounts made anew for people held locked, and mass updates stop a run like mass removals,
each with its one-shot override named in the message."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from syncd.model import Directory, Kind, RejectedRow, State
from syncd.plan import (
    Action,
    Departures,
    Limits,
    PlatformEmployee,
    PlatformPerson,
    PlatformView,
    Policy,
    Snapshot,
    always_blocked,
    departures,
    field_changes,
    plan,
    reactivations,
    shifted_status,
    updates,
)
from tests.engine.plan_world import (
    COMPANY,
    NOW,
    changed_there,
    directory,
    empty_view,
    guards,
    person,
    synced,
)
from tests.support.examples import examples


def staff(n: int, **kw: Any) -> list[Any]:
    return [person(f"e{i}", f"user{i}", "rd", mobile=f"1380000{i:04d}", **kw) for i in range(n)]


STILL_GONE = person("x99", "gone99", "rd", state=State.DEPARTED)


def departed_then_back(total: int, back: int) -> tuple[Any, Directory, Snapshot]:
    """``total`` people synced, ``back`` of them held locked as departed and active again;
    one more, never synced, still departed (the read tells departed people apart:
    test_status_evidence has the reads that cannot)."""
    people = staff(total)
    snapshot, view = synced(directory(COMPANY, people))
    employees = dict(snapshot.employees)
    for e in people[:back]:
        employees[e.id] = employees[e.id]._replace(locked=True, lock_reason="departed")
    snapshot = replace(snapshot, employees=employees)
    d = directory(COMPANY, [*people, STILL_GONE])
    return plan(d, snapshot, view, Policy(), NOW), d, snapshot


# ---------------------------------------------------------------- re-activations


def test_mass_unlocks_are_blocked_naming_the_count_the_limits_and_the_override() -> None:
    p, d, snapshot = departed_then_back(100, 12)
    guard = guards(p, d, snapshot)["max_reactivations"]
    assert not guard.passed
    assert guard.message == (
        "12 re-activations planned (12 unlocks of people back in the source); blocked past "
        "both 3 and 1% of 100 synced people: rerun with --allow-reactivations 12 if this "
        "is intended"
    )
    assert guards(p, d, snapshot, allow_reactivations=12)["max_reactivations"].overridden
    assert not guards(p, d, snapshot, allow_reactivations=11)["max_reactivations"].passed
    assert guards(p, d, snapshot)["max_removals"].passed  # the other guards are untouched


def test_a_few_returning_people_pass_and_a_large_company_may_take_more() -> None:
    p, d, snapshot = departed_then_back(20, 3)
    assert guards(p, d, snapshot)["max_reactivations"].passed  # 3, at the floor of 3
    p, d, snapshot = departed_then_back(40, 4)  # a handful in a small company: blocked
    assert not guards(p, d, snapshot)["max_reactivations"].passed
    p, d, snapshot = departed_then_back(2000, 15)
    assert guards(p, d, snapshot)["max_reactivations"].passed  # 15 is under 1% of 2000
    assert not guards(p, d, snapshot, max_reactivation_ratio=0.005)["max_reactivations"].passed


def test_unlocks_of_accounts_locked_on_the_platform_are_counted_and_named() -> None:
    people = staff(30)
    snapshot, view = synced(directory(COMPANY, people))
    locked_there = {
        e.username: PlatformEmployee(
            snapshot.employees[e.id].employee_id or 0, e.username, True, {}, ()
        )
        for e in people[:11]
    }
    d = directory(COMPANY, people)
    p = plan(d, snapshot, replace(view, changed=locked_there), Policy(), NOW)
    guard = guards(p, d, snapshot)["max_reactivations"]
    assert not guard.passed
    assert "(11 unlocks of accounts locked on the platform by someone else)" in guard.message


def test_adopting_locked_accounts_to_unlock_them_is_a_reactivation() -> None:
    people = staff(12)
    accounts = [
        PlatformPerson(500 + n, e.username, locked=True, mobile=e.mobile)
        for n, e in enumerate(people)
    ]
    d = directory(COMPANY, people)
    p = plan(d, Snapshot(), empty_view(people=accounts), Policy(), NOW)
    guard = guards(p, d, Snapshot())["max_reactivations"]
    assert not guard.passed
    assert "12 unlocks of locked accounts being adopted" in guard.message


def test_an_account_made_anew_for_someone_held_locked_is_a_reactivation() -> None:
    # A departed person's account deleted on the platform; the source has them active again.
    people = staff(5)
    snapshot, view = synced(directory(COMPANY, people))
    employees = dict(snapshot.employees)
    employees["e0"] = employees["e0"]._replace(locked=True, lock_reason="departed")
    snapshot = replace(snapshot, employees=employees)
    d = directory(COMPANY, people)
    p = plan(d, snapshot, replace(view, deleted=frozenset({"user0"})), Policy(), NOW)
    assert [(c.action.value, c.key) for c in p.changes] == [("create", "e0")]
    guard = guards(p, d, snapshot, max_reactivations=0, max_reactivation_ratio=0.0)
    assert not guard["max_reactivations"].passed
    assert "1 account made anew for people held locked" in guard["max_reactivations"].message


def test_departed_people_who_stay_departed_are_no_reactivation() -> None:
    people = staff(30)
    snapshot, view = synced(directory(COMPANY, people))
    gone = [e._replace(state=State.DEPARTED) for e in people[:20]] + people[20:]
    d = directory(COMPANY, gone)
    p = plan(d, snapshot, view, Policy(), NOW)
    assert "max_reactivations" not in guards(p, d, snapshot)


# ---------------------------------------------------------------- updates


def test_mass_updates_are_blocked_past_both_limits() -> None:
    people = staff(200)
    snapshot, view = synced(directory(COMPANY, people))
    d = directory(COMPANY, [e._replace(job_title="Engineer") for e in people[:150]] + people[150:])
    p = plan(d, snapshot, view, Policy(), NOW)
    guard = guards(p, d, snapshot)["max_updates"]
    assert not guard.passed
    assert guard.message == (
        "150 updates of synced people planned; blocked past both 100 and 50% of 200 synced "
        "people: rerun with --allow-updates 150 if this is intended"
    )
    assert guards(p, d, snapshot, allow_updates=150)["max_updates"].overridden
    assert not guards(p, d, snapshot, allow_updates=149)["max_updates"].passed
    assert guards(p, d, snapshot, max_update_ratio=0.8)["max_updates"].passed


def test_a_small_company_updating_everyone_is_not_blocked() -> None:
    people = staff(40)
    snapshot, view = synced(directory(COMPANY, people))
    d = directory(COMPANY, [e._replace(job_title="Engineer") for e in people])
    p = plan(d, snapshot, view, Policy(), NOW)
    guard = guards(p, d, snapshot)["max_updates"]
    assert guard.passed and guard.message.startswith("40 updates of synced people planned")
    assert not guards(p, d, snapshot, max_updates=39)["max_updates"].passed


def test_drift_repairs_are_updates_and_named() -> None:
    people = staff(4)
    snapshot, view = synced(directory(COMPANY, people))
    e = people[0]
    edited = PlatformEmployee(
        snapshot.employees[e.id].employee_id or 0, e.username, False, {"name": "Someone"}, ()
    )
    d = directory(COMPANY, people)
    p = plan(d, snapshot, replace(view, changed={e.username: edited}), Policy(), NOW)
    guard = guards(p, d, snapshot)["max_updates"]
    assert "(1 of them putting back changes made on the platform)" in guard.message


def test_adoptions_and_creations_are_not_updates_of_synced_people() -> None:
    people = staff(300)
    d = directory(COMPANY, people)
    accounts = [PlatformPerson(500 + n, e.username) for n, e in enumerate(people)]
    p = plan(d, Snapshot(), empty_view(people=accounts), Policy(), NOW)
    assert "max_updates" not in guards(p, d, Snapshot())


FIELDS = ("email", "mobile", "tel", "en_name", "job_title", "sn")


def employee_with_all(i: int) -> Any:
    return person(f"e{i}", f"user{i}", "rd", **{f: f"{f}-{i}" for f in FIELDS})


def expected_changes(field: str, how: str, n: int, renamed: int) -> Counter[str]:
    """Emptied: any field. Replaced: what tells people apart (a new title is an update).
    Passed on: a unique value another person of the run gives up."""
    expected: Counter[str] = Counter()
    if how == "emptied":
        expected[f"{field} emptied"] = n
    elif field in ("name", "email", "mobile", "sn"):
        expected[f"{field} replaced"] = n
    if how == "shifted" and field in ("email", "mobile"):
        expected[f"{field} passed on"] = n - 1
    expected["name replaced"] += renamed
    return +expected


@settings(max_examples=examples(80), deadline=None)
@given(
    people=st.integers(2, 400),
    share=st.floats(0, 1),
    field=st.sampled_from(FIELDS),
    how=st.sampled_from(["emptied", "shifted", "retitled"]),
    renamed=st.integers(0, 3),
)
def test_one_field_changed_for_many_stops_the_run_whatever_the_updates_number(
    people: int, share: float, field: str, how: str, renamed: int
) -> None:
    # Found by exploration, 2026-11-29: a column renamed or left out reads as empty for
    # everyone, and in a company under 100 people its updates passed the update guard; so
    # did a column whose rows shifted by one, handing each person another's mobile or name.
    staff = [employee_with_all(i) for i in range(people)]
    snapshot, view = synced(directory(COMPANY, staff))
    n = round(people * share)
    values = {
        "emptied": [None] * n,
        "shifted": [getattr(e, field) for e in staff[1:n]] + [f"{field}-new"],
        "retitled": [f"{field}-{i}, retitled" for i in range(n)],
    }[how]
    changes: list[dict[str, Any]] = [{field: v} for v in values[:n]]
    read = [e._replace(**c) for e, c in zip(staff, changes, strict=False)] + staff[n:]
    others = min(renamed, people - n)  # and a few of the others renamed, as on any day
    kept, renaming = read[: people - others], read[people - others :]
    read = kept + [e._replace(name=f"Renamed {e.id}") for e in renaming]
    d = directory(COMPANY, read)
    p = plan(d, snapshot, view, Policy(), NOW)

    expected = expected_changes(field, how, n, others)
    assert field_changes(p, snapshot) == expected
    if not p.changes:
        return
    guard = guards(p, d, snapshot)["max_updates"]
    wide = {
        f"{what} for {count:,}"
        for what, count in expected.items()
        if count > 3 and (what.endswith("passed on") or count / people > 0.05)
    }
    assert all(said in guard.message for said in wide), guard.message
    changed = updates(p, snapshot)[0]
    assert guard.passed is not (bool(wide) or (changed > 100 and changed > people / 2))
    assert guards(p, d, snapshot, allow_updates=changed)["max_updates"].passed
    most = max(expected.values(), default=0)
    unbounded = guards(p, d, snapshot, max_field_changes=most, max_updates=changed)
    assert unbounded["max_updates"].passed  # the fields alone stopped it


def test_a_table_field_emptied_is_named_by_its_key() -> None:
    extended = {"city": "extended1"}
    staff = [person(f"e{i}", f"user{i}", "rd", extra=(("city", "Paris"),)) for i in range(10)]
    policy = Policy(extended_fields=extended)
    snapshot, view = synced(directory(COMPANY, staff), policy=policy)
    d = directory(COMPANY, [e._replace(extra=()) for e in staff])
    p = plan(d, snapshot, view, policy, NOW)
    assert field_changes(p, snapshot) == {"extended.extended1 emptied": 10}  # platform field
    guard = guards(p, d, snapshot)["max_updates"]
    assert not guard.passed
    assert "among more than 3 (extended.extended1 emptied for 10): a column or attribute" in (
        guard.message
    )


# ------------------------------------------------ access granted in every form (issue 32)


def test_accounts_for_people_the_source_called_departed_are_access_granted() -> None:
    """Former employees never synced, and leavers whose accounts syncd removed, turned
    active by the source: each account made for them counts, as an unlock does."""
    people = staff(40)
    snapshot, view = synced(directory(COMPANY, people))
    former = [person(f"x{n}", f"former{n}", "rd") for n in range(5)]
    kept = {"x0": "departed", "x1": "departed", "x2": "removed", "x3": "removed"}
    snapshot = replace(snapshot, departures=kept)
    d = directory(COMPANY, [*people, *former, STILL_GONE])
    p = plan(d, snapshot, view, Policy(), NOW)
    assert sorted(c.key for c in p.changes) == ["x0", "x1", "x2", "x3", "x4"]
    back = reactivations(p, snapshot)
    assert (back.departed, back.removed, back.total) == (2, 2, 4)  # x4 is a hire
    guard = guards(p, d, snapshot)["max_reactivations"]
    assert not guard.passed
    assert guard.message == (
        "4 re-activations planned (2 accounts made anew for people syncd removed, 2 accounts "
        "made for people the source called departed before); blocked past both 3 and 1% of "
        "40 synced people: rerun with --allow-reactivations 4 if this is intended"
    )


def test_what_a_run_leaves_the_guard_to_remember_is_ids_only() -> None:
    people = staff(6)
    snapshot, view = synced(directory(COMPANY, people))
    snapshot = replace(snapshot, departures={"e1": "departed", "x9": "removed"})
    read = [people[0]._replace(state=State.DEPARTED), *people[1:4]]  # e4, e5 missing
    d = directory(COMPANY, [*read, person("x8", "former8", state=State.DEPARTED)])
    p = plan(d, snapshot, view, Policy(leaver_policy="remove"), NOW)
    gone = departures(p, d, snapshot)
    assert gone == Departures(("e0", "x8"), ("e1",), ("e4", "e5"))


@st.composite
def histories(draw: st.DrawFn) -> tuple[Directory, Snapshot, PlatformView]:
    """Synced people (some held locked, by the source or as missing), former employees
    never synced, removed or let go of when deleted (their ids kept), and a read that
    turns any of them active."""
    n = draw(st.integers(1, 12))
    people = staff(n)
    snapshot, view = synced(directory(COMPANY, people))
    held = dict(snapshot.employees)
    for e in people:
        why = draw(st.sampled_from([None, "departed", "missing", "not_started"]))
        if why is not None:
            held[e.id] = held[e.id]._replace(locked=True, lock_reason=why)
    former = [person(f"x{i}", f"former{i}", "rd") for i in range(draw(st.integers(0, 12)))]
    kept = {e.id: draw(st.sampled_from(["departed", "removed", "deleted"])) for e in former}
    snapshot = replace(snapshot, employees=held, departures=kept)
    everyone = people + former + [person(f"h{i}", f"hire{i}", "rd") for i in range(2)]
    read = [
        e._replace(state=draw(st.sampled_from([State.ACTIVE, State.DEPARTED])))
        for e in everyone
        if draw(st.booleans()) or e.id in held
    ]
    return directory(COMPANY, read), snapshot, view


@settings(max_examples=examples(150), deadline=None)
@given(history=histories())
def test_every_sign_in_given_to_someone_who_had_none_is_counted(
    history: tuple[Directory, Snapshot, PlatformView],
) -> None:
    """Whoever had no sign-in (held locked but for a hire's start day, removed, or called
    departed) and gets an account or an unlock in the plan is counted, once; nobody else
    (not those let go of when their account was deleted while held active)."""
    d, snapshot, view = history
    p = plan(d, snapshot, view, Policy(), NOW)
    had_none = {
        k for k, s in snapshot.employees.items() if s.locked and s.lock_reason != "not_started"
    } | {
        k
        for k, why in snapshot.departures.items()
        if k not in snapshot.employees and why != "deleted"
    }
    given = {c.key for c in p.changes if c.action in (Action.CREATE, Action.UNLOCK)}
    assert reactivations(p, snapshot).total == len(given & had_none)
    if len(given & had_none) > 3:  # more than the floor in a company this small
        assert not guards(p, d, snapshot)["max_reactivations"].passed


@settings(max_examples=examples(150), deadline=None)
@given(history=histories())
def test_what_no_count_lets_through_is_named_for_a_saved_plan(
    history: tuple[Directory, Snapshot, PlatformView],
) -> None:
    """always_blocked names a guard's block exactly when the guard blocks whatever the
    number: a saved plan stands for an override of it only if its review showed it
    (syncd.run.saved_plan)."""
    d, snapshot, view = history
    p = plan(d, snapshot, view, Policy(), NOW)
    no_count = guards(p, d, snapshot, max_reactivations=10**6, max_updates=10**6)
    named = always_blocked(p, d, snapshot, Limits())
    for name in ("max_reactivations", "max_updates"):
        blocked = name in no_count and not no_count[name].passed
        assert blocked == any(b.startswith(f"{name}: ") for b in named), (name, named)


# ------------------------------------------------ a status column shifted by a row


def held_departed_then_read(
    states: list[State], read: list[State]
) -> tuple[Any, Directory, Snapshot]:
    """Staff synced with ``states`` (the departed held locked as such), then read as ``read``
    says: the plan, the read, the snapshot."""
    everyone = staff(len(states))
    snapshot, view = synced(directory(COMPANY, everyone))
    held = dict(snapshot.employees)
    for n, state in enumerate(states):
        if state is State.DEPARTED:
            held[f"e{n}"] = held[f"e{n}"]._replace(locked=True, lock_reason="departed")
    snapshot = replace(snapshot, employees=held)
    d = directory(COMPANY, [e._replace(state=s) for e, s in zip(everyone, read, strict=True)])
    return plan(d, snapshot, view, Policy(), NOW), d, snapshot


@settings(max_examples=examples(80), deadline=None)
@given(
    people=st.integers(6, 300),
    departed=st.sets(st.integers(0, 299), min_size=1, max_size=12),
    by=st.sampled_from([-2, -1, 1, 2]),
)
@example(people=6, departed={0, 2}, by=2)  # departed rows a row apart, shifted by two
def test_a_status_column_shifted_by_a_row_gives_nobody_access_unreviewed(
    people: int, departed: set[int], by: int
) -> None:
    # Found by exploration, 2026-11-29: the status column shifted down a row handed each
    # former employee's status to the next row: 3 of them unlocked and 3 active people
    # locked, exit 0, every count under the guards' limits.
    gone = sorted(n for n in departed if n < people)
    assume(gone)
    states = [State.DEPARTED if n in gone else State.ACTIVE for n in range(people)]
    # Each row has the status of the row `by` above it (below it, negative); the rows left
    # without one read active.
    shifted = [states[n - by] if 0 <= n - by < people else State.ACTIVE for n in range(people)]
    p, d, snapshot = held_departed_then_read(states, shifted)
    returns = [n for n in range(people) if states[n] is State.DEPARTED is not shifted[n]]
    leavers = [n for n in range(people) if shifted[n] is State.DEPARTED is not states[n]]
    if not returns or not leavers:  # statuses pushed out of the file, or all alike
        return
    pair = shifted_status(p, d, snapshot)
    assert pair is not None
    back, leaving = (int(k[1:]) for k in pair)
    assert states[back] is State.DEPARTED and shifted[back] is State.ACTIVE
    assert shifted[leaving] is State.DEPARTED
    guard = guards(p, d, snapshot)["max_reactivations"]
    assert not guard.passed and "a status column shifted by a row?" in guard.message
    assert any("shifted by a row" in b for b in always_blocked(p, d, snapshot, Limits()))
    allowed = reactivations(p, snapshot).total
    assert guards(p, d, snapshot, allow_reactivations=allowed)["max_reactivations"].passed


# How syncd came to have leavers as former employees: locked, then its whole state
# directory rolled back to before (only the platform's lock tells); their accounts removed
# (its departures say so); removed, and the state rolled back (the platform has no account,
# the database holds them active).
FORGOTTEN = ["locked, rolled back", "removed", "removed, rolled back"]


def former_employees(
    how: str, everyone: list[Any], gone: list[int]
) -> tuple[Snapshot, PlatformView]:
    """The snapshot and the platform's view once the people ``gone`` have left, as ``how``."""
    snapshot, view = synced(directory(COMPANY, everyone))
    names, keys = [f"user{n}" for n in gone], {f"e{n}" for n in gone}
    if how == "locked, rolled back":
        for username in names:
            view = changed_there(view, snapshot, username, locked=True)
    elif how == "removed":
        held = {k: s for k, s in snapshot.employees.items() if k not in keys}
        snapshot = replace(snapshot, employees=held, departures=dict.fromkeys(keys, "removed"))
    else:
        view = replace(view, deleted=frozenset(names))
    return snapshot, view


@settings(max_examples=examples(120), deadline=None)
@given(
    how=st.sampled_from(FORGOTTEN),
    people=st.integers(6, 200),
    departed=st.sets(st.integers(0, 199), min_size=1, max_size=8),
    by=st.sampled_from([-2, -1, 1, 2]),
)
@example(how=FORGOTTEN[0], people=6, departed={2}, by=1)
@example(how=FORGOTTEN[1], people=6, departed={2}, by=1)
@example(how=FORGOTTEN[2], people=6, departed={0, 1, 2}, by=1)  # a run of them
def test_a_shifted_status_column_gives_no_former_employee_access(
    how: str, people: int, departed: set[int], by: int
) -> None:
    """A status column shifted by a row must not unlock a former employee, or make them an
    account again, beside a neighbour it locks, however syncd came to know they left: also
    when only the platform remembers it (the state directory rolled back)."""
    gone = sorted(n for n in departed if n < people)
    assume(gone)
    states = [State.DEPARTED if n in gone else State.ACTIVE for n in range(people)]
    shifted = [states[n - by] if 0 <= n - by < people else State.ACTIVE for n in range(people)]
    everyone = staff(people)
    snapshot, view = former_employees(how, everyone, gone)
    d = directory(COMPANY, [e._replace(state=s) for e, s in zip(everyone, shifted, strict=True)])
    p = plan(d, snapshot, view, Policy(), NOW)
    given_access = {c.key for c in p.changes if c.action in (Action.UNLOCK, Action.CREATE)}
    locked = {c.key for c in p.changes if c.action is Action.LOCK}
    if not given_access or not locked:  # statuses pushed out of the file, or all alike
        return
    assert given_access <= {f"e{n}" for n in gone}
    guard = guards(p, d, snapshot)["max_reactivations"]
    assert not guard.passed and "a status column shifted by a row?" in guard.message
    assert any("shifted by a row" in b for b in always_blocked(p, d, snapshot, Limits()))


def test_a_wiped_platform_made_anew_is_no_reactivation() -> None:
    people = staff(30)
    snapshot, view = synced(directory(COMPANY, people))
    view = replace(view, deleted=frozenset(e.username for e in people))
    d = directory(COMPANY, people)
    p = plan(d, snapshot, view, Policy(), NOW)
    assert len([c for c in p.changes if c.action is Action.CREATE]) == 30
    assert reactivations(p, snapshot).total == 0
    assert "max_reactivations" not in guards(p, d, snapshot)


@settings(max_examples=examples(150), deadline=None)
@given(data=st.data())
def test_an_account_deleted_while_its_row_is_rejected_counts_as_if_made_at_once(
    data: st.DataObject,
) -> None:
    """Accounts deleted on the platform (another admin, a wipe) while their people's rows
    are rejected: those records are let go of, and the accounts made once the rows are
    read again count under the guard on access granted as they would have had the rows
    been read all along: someone held active is a wiped platform's person (not counted),
    someone held locked a re-activation. A rejected row never turns one into the other."""
    people = staff(data.draw(st.integers(1, 12)))
    snapshot, view = synced(directory(COMPANY, people))
    held = dict(snapshot.employees)
    deleted = data.draw(st.sets(st.sampled_from([e.id for e in people]), min_size=1))
    for key in deleted:
        if why := data.draw(st.sampled_from([None, "departed", "missing"])):
            held[key] = held[key]._replace(locked=True, lock_reason=why)
    snapshot = replace(snapshot, employees=held)
    view = replace(view, deleted=frozenset(held[k].username for k in deleted))
    # Then: the rows of the deleted people are rejected, the others read as synced.
    rejected = [RejectedRow("employees.csv:9", "bad mobile", Kind.EMPLOYEE, key=k) for k in deleted]
    read = [e for e in people if e.id not in deleted]
    then = directory(COMPANY, read, rejected=rejected)
    first = plan(then, snapshot, view, Policy(), NOW)
    assert sorted(c.key for c in first.changes) == sorted(deleted)
    assert {c.action for c in first.changes} == {Action.FORGET}
    gone = departures(first, then, snapshot)
    kept = dict.fromkeys(gone.let_go, "removed") | dict.fromkeys(gone.deleted, "deleted")
    after = replace(
        snapshot,
        employees={k: s for k, s in held.items() if k not in deleted},
        departures=kept,
    )
    # Now: the rows read again, each active or departed.
    states = {k: data.draw(st.sampled_from([State.ACTIVE, State.DEPARTED])) for k in deleted}
    now = directory(COMPANY, [e._replace(state=states.get(e.id, State.ACTIVE)) for e in people])
    later = plan(now, after, replace(view, deleted=frozenset()), Policy(), NOW)
    at_once = plan(now, snapshot, view, Policy(), NOW)  # had the rows been read all along
    made = sorted(c.key for c in later.changes if c.action is Action.CREATE)
    assert made == sorted(c.key for c in at_once.changes if c.action is Action.CREATE)
    counted, expected = reactivations(later, after), reactivations(at_once, snapshot)
    assert (counted.total, counted.deleted) == (expected.total, expected.deleted)


@settings(max_examples=examples(40), deadline=None)
@given(people=st.integers(10, 300), data=st.data())
def test_a_return_and_a_departure_rows_apart_are_an_ordinary_day(
    people: int, data: st.DataObject
) -> None:
    back = data.draw(st.integers(0, people - 1))
    leaving = data.draw(st.integers(0, people - 1).filter(lambda n: abs(n - back) > 2))
    everyone = staff(people)
    snapshot, view = synced(directory(COMPANY, everyone))
    held = dict(snapshot.employees)
    held[f"e{back}"] = held[f"e{back}"]._replace(locked=True, lock_reason="departed")
    snapshot = replace(snapshot, employees=held)
    read = [e._replace(state=State.DEPARTED) if n == leaving else e for n, e in enumerate(everyone)]
    d = directory(COMPANY, read)
    p = plan(d, snapshot, view, Policy(), NOW)
    assert shifted_status(p, d, snapshot) is None
    assert guards(p, d, snapshot)["max_reactivations"].passed  # one return: under the floor
