"""A known problem's value set again once its holder gave it up (syncd.plan._retried):
to the person whose it is, as their record shows them, and to nobody else.

Generated: whether the record under the key still shows the person syncd wrote or another
person now (an HR number handed on: the update is held, syncd.plan.holds), whether the
source calls them departed, whether syncd holds their account locked, and whether the
read returned them (a complete read, or an incremental one that did not).
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.model import Employee, State
from syncd.plan import Action, KnownProblem, Policy, plan
from tests.engine.plan_world import CAROL, COMPANY, KNOWN, NOW, STAFF, directory, synced
from tests.support.examples import examples

REFUSED = KnownProblem("e3", "email", CAROL.email or "", "guest", None)
ZED = CAROL._replace(name="Zed Newcomer", mobile="13999999999")  # another person, her key


@settings(max_examples=examples(100), deadline=None)
@given(
    record=st.sampled_from(["hers", "another person's", "none, complete read", "none, delta"]),
    departed=st.booleans(),
    locked=st.booleans(),
)
def test_a_value_let_go_is_set_again_for_its_person_only(
    record: str, departed: bool, locked: bool
) -> None:
    """Found by the --long convergence suite, seed 2735: a departed person's locked account
    never got back the e-mail address a leaver's account had held (removed the run before):
    locked accounts were never retried, though their fields follow the row. Its class, the
    other way: a retry wrote the record under the key onto the account even where that
    record shows another person, the account held for a leaver."""
    snapshot, view = synced(directory(COMPANY, KNOWN), locked={"e3": NOW} if locked else None)
    snapshot = replace(snapshot, problems={"e3": (REFUSED,)})
    view = replace(view, released=frozenset({("e3", "email")}))
    state = State.DEPARTED if departed else State.ACTIVE
    shown = {"hers": CAROL, "another person's": ZED}.get(record)
    people = [*STAFF[:2], *([shown._replace(state=state)] if shown is not None else [])]
    read = directory(COMPANY, people, complete=record != "none, delta")
    p = plan(read, snapshot, view, Policy(), NOW)

    updates = [c for c in p.changes if c.key == "e3" and c.action is Action.UPDATE]
    wanted = record == "hers" or (record == "none, delta" and not locked)
    assert len(updates) == int(wanted), p.changes
    for c in updates:
        assert isinstance(c.record, Employee) and c.record.name == CAROL.name, c
        assert c.record.email == REFUSED.value and "set again" in c.reason, c
