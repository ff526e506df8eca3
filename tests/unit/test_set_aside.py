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
    unread=st.lists(st.sampled_from(["the domain emea.acme.example", "the domain b"]), max_size=2),
)
def test_a_run_is_told_of_every_status_nobody_named_a_source_mostly_set_aside_and_leavers_unknown(
    rejected: list[RejectedRow],
    employees: int,
    departments: int,
    read: str,
    people_held: bool,
    unread: list[str],
) -> None:
    directory = Directory({}, {}, tuple(rejected), complete=read == "full", unread=tuple(unread))
    source = {"read": read, "employees": employees, "departments": departments}
    source |= set_aside.counts(directory, people_held=people_held)
    told = set_aside.problems(source)
    expected = beginnings(rejected, employees + departments, read == "full", people_held, unread)
    assert [t[: len(b)] for t, b in zip(told, expected, strict=True)] == expected
    unnamed = [r.status for r in rejected if r.status is not None and r.kind is not Kind.PHOTO]
    assert all(repr(status)[:40] in told[0] for status in unnamed)
    assert [n.message for n in set_aside.notes(source)] == told


def beginnings(
    rejected: list[RejectedRow], kept: int, full: bool, people_held: bool, unread: list[str]
) -> list[str]:
    """How each problem the run must be told of begins, in order."""
    unnamed = [r for r in rejected if r.status is not None and r.kind is not Kind.PHOTO]
    aside = sum(r.kind is not Kind.PHOTO for r in rejected)
    # A complete read with a row that may hide others, or names nobody, says nobody left:
    # loud while syncd holds people a leaver could be among (found by exploration).
    unsure = [
        r
        for r in rejected
        if r.kind is Kind.EMPLOYEE and (r.may_hide_rows or not (r.key or r.username))
    ]
    n = len(unsure)
    found = [f"{len(unnamed):,} row"] if unnamed else []
    # So does a part of the source not read (an AD domain): who it holds is unknown.
    if full and people_held and unsure:
        found.append(f"leavers not looked for: {n} rejected row{'' if n == 1 else 's'} may hide")
    elif people_held and unread:  # an incremental read too: who left or departed there
        found.append(f"leavers not looked for: {len(unread)} part")
    if full and aside > kept:
        found.append(f"most of the source was set aside: {aside:,} of ")
    return found
