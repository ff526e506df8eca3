"""A read that cannot tell who is departed gives nobody the source called departed access
without a review (found by exploration, 2026-11-29): a file whose status column is renamed
or left out reads everyone as active, and an OpenLDAP departed_filter whose attribute the
bind account cannot read matches nobody; neither is evidence that anyone returned. Access
given to them stops the run at the access guard whatever their number, until the read
tells them apart again or a reviewed run allows it; a read that calls someone departed is
judged by the guard's limits as it always was."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.model import Employee, State
from syncd.plan import Action, PlatformView, Policy, Snapshot, plan
from tests.engine.plan_world import (
    COMPANY,
    NOW,
    changed_there,
    directory,
    guards,
    person,
    synced,
)
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
    someone_departed=st.booleans(),
    complete=st.booleans(),
)
def test_only_a_read_that_tells_the_departed_apart_gives_them_access_unreviewed(
    known: list[tuple[str, bool]], status_read: bool, someone_departed: bool, complete: bool
) -> None:
    staff, snapshot, view = known_as(known)
    # Everyone known reads as active; the read may call one other person departed.
    if someone_departed:
        staff.append(person("x1", "ex", "rd", state=State.DEPARTED))
    d = directory(COMPANY, staff, status_read=status_read, complete=complete)
    p = plan(d, snapshot, view, Policy(), NOW)

    granted = {c.key for c in p.changes if c.action in (Action.UNLOCK, Action.CREATE)}
    # Unlocked on the platform or not, an unlock of someone held locked as departed counts.
    called = {f"e{n}" for n, (how, _) in enumerate(known) if how in ("departed", "gone departed")}
    assert called <= granted  # planned as the read says: the guard judges them
    limits = {"max_reactivations": 100, "max_reactivation_ratio": 1.0}  # never by the count
    decision = guards(p, d, snapshot, **limits).get("max_reactivations")
    blind = not status_read or (complete and not someone_departed)
    if called and blind:
        assert decision is not None and not decision.passed
        why = "has no status" if not status_read else "calls nobody departed"
        assert f"the source called them departed before ({len(called)} here) but" in (
            decision.message
        )
        assert why in decision.message
        n = decision.message.rsplit("--allow-reactivations ", 1)[1].split()[0]
        allowed = guards(p, d, snapshot, **limits, allow_reactivations=int(n))
        assert allowed["max_reactivations"].passed  # a reviewed run lets them in
    else:
        assert decision is None or decision.passed
