"""A departure is never held up by a row set aside for what does not say who the person is
(syncd.plan.departed_aside).

A row set aside only because it gives no name, or because its department is unknown or set
aside (its id given twice, a '/' in its name, an unknown parent, a cycle, any of these above
it), or because it gives two primary positions, still names its person: when it says the person
departed and every other row that gives its id or username gives both alike and says so too
(an export with a line per position), the person syncd holds under that id and username is
locked where they are, and nothing else is written for them. Rows set aside for who they
name (an id or a username another person's row gives) keep their people as they are; when
one says its person left, the plan says they keep their access (a partial run); but the
row under the id and username syncd holds is that account's holder's, kept as the runner
keeps it (``Directory.holders_kept``). (The CSV reader's own reasons, a date that is not
one: tests/sources.)

Generated: which departments break and how, where each person is placed, their name and
status, which rows are copied under the same id or username, who was locked before, and
what changed on the platform since.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.model import Department, Directory, Employee, Kind, Position, RejectedRow, State
from syncd.plan import (
    ACCESS_KEPT,
    REMOVING,
    Action,
    Plan,
    PlatformView,
    Policy,
    Snapshot,
    plan,
)
from syncd.plan.guards import departures
from syncd.plan.values import departures_held, renamed_kept, renumbered_kept
from tests.engine.company import World, employee
from tests.engine.plan_world import NOW, changed_there, dept, directory, synced
from tests.support.examples import examples

# The tree: rd > be, sales > ops. Each department is broken in the next read, or not.
TREE = [
    dept("rd", "R&D"),
    dept("be", "Backend", "rd"),
    dept("sales", "Sales"),
    dept("ops", "Ops", "sales"),
]
PARENT = {d.id: d.parent_id for d in TREE}
BREAKS = ["none", "twice", "slash", "unknown parent", "own parent"]


def broken_tree(breaks: dict[str, str]) -> list[Department]:
    out: list[Department] = []
    for d in TREE:
        how = breaks[d.id]
        if how == "slash":
            d = replace(d, name=f"{d.name}/EMEA")
        elif how == "unknown parent":
            d = replace(d, parent_id="nowhere")
        elif how == "own parent":
            d = replace(d, parent_id=d.id)
        out.append(d)
        if how == "twice":
            out.append(replace(d, name=f"{d.name} copy"))
    return out


def set_aside(department: str | None, breaks: dict[str, str]) -> bool:
    """Whether a position in this department is unplaceable: it or a department above it
    broke (None: a department nobody knows)."""
    while department is not None:
        if department not in PARENT or breaks[department] != "none":
            return True
        department = PARENT[department]
    return False


@dataclass(frozen=True)
class Fate:
    """One person's next row: status, placement, copies, and whether they were locked."""

    departed: bool
    place: str  # a department of TREE, "unknown", or "two primaries"
    # "none"; "alike" (their row again, placed elsewhere: an export with a line per
    # position); "unlike" (the same, with the other status); "id" (another person's row
    # under their id, with the same status); "username" (under another id)
    copy: str
    was_locked: bool
    renamed: bool  # the row gives another username than the account under the id
    unlocked_there: bool  # someone unlocked their account on the platform (if locked)
    marked_else: bool  # the account under their username carries another source id
    nameless: bool  # the row gives no name
    # The row under another id that gives their username (copy "username") gives their
    # name too: it may be them under a new id (HR numbering them anew).
    own_name: bool = False

    def positions(self, home: str) -> tuple[Position, ...]:
        if self.place == "two primaries":
            return (Position(home, primary=True), Position("rd", primary=True))
        return (Position("nowhere" if self.place == "unknown" else self.place, primary=True),)

    def faulty(self, home: str, breaks: dict[str, str]) -> bool:
        """Whether the row gives no name, or places them where nobody can follow."""
        if self.nameless or self.place in ("unknown", "two primaries"):
            return True
        return any(set_aside(p.department_id, breaks) for p in self.positions(home))

    @property
    def holds_pair(self) -> bool:
        """Whether another id's row gives the username syncd holds under their id: theirs,
        whoever else the row gives it to (Directory.as_held, as the runner does)."""
        return self.copy == "username" and not self.renamed

    def holder(self, home: str, breaks: dict[str, str]) -> bool:
        """Whether the row is kept among those that give its username: the username syncd
        holds under its id is its only fault."""
        return self.holds_pair and not self.faulty(home, breaks)

    def row_set_aside(self, home: str, breaks: dict[str, str]) -> bool:
        """Whether the row is set aside: copied (not as the username's holder), or placed
        where nobody can follow."""
        copied = self.copy != "none" and not self.holder(home, breaks)
        return copied or self.faulty(home, breaks)

    def leaving(self, home: str, breaks: dict[str, str]) -> bool:
        """The row alone says they departed, and their account is unlocked somewhere."""
        unlocked = not self.was_locked or self.unlocked_there
        alone = self.copy in ("none", "alike") or self.holds_pair
        return self.departed and alone and unlocked

    @property
    def renumbered(self) -> bool:
        """Whether a row under another id that gives the username syncd holds for them may
        be theirs under a new id: nothing is locked for their departure, and it is said."""
        return self.holds_pair and self.own_name

    def kept_renumbered(self, home: str, breaks: dict[str, str]) -> bool:
        """Whether they left, keep an unlocked account of theirs, and are not locked for a
        row that may be theirs under a new id (said)."""
        return self.leaving(home, breaks) and self.renumbered and not self.marked_else

    @property
    def seen_there(self) -> bool:
        """Whether the platform's account under their username changed since the last run."""
        return self.marked_else or (self.was_locked and self.unlocked_there)


