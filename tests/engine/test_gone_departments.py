"""A department gone from the source is deleted once nobody stays in it after the run, the
people the run adopts out of it included (syncd.plan.departments).

Generated: whether the account the run adopts for a new record (by username, or by mobile
under ``sync.match_by``) is in the gone department on the platform or elsewhere, whether
the look-up told its departments, and how many people syncd does not manage are there
besides.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from syncd.model import Kind
from syncd.plan import Action, PlatformPerson, Policy, plan
from syncd.spelling import look_alike
from tests.engine.plan_world import COMPANY, NOW, STAFF, directory, person, synced


@given(
    where=st.sampled_from(["in it", "elsewhere", "not told"]),
    others=st.integers(0, 2),
    by_mobile=st.booleans(),
)
def test_a_department_the_run_adopts_its_last_account_out_of_is_deleted(
    where: str, others: int, by_mobile: bool
) -> None:
    """Found by the --long convergence suite (seeds 2844 and 2859, both engines): after a
    state database was put back, a run adopted dan's account by username out of Sales,
    gone from the source, and moved him to R&D; it counted him among the people syncd
    does not manage there, kept Sales with a note saying so, and exited 0, leaving the
    deletion to the next run. His account's departments, as the look-up told them, now
    count him as moving out; anyone else there keeps the department."""
    snapshot, view = synced(directory(COMPANY, STAFF[:2]))
    sales = snapshot.departments["sales"].node_id
    rd = snapshot.departments["rd"].node_id
    nodes = {"in it": (sales,), "elsewhere": (rd,), "not told": ()}[where]
    there = int(where != "elsewhere") + others  # the platform's count of Sales' employees
    mobile = "13900000009"
    account = PlatformPerson(700, "dan", mobile=mobile, nodes=nodes)
    view = replace(
        view,
        nodes={**view.nodes, sales: replace(view.nodes[sales], employees=there)},
        # matched by mobile, the account is found by that key, under another username
        by_key={mobile: (replace(account, username="daniel"),)} if by_mobile else {},
        people={} if by_mobile else {look_alike("dan"): account},
    )
    dan = person("e9", "dan", "rd", mobile=mobile)
    read = directory([d for d in COMPANY if d.id != "sales"], [*STAFF[:2], dan])
    p = plan(read, snapshot, view, Policy(match_by="mobile" if by_mobile else "username"), NOW)

    assert [c.target_id for c in p.changes if c.key == "e9"] == [700], p.changes  # adopted
    deleted = [c.key for c in p.changes if c.kind is Kind.DEPARTMENT and c.action is Action.DELETE]
    # Unknown where dan is, Sales is kept while the count holds anyone: it may be him.
    assert deleted == (["sales"] if (where == "in it" and others == 0) or there == 0 else [])
    kept = [n.message for n in p.notes if n.key == "sales"]
    assert bool(kept) is not bool(deleted), p.notes
