"""A read without a status gives nobody the source called departed access (found by
exploration, 2026-11-29): a file whose status column is renamed or left out reads everyone
as active, which is not evidence that anyone returned. People syncd locked as departed stay
locked, people a read called departed get no account, and the plan says so (KEPT_LOCKED);
a read with a status decides as it always did."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.model import Employee, State
from syncd.plan import KEPT_LOCKED, Action, PlatformView, Policy, Snapshot, plan
from tests.engine.plan_world import COMPANY, NOW, changed_there, directory, person, synced
from tests.support.examples import examples

# What syncd knows of one person before the read: held unlocked, held locked as departed or
# as missing, not held but remembered as departed or removed, or never seen.
HELD = ["unlocked", "departed", "missing", "gone departed", "gone removed", "new"]


def known_as(known: list[tuple[str, bool]]) -> tuple[list[Employee], Snapshot, PlatformView]:
    """The staff (everyone active), and what syncd knows of each as ``known`` says: how it
    holds them (HELD), and whether someone unlocked them on the platform."""
    staff = [person(f"e{n}", f"user{n}", "rd") for n in range(len(known))]
    snapshot, view = synced(directory(COMPANY, staff))
    held, departures = dict(snapshot.employees), {}
    for n, (how, unlocked_there) in enumerate(known):
        key = f"e{n}"
        if how in ("departed", "missing"):
            held[key] = held[key]._replace(locked=True, lock_reason=how, locked_since=NOW)
            if unlocked_there:
                view = changed_there(view, replace(snapshot, employees=held), f"user{n}")
        elif how != "unlocked":
            del held[key]
            if how.startswith("gone"):
                departures[key] = how.removeprefix("gone ")
    return staff, replace(snapshot, employees=held, departures=departures), view


@settings(max_examples=examples(80), deadline=None)
@given(
    known=st.lists(st.tuples(st.sampled_from(HELD), st.booleans()), min_size=1, max_size=6),
    status_read=st.booleans(),
)
def test_only_a_read_with_a_status_gives_the_departed_access(
    known: list[tuple[str, bool]], status_read: bool
) -> None:
    staff, snapshot, view = known_as(known)
    # Everyone reads as active: the file's status says so, or it has none.
    p = plan(directory(COMPANY, staff, status_read=status_read), snapshot, view, Policy(), NOW)

    granted = {c.key for c in p.changes if c.action in (Action.UNLOCK, Action.CREATE)}
    unproven = {
        f"e{n}"
        for n, (how, unlocked_there) in enumerate(known)
        if (how == "departed" and not unlocked_there) or how == "gone departed"
    }
    kept = [n.message for n in p.notes if n.kind == KEPT_LOCKED]
    told = f"{len(unproven)} people " if len(unproven) > 1 else "1 person "
    if status_read:
        assert unproven <= granted and kept == []  # active again, as the status says
    else:
        assert granted & unproven == set()
        assert [m[: len(told)] for m in kept] == ([told] if unproven else [])
    # Whatever the read, those the source never called departed are given access as before.
    others = {
        f"e{n}" for n, (how, _) in enumerate(known) if how in ("missing", "gone removed", "new")
    }
    assert others <= granted


def test_a_departed_person_read_without_a_status_is_still_departed_once_one_is_read() -> None:
    staff = [person("e1", "ann", "rd"), person("e2", "bo", "rd")]
    snapshot, view = synced(directory(COMPANY, staff))
    bo = snapshot.employees["e2"]._replace(locked=True, lock_reason="departed", locked_since=NOW)
    snapshot = replace(snapshot, employees={**snapshot.employees, "e2": bo})
    gone = [staff[0], staff[1]._replace(state=State.DEPARTED)]
    p = plan(directory(COMPANY, gone), snapshot, view, Policy(), NOW)
    assert [c.action for c in p.changes] == []  # locked, and departed: nothing to do