fates = st.builds(
    Fate,
    departed=st.booleans(),
    place=st.sampled_from([*PARENT, "unknown", "two primaries"]),
    copy=st.sampled_from(["none", "none", "alike", "unlike", "id", "username"]),
    was_locked=st.booleans(),
    renamed=st.booleans(),
    unlocked_there=st.booleans(),
    marked_else=st.booleans(),
    nameless=st.booleans(),
    own_name=st.booleans(),
)


def rows_of(e: Employee, f: Fate, home: str) -> list[Employee]:
    """The person's next row, and the row that copies its id or username, if any."""
    state = State.DEPARTED if f.departed else State.ACTIVE
    username = f"{e.username}.new" if f.renamed else e.username
    n = e.id[1:]
    name = "" if f.nameless else e.name
    rows = [e._replace(username=username, name=name, state=state, positions=f.positions(home))]
    elsewhere = (Position("rd", primary=True),)
    if f.copy in ("alike", "unlike"):
        flipped = State.ACTIVE if f.departed else State.DEPARTED
        rows.append(
            rows[0]._replace(positions=elsewhere, state=state if f.copy == "alike" else flipped)
        )
    elif f.copy == "id":
        rows.append(Employee(e.id, f"other{n}", f"Other {n}", elsewhere, state=state))
    elif f.copy == "username":
        name = e.name if f.own_name else f"Namesake {n}"
        rows.append(Employee(f"n{n}", username, name, elsewhere, state=state))
    return rows


def held_up(
    p: Plan, read: Directory, e: Employee, f: Fate, home: str, breaks: dict[str, str]
) -> bool:
    """Check what the plan does to one person; whether their departure waits, told."""
    changes = [c for c in p.changes if c.kind is Kind.EMPLOYEE and c.key == e.id]
    set_aside_row = f.row_set_aside(home, breaks)
    if f.renamed and not set_aside_row:
        return False  # a rename read whole: syncd.plan.usernames
    if set_aside_row:  # at most a lock: never moved, updated or unlocked
        assert all(c.action is Action.LOCK for c in changes), changes
        assert e.id not in read.employees
    removing = [c.action for c in changes if c.action in REMOVING]
    # Nothing is sent through an account carrying another's source id; nor for a renamed
    # row, as which account its person holds is unsaid: nobody locked, and told.
    leaving = f.leaving(home, breaks)
    locks = leaving and not (f.marked_else or f.renamed or f.renumbered)
    assert removing == ([Action.LOCK] if locks else []), changes
    return leaving and f.renamed


