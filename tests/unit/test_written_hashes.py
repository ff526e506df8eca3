"""The hash of a record made again from the fields syncd journaled for it is the planner's
hash of the record itself: what recovery records for an item found on the platform as it
was sent, so that the next plan from the same source plans nothing (issue 32)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from syncd.model import Department, Employee, Position
from syncd.plan.fields import (
    department_fields,
    department_hash,
    employee_fields,
    employee_hash,
    written_department_hash,
    written_hash,
)

EXTENDED = {"costCenter": "cost_center", "office": "office_code"}
text = st.text(min_size=1, max_size=8)
maybe = st.none() | text
pairs = st.dictionaries(text, text, max_size=3).map(lambda d: tuple(sorted(d.items())))

positions = st.lists(
    st.builds(Position, maybe, maybe, st.booleans(), st.booleans()), max_size=3
).map(tuple)
employees = st.builds(
    Employee,
    id=text,
    username=text,
    name=text,
    positions=positions,
    en_name=maybe,
    email=maybe,
    mobile=maybe,
    tel=maybe,
    sn=maybe,
    gender=st.sampled_from([None, "MALE", "FEMALE"]),
    birthday=st.none() | st.dates().map(lambda d: d.isoformat()),
    job_title=maybe,
    sort_order=st.none() | st.integers(-5, 10_000),
    senior=st.booleans(),
    extra=st.dictionaries(st.sampled_from(sorted(EXTENDED)), text).map(
        lambda d: tuple(sorted(d.items()))
    ),
    properties=pairs,
    tags=st.lists(st.tuples(text, text), unique=True, max_size=3).map(lambda t: tuple(sorted(t))),
)


@given(employees)
def test_a_person_made_again_from_journaled_fields_hashes_as_planned(e: Employee) -> None:
    journaled = json.loads(json.dumps(employee_fields(e, EXTENDED)))  # as the journal holds it
    assert written_hash(e.id, journaled, EXTENDED) == employee_hash(e, EXTENDED)


@given(
    st.builds(
        Department,
        id=text,
        name=text,
        parent_id=maybe,
        sort_order=st.none() | st.integers(-5, 10_000),
        sn=maybe,
        en_name=maybe,
    )
)
def test_a_department_made_again_from_journaled_fields_hashes_as_planned(d: Department) -> None:
    journaled = json.loads(json.dumps(department_fields(d)))
    assert written_department_hash(journaled) == department_hash(d)
