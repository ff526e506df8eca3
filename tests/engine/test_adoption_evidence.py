"""Adoption by username or by another key takes an account only on evidence that names the
person (issue 32, DESIGN "Identity and ownership"): an account whose extension_id names
another record, or whose username syncd's history wrote for another source id, is never
adopted, locked or not; the conflict is reported and nothing is planned for either."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from syncd.model import State
from syncd.plan import PlatformPerson, Policy, Snapshot, plan
from syncd.spelling import look_alike
from tests.engine.test_plan import COMPANY, NOW, STAFF, directory, empty_view

BOB = STAFF[1]  # e2, "bob"
OTHER_IDS = st.text("e0123456789-", min_size=1, max_size=4).filter(lambda k: k != BOB.id)


@given(
    mark=st.one_of(st.none(), st.just(BOB.id), OTHER_IDS),
    history=st.lists(st.one_of(st.just(BOB.id), OTHER_IDS), max_size=2),
    locked=st.booleans(),
    departed=st.booleans(),
    match_by_mobile=st.booleans(),
)
def test_an_account_the_evidence_gives_another_is_never_adopted(
    mark: str | None, history: list[str], locked: bool, departed: bool, match_by_mobile: bool
) -> None:
    account = PlatformPerson(7, "bob", locked, mobile=BOB.mobile, extension_id=mark)
    bob = BOB._replace(state=State.DEPARTED) if departed else BOB
    seen = {look_alike("bob"): frozenset(history)} if history else {}
    view = empty_view(people=[account])
    if match_by_mobile:
        view = replace(view, by_key={"13800000002": (account,)})
    p = plan(
        directory(COMPANY, [STAFF[0], bob]),
        Snapshot(seen=seen),
        view,
        Policy(match_by="mobile") if match_by_mobile else Policy(),
        NOW,
    )
    taken = [c for c in p.changes if c.target_id == 7]
    claimed = (mark is not None and mark != BOB.id) or (
        mark is None and any(k != BOB.id for k in history)
    )
    if claimed:
        assert taken == []  # neither adopted, unlocked nor updated
        assert [c for c in p.changes if c.key == BOB.id] == []  # nor made anew
        (note,) = [n for n in p.notes if n.key == BOB.id]
        assert note.kind == "conflict" and "nobody is changed" in note.message
    elif not departed or locked:
        assert taken, p.notes  # the evidence names bob (or says nothing): adopted as before