def disagreeing(f: Fate) -> bool:
    """Whether a row says the person left and another row under their id or username does
    not say it alike (``departures_alike``), or another id gives their username and it
    is not the one syncd holds for them (whose account is it?): the departure is held up.
    (Another id's row giving the username syncd holds for them is another person's, be
    their own row set aside for where it places them or not: ``Directory.leavers_held``.)"""
    if f.copy == "unlike":
        return True  # one of the two says they left, whichever is theirs
    if not f.departed or f.copy not in ("id", "username"):
        return False
    return f.copy == "id" or f.renamed


def left(cast: list[tuple[Employee, Fate, str]]) -> set[str]:
    """Who the read says left: a row alone, or under the username syncd holds for them."""
    alone = {e.id for e, f, _ in cast if f.copy in ("none", "alike") or f.holds_pair}
    return {e.id for e, f, _ in cast if f.departed and e.id in alone}


def said(p: Plan, words: str) -> list[str]:
    """The plan's notes that someone who left keeps their access, with these words."""
    return [n.message for n in p.notes if n.kind == ACCESS_KEPT and words in n.message]


def platform_after(
    view: PlatformView, snapshot: Snapshot, cast: list[tuple[Employee, Fate, str]]
) -> PlatformView:
    """The view with the accounts changed there: unlocked, or marked with another id."""
    for e, f, _ in cast:
        if f.seen_there:
            locked = f.was_locked and not f.unlocked_there
            there = changed_there(view, snapshot, e.username, locked=locked)
            found = replace(
                there.changed[e.username], extension_id="someone else" if f.marked_else else e.id
            )
            view = replace(there, changed={**there.changed, e.username: found})
    return view


@settings(max_examples=examples(300))
@given(
    breaks=st.fixed_dictionaries({d: st.sampled_from(BREAKS) for d in PARENT}),
    people=st.lists(fates, min_size=1, max_size=6),
    hidden=st.booleans(),
)
def test_a_departure_is_never_held_up_by_where_its_row_places_the_person(
    breaks: dict[str, str], people: list[Fate], hidden: bool
) -> None:
    homes = [list(PARENT)[n % len(PARENT)] for n in range(len(people))]
    staff = [
        Employee(f"e{n}", f"u{n}", f"Person {n}", (Position(home, primary=True),))
        for n, home in enumerate(homes)
    ]
    cast = list(zip(staff, people, homes, strict=True))
    locked = {e.id: NOW - 1 for e, f, _ in cast if f.was_locked}
    snapshot, view = synced(directory(TREE, staff), locked=locked)
    view = platform_after(view, snapshot, cast)
    # A damaged row somewhere: nobody is a leaver this run, departures still are.
    damaged = [RejectedRow("employees.csv:99", "cut", may_hide_rows=True)] if hidden else []
    rows = [row for e, f, home in cast for row in rows_of(e, f, home)]
    read = directory(broken_tree(breaks), rows, rejected=damaged, one_read=True)
    # As the runner does: what syncd holds weighed in.
    held = snapshot.employees
    read = read.as_held(lambda k: (s := held.get(k)) and s.username, joined=False)

    p = plan(read, snapshot, view, Policy(), NOW)

    waiting = sum(held_up(p, read, e, f, home, breaks) for e, f, home in cast)
    assert said(p, "another username than the account") == (
        [renamed_kept(waiting)] if waiting else []
    )
    # Rows under one id that disagree (one says they left, the other not, or names someone
    # else): nobody is locked for them, and an unlocked account kept so is said.
    disagree = sum(disagreeing(f) for _, f, _ in cast if not f.was_locked)
    assert said(p, "disagree") == ([departures_held(disagree)] if disagree else [])
    # A row under another id giving their username and name: theirs under a new id?
    renumbered = sum(f.kept_renumbered(home, breaks) for _, f, home in cast)
    assert said(p, "under a new id") == ([renumbered_kept(renumbered)] if renumbered else [])
    # Remembered as departed (the access-granted guard's memory), set aside or not.
    assert set(departures(p, read, snapshot).departed) == left(cast)


