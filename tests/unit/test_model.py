"""Directory validation: every record the platform must not see is set aside with its reason."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.model import (
    Department,
    Employee,
    Kind,
    Position,
    RejectedRow,
    State,
    build_directory,
)
from syncd.spelling import look_alike
from tests.support.examples import examples

T = TypeVar("T")


def located(items: Sequence[T]) -> list[tuple[str, T]]:
    return [(f"f.csv:{n}", item) for n, item in enumerate(items, 2)]


def reasons(rows: tuple[RejectedRow, ...]) -> dict[str | None, str]:
    return {r.key: r.reason for r in rows}


def test_department_tree_problems_reject_the_subtree_with_a_reason() -> None:
    departments = [
        Department("a", "A"),
        Department("b", "B", "a"),
        Department("c", "C", "ghost"),
        Department("d", "D", "c"),
        Department("x", "X", "y"),
        Department("y", "Y", "x"),
        Department("s1", "Same", "a"),
        Department("s2", "Same", "a"),
        Department("s3", "Under", "s1"),
        Department("dup", "One"),
        Department("dup", "Two"),
        Department("slash", "R/D"),
        Department("blank", "  "),
    ]
    d = build_directory(located(departments), [])
    assert set(d.departments) == {"a", "b"}
    why = reasons(d.rejected)
    assert why["c"] == "parent department 'ghost' is unknown or was rejected"
    assert why["d"] == "ancestor department 'c' has an unknown parent 'ghost'"
    assert why["x"] == why["y"] == "department is in, or under, a parent cycle"
    assert "name path is ambiguous" in why["s1"] and "name path is ambiguous" in why["s2"]
    assert why["s3"] == "ancestor department 's1' was rejected (ambiguous name)"
    assert [r.reason for r in d.rejected if r.key == "dup"] == [
        "department id 'dup' appears 2 times"
    ] * 2
    assert "contains '/'" in why["slash"]
    assert why["blank"] == "department 'blank' has no name"
    assert all(r.kind is Kind.DEPARTMENT and r.where.startswith("f.csv:") for r in d.rejected)
    assert d.path("b") == ("A", "B")


def test_employee_problems_reject_every_copy_and_keep_the_rest() -> None:
    people = [
        Employee("1", "ann", "Ann", (Position("a", primary=True),)),
        Employee("2", "Bob", "Bob"),
        Employee("3", "bob", "Bobby"),
        Employee("4", "", "Nameless"),
        Employee("5", "cat", ""),
        Employee("6", "dan", "Dan", (Position("nowhere"),)),
        Employee("7", "eve", "Eve", (Position("a", primary=True), Position("a", primary=True))),
        Employee("8", "fay", "Fay"),
        Employee("8", "gus", "Gus"),
    ]
    d = build_directory(located([Department("a", "A")]), located(people))
    assert set(d.employees) == {"1"}
    why = {(r.key, r.username): r.reason for r in d.rejected}
    assert why[("2", "Bob")] == "username 'Bob' is used by 2 people"
    assert why[("3", "bob")] == "username 'bob' is used by 2 people"
    assert why[("4", None)] == "employee '4' has no username"
    assert why[("5", "cat")] == "employee 'cat' has no name"
    assert "department 'nowhere'" in why[("6", "dan")]
    assert why[("7", "eve")] == "employee 'eve' has more than one primary position"
    assert why[("8", "fay")] == why[("8", "gus")] == "employee id '8' appears 2 times"


def test_leavers_are_known_only_from_a_complete_read_whose_rejects_are_identified() -> None:
    identified = RejectedRow("f.csv:3", "bad", Kind.EMPLOYEE, key="9")
    anonymous = RejectedRow("f.csv:4", "wrong number of fields", Kind.EMPLOYEE)
    assert build_directory([], [], rejected=[identified]).leavers_known
    assert not build_directory([], [], rejected=[identified], complete=False).leavers_known
    assert not build_directory([], [], rejected=[anonymous]).leavers_known
    # A part of the source not read (an AD domain referred elsewhere): who it holds is unknown.
    assert not build_directory([], [], unread=["the domain b"]).leavers_known
    protected = build_directory([], [], rejected=[identified]).rejected_keys(Kind.EMPLOYEE)
    assert protected == frozenset({"9"})


# The people a read may give one username: the one syncd holds it for (id "h"), one syncd
# holds it for in another letter case ("h2": the platform tells "Ann" from "ann"), others
# under ids of their own, and rows set aside already: one without an id, one that may hide
# others.
NAMED = {
    "holder": Employee("h", "ann", "Ann"),
    "holder in another case": Employee("h2", "Ann", "Ann Twin"),
    "namesake": Employee("n1", "ann", "Ann Other"),
    "namesake 2": Employee("n2", "ANN", "Ann Third"),
}
BROKEN = {
    "no id": RejectedRow("f.csv:90", "cut", username="ann"),
    "hiding": RejectedRow("f.csv:91", "cut", key="x9", username="ann", may_hide_rows=True),
}


def the_holder(sharers: list[str], held: dict[str, str | None]) -> Employee | None:
    """The row kept, by the rule: the one row whose id and username syncd holds, among rows
    that all have ids and hide nothing."""
    holders = [
        NAMED[s] for s in sharers if s in NAMED and held.get(NAMED[s].id) == NAMED[s].username
    ]
    broken = set(sharers) & set(BROKEN)
    return holders[0] if len(sharers) > 1 and not broken and len(holders) == 1 else None


@settings(max_examples=examples(300))
@given(
    sharers=st.lists(st.sampled_from([*NAMED, *BROKEN]), max_size=4, unique=True),
    departed=st.booleans(),
    held_h=st.sampled_from(["ann", "Ann", None]),
    held_h2=st.sampled_from(["Ann", None]),
)
def test_the_usernames_holder_keeps_their_row_among_rows_that_give_it(
    sharers: list[str], departed: bool, held_h: str | None, held_h2: str | None
) -> None:
    """A row set aside only because rows under other ids give its username is kept when its
    id and username are the pair syncd holds (found by the forest suite: a departed holder
    kept an unlocked account, exit 0, while a namesake in another domain was read); never
    when another row giving it has no id or may hide rows (it may be the holder's own), nor
    when two such rows are held in look-alike spellings."""
    state = State.DEPARTED if departed else State.ACTIVE
    read = located([NAMED[s]._replace(state=state) for s in sharers if s in NAMED])
    rejected = [BROKEN[s] for s in sharers if s in BROKEN]
    held = {"h": held_h, "h2": held_h2}
    d = build_directory([], read, rejected=rejected, one_read=True)

    kept = d.holders_kept({k: v for k, v in held.items() if v is not None})

    holder = the_holder(sharers, held)
    rescued = {w: e for w, e in read if holder is not None and e.id == holder.id}
    assert set(kept.employees) - set(d.employees) == {e.id for e in rescued.values()}
    assert all(kept.employees[e.id] == e for e in rescued.values())  # as read: state too
    assert {r.where for r in kept.rejected} == {r.where for r in d.rejected} - set(rescued)
    assert d.holders_kept({}) is d  # nothing held: nothing kept


# Rows beside a leaver's (id "h", username "ann", set aside for want of a name, saying they
# departed): under their id, alike or not; under other ids, giving their username in any
# case; set aside already, without an id or hiding others.
LEAVER = Employee("h", "ann", "", state=State.DEPARTED)
BESIDE = {
    "copy alike": [LEAVER],
    "copy active": [LEAVER._replace(name="Ann", state=State.ACTIVE)],
    "copy renamed": [LEAVER._replace(username="bob")],
    "new hire": [Employee("n1", "ann", "Carl")],
    "new hire who left": [Employee("n2", "ANN", "Dora", state=State.DEPARTED)],
    "new hire set aside": [Employee("n3", "Ann", "")],
    "another leaver": [Employee("h2", "Ann", "", state=State.DEPARTED)],
}
DISAGREE = {"copy active", "copy renamed"}


def leavers_gone(beside: list[str], held: dict[str, str | None]) -> dict[str, str]:
    """The rule: the leavers whose departure goes ahead, by id, with their username."""
    others = [b for b in beside if b not in BESIDE or not b.startswith("copy")]
    plain = not set(beside) & set(BROKEN)
    if held["h"] == "ann" and held["h2"] == "Ann":
        return {}  # two leavers syncd holds look-alike usernames for: whose is each row?
    gone = {"h2": "Ann"} if held["h2"] == "Ann" and plain else {}
    if not set(beside) & DISAGREE and (not others or (held["h"] == "ann" and plain)):
        gone["h"] = "ann"
    return gone


@settings(max_examples=examples(300))
@given(
    beside=st.lists(st.sampled_from([*BESIDE, *BROKEN]), max_size=4, unique=True),
    held_h=st.sampled_from(["ann", "Ann", None]),
    held_h2=st.sampled_from(["Ann", None]),
)
def test_a_leavers_departure_is_theirs_whoever_else_a_row_gives_their_login(
    beside: list[str], held_h: str | None, held_h2: str | None
) -> None:
    """A departure held up because rows under other ids give the leaver's username goes
    ahead when that username, exactly, is the one syncd holds under the leaver's id (HR
    giving a leaver's login to a new hire in the same export): the other rows are another
    person's (``Directory.leavers_held``). Never when rows under the leaver's id
    disagree, nor when a row giving the username has no id or may hide rows (it may be
    the leaver's own), nor for two leavers syncd holds in look-alike spellings of it (h2:
    "Ann")."""
    read = located([LEAVER, *(e for b in beside for e in BESIDE.get(b, ()))])
    rejected = [BROKEN[b] for b in beside if b in BROKEN]
    d = build_directory([], read, rejected=rejected, one_read=True)
    held = {"h": held_h, "h2": held_h2 if "another leaver" in beside else None}

    kept = d.leavers_held({k: v for k in d.departures_held() if (v := held.get(k)) is not None})

    gone = leavers_gone(beside, held)
    assert kept.departed_aside() == gone
    assert ("h" in kept.departures_held()) is ("h" not in gone)
    assert ("n2" in kept.departures_held()) is ("new hire who left" in beside)
    assert set(kept.employees) == set()  # the new hires wait, set aside


SPELLINGS = ["Sales", "sales", "SALES", "\uff33\uff41\uff4c\uff45\uff53", "Ops"]


@settings(max_examples=examples(300))
@given(
    names=st.lists(st.sampled_from(SPELLINGS), min_size=1, max_size=4),
    synced=st.lists(st.sampled_from([*SPELLINGS, None]), min_size=4, max_size=4),
)
def test_a_look_alike_department_beside_a_synced_one_sets_aside_only_itself(
    names: list[str], synced: list[str | None]
) -> None:
    """Sibling departments whose names look alike are set aside with everyone in them,
    but the one syncd holds under that very name, when only one is: a department made
    beside it never holds up its people (their departures)."""
    siblings = [Department(f"s{i}", name, "top") for i, name in enumerate(names)]
    departments = [
        Department("top", "Top"),
        *siblings,
        *(Department(f"c{i}", "Team", f"s{i}") for i in range(len(names))),
    ]
    people = [
        Employee(f"e{i}", f"u{i}", "P", (Position(f"c{i}", primary=True),))
        for i in range(len(names))
    ]
    held = {f"s{i}": name for i, name in enumerate(synced) if name is not None}

    d = build_directory(located(departments), located(people), synced_names=held)

    def kept(s: Department) -> bool:
        group = [x for x in siblings if look_alike(x.name) == look_alike(s.name)]
        holders = [x for x in group if held.get(x.id) == x.name]
        return len(group) == 1 or holders == [s]

    expected = {s.id for s in siblings if kept(s)}
    assert {k for k in d.departments if k.startswith("s")} == expected
    assert {k for k in d.departments if k.startswith("c")} == {f"c{k[1:]}" for k in expected}
    assert set(d.employees) == {f"e{k[1:]}" for k in expected}  # nobody held up
