"""What a read's rows set aside say about its run (syncd.sources.set_aside), generated."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from syncd.model import Directory, Kind, RejectedRow
from syncd.sources import set_aside

statuses = st.one_of(st.none(), st.sampled_from(["", "已离职", "Departed ", "x" * 100]))
rows = st.builds(
    RejectedRow,
    where=st.sampled_from(["employees.csv:2", "cn=a,dc=example"]),
    reason=st.just("why"),
    kind=st.sampled_from(list(Kind)),
    key=st.sampled_from([None, "E1", "E2"]),
    status=statuses,
    may_hide_rows=st.booleans(),
    username=st.sampled_from([None, "ann"]),
)


@given(
    rejected=st.lists(rows, max_size=12),
    employees=st.integers(0, 12),
    departments=st.integers(0, 3),
    read=st.sampled_from(["full", "incremental"]),
    people_held=st.booleans(),
)
def test_a_run_is_told_of_every_status_nobody_named_a_source_mostly_set_aside_and_leavers_unknown(
    rejected: list[RejectedRow], employees: int, departments: int, read: str, people_held: bool
) -> None:
    directory = Directory({}, {}, tuple(rejected), complete=read == "full")
    source = {"read": read, "employees": employees, "departments": departments}
    source |= set_aside.counts(directory, people_held=people_held)
    told = set_aside.problems(source)
    unnamed = [r for r in rejected if r.status is not None and r.kind is not Kind.PHOTO]
    aside = sum(r.kind is not Kind.PHOTO for r in rejected)
    most = read == "full" and aside > employees + departments
    # A complete read with a row that may hide others, or names nobody, says nobody left:
    # loud while syncd holds people a leaver could be among (found by exploration).
    unsure = [
        r
        for r in rejected
        if r.kind is Kind.EMPLOYEE and (r.may_hide_rows or not (r.key or r.username))
    ]
    blind = read == "full" and people_held and bool(unsure)
    assert len(told) == bool(unnamed) + most + blind
    if unnamed:
        assert told[0].startswith(f"{len(unnamed):,} row")
        assert all(repr(r.status)[:40] in told[0] for r in unnamed if r.status is not None)
    if blind:
        n = len(unsure)
        assert told[bool(unnamed)].startswith(
            f"leavers not looked for: {n} rejected row{'' if n == 1 else 's'} may hide other rows"
        )
    if most:
        assert told[-1].startswith(f"most of the source was set aside: {aside:,} of ")
    assert [n.message for n in set_aside.notes(source)] == told