def test_a_leaver_whose_row_gives_another_persons_username_is_said(world: World) -> None:
    """HR marks Bob departed and, in the same row, gives him Cat's username: both rows are
    set aside (a username used by 2 people), Cat's kept as its holder's. Whose account
    Bob's row names is unsaid: nothing is locked, and the run says a leaver keeps access
    (found 2026-12-06: exit 0, Bob active, nothing said)."""
    # Enough people that one set aside stays under the guard against a source gone empty.
    world.company.employees += [employee(f"E{n}", f"p{n}", "D1") for n in range(6, 20)]
    assert world.sync().outcome == "ok"
    bob = world.company.person("bob")
    bob.update(status="departed", username="cat")

    result = world.sync()
    assert result.outcome == "partial" and result.exit_code == 1
    assert result.error is not None and departures_held(1) in result.error
    people = world.platform().people
    assert not people["bob"][4] and not people["cat"][4]  # neither locked
    # Cat's row is the holder's: kept and read; Bob's stays set aside.
    assert result.directory is not None and "E3" in result.directory.employees


def test_a_leaver_whose_login_the_export_gives_a_new_hire_is_locked(world: World) -> None:
    """HR marks Bob departed in a row set aside for where it places him (a department
    nobody knows) and, in the same export, gives his login to Carl, a new hire: the
    username is the one syncd holds under Bob's id, so the departure is his and he is
    locked; Carl's row waits, set aside (found 2026-12-06: Bob kept active, a partial run
    saying a leaver keeps access)."""
    world.company.employees += [employee(f"E{n}", f"p{n}", "D1") for n in range(6, 20)]
    assert world.sync().outcome == "ok"
    world.company.person("bob").update(status="departed", department="D77")
    world.company.employees.append(employee("E30", "bob", "D2", name="Carl"))

    result = world.sync()
    people = world.platform().people
    assert people["bob"][4]  # locked
    assert result.directory is not None and "E30" not in result.directory.employees
    assert result.error is None or departures_held(1) not in result.error
    assert world.query("SELECT locked FROM employees WHERE source_id = 'E2'") == [(1,)]


@pytest.mark.parametrize("old_row", ["read whole", "set aside"])
def test_a_person_numbered_anew_with_the_old_record_departed_keeps_their_access(
    world: World, old_row: str
) -> None:
    """HR gives Bob a new number (a contractor made an employee) and leaves his old record
    in the export, departed, under the same username: the new row may be Bob's, so his
    account is not locked, the new row waits set aside, and the run says so (found
    2026-12-06: Bob locked, exit 0). His old row read whole or set aside for where it
    places him alike."""
    world.company.employees += [employee(f"E{n}", f"p{n}", "D1") for n in range(6, 20)]
    assert world.sync().outcome == "ok"
    bob = world.company.person("bob")
    world.company.employees.append(dict(bob, id="E30"))  # his name, mobile and e-mail
    bob.update(status="departed", department="D77" if old_row == "set aside" else "D2")

    result = world.sync()
    assert not world.platform().people["bob"][4]  # not locked
    assert result.outcome == "partial" and result.error is not None
    assert renumbered_kept(1) in result.error
    assert result.directory is not None and "E30" not in result.directory.employees
