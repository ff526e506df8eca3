"""The convergence suite's histories: a company, and the random changes a round makes in
the source and, behind syncd's back, on the platform (test_convergence_suite.py runs them
and checks what syncd makes of them)."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.engine.company import Company, department, employee
from tests.reliability.support import Rig
from tests.support.admin import AnotherAdmin

UNIQUE_FIELDS = ("mobile", "email")  # one account at a time may hold each value
FIGURES: Counter[str] = Counter()  # printed by conftest's terminal summary


# ---------------------------------------------------------------- a history


@dataclass
class History:
    """One scenario: the company as the source says, and what was done to the platform."""

    rng: random.Random
    company: Company
    policy: str
    serial: int = 100  # for new ids, names, usernames and mobiles, never reused
    # Usernames whose rows are broken now, with the name each row had before: mended, a row
    # gets it back (a name of its own would show another person: seed 2576).
    rejected: dict[str, str] = field(default_factory=dict)
    leavers: set[str] = field(default_factory=set)  # synced people gone from the source
    foreign_people: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)  # source ids whose account the admin deleted
    deleted_now: set[str] = field(default_factory=set)  # those of them deleted this round
    locked_now: set[str] = field(default_factory=set)  # usernames the admin locked this round
    drift: Counter[str] = field(default_factory=Counter)  # platform changes made, by kind
    # Each person active in the source at the end of the last round: (username, platform id).
    accounts: dict[str, tuple[str, int]] = field(default_factory=dict)
    last_run: int = 0  # the id of the last run of the round before
    newest_run: int = 0  # the newest run id any run of the history was given
    touched: set[str] = field(default_factory=set)  # whose unique values moved this round
    pending_foreign: list[tuple[str, str]] = field(default_factory=list)  # (field, value) to take
    backups: list[Path] = field(default_factory=list)  # the state database at each round's end
    restored: bool = False  # this round began with an older copy of the state database
    rebuilt: bool = False  # and `syncd state rebuild` was run on it
    problems: set[tuple[str, str, str]] = field(default_factory=set)  # known at last round's end
    refused: dict[tuple[str, str], str] = field(default_factory=dict)  # known problems seen so far
    events: list[str] = field(default_factory=list)  # what happened, for a failure's message

    def next(self) -> int:
        self.serial += 1
        return self.serial

    def units(self) -> list[dict[str, str]]:
        return self.company.departments

    def people(self) -> list[dict[str, str]]:
        return self.company.employees

    def descendants(self, unit: str) -> set[str]:
        found, frontier = set(), {unit}
        while frontier:
            frontier = {d["id"] for d in self.units() if d["parent_id"] in frontier}
            found |= frontier
        return found


def first_company(rng: random.Random) -> Company:
    units = [department("D1", "Head Office")]
    for n in range(2, 9):
        parent = rng.choice(["", *[u["id"] for u in units]])
        units.append(department(f"D{n}", f"Unit {n}", parent))
    staff = []
    for n in range(1, 19):
        extra = {"positions": rng.choice(units)["id"]} if rng.random() < 0.2 else {}
        staff.append(employee(f"E{n}", f"user{n}", rng.choice(units)["id"], **extra))
    for row in staff:  # a secondary position never repeats the primary one
        if row.get("positions") == row["department"]:
            row["positions"] = ""
    return Company(units, staff)


# ---------------------------------------------------------------- source changes


def change_source(h: History) -> None:
    for row in h.people():  # last round's broken rows are mended
        if row["username"] in h.rejected:
            row["name"] = h.rejected[row["username"]]
    h.rejected.clear()
    h.touched.clear()
    for _ in range(h.rng.randint(2, 6)):
        change = h.rng.choice(SOURCE_CHANGES)
        h.events.append(f"source: {change.__name__}")
        change(h)


def hire(h: History) -> None:
    n = h.next()
    h.people().append(employee(f"E{n}", f"new{n}", h.rng.choice(h.units())["id"]))


def leave(h: History) -> None:
    candidates = [p for p in h.people() if p["username"] not in h.rejected]
    if len(candidates) > 3:
        gone = h.rng.choice(candidates)
        h.people().remove(gone)
        h.leavers.add(gone["username"])


def move(h: History) -> None:
    row = h.rng.choice(h.people())
    row["department"] = h.rng.choice(h.units())["id"]
    if row.get("positions") == row["department"]:
        row["positions"] = ""


def rename_unit(h: History) -> None:
    h.rng.choice(h.units())["name"] = f"Unit {h.next()}"


def reorganise(h: History) -> None:
    """Move a department under another (never under itself or below it)."""
    unit = h.rng.choice(h.units())
    below = h.descendants(unit["id"]) | {unit["id"]}
    unit["parent_id"] = h.rng.choice(["", *[u["id"] for u in h.units() if u["id"] not in below]])


def drop_unit(h: History) -> None:
    """A department leaves the source: its children move up, its people move or leave."""
    if len(h.units()) < 3:
        return
    unit = h.rng.choice(h.units())
    h.units().remove(unit)
    for child in h.units():
        if child["parent_id"] == unit["id"]:
            child["parent_id"] = unit["parent_id"]
    for row in list(h.people()):
        if row.get("positions") == unit["id"]:
            row["positions"] = ""
        if row["department"] == unit["id"]:
            if h.rng.random() < 0.4 and row["username"] not in h.rejected:
                h.people().remove(row)  # a leaver, locked and left in the department
                h.leavers.add(row["username"])
            else:
                row["department"] = h.rng.choice(h.units())["id"]


def break_row(h: History) -> None:
    """A row the source rejects (no name): that person is kept as they are (never one whose
    unique values moved this round: a value they give up would stay theirs)."""
    row = h.rng.choice(h.people())
    if row["id"] in h.touched:
        return
    h.rejected.setdefault(row["username"], row["name"])  # broken twice: the first name kept
    row["name"] = ""


def rename_user(h: History) -> None:
    row = h.rng.choice(h.people())
    if row["username"] not in h.rejected:
        h.leavers.add(row["username"])  # the old account is removed, the new one made
        row["username"] = f"renamed{h.next()}"
        row["email"] = f"{row['username']}@acme.example"


def depart_or_return(h: History) -> None:
    row = h.rng.choice(h.people())
    row["status"] = "active" if row["status"] == "departed" else "departed"


def new_mobile(h: History) -> None:
    h.rng.choice(h.people())["mobile"] = f"137{h.next():08d}"


def fresh_value(h: History, name: str) -> str:
    n = h.next()
    return f"139{n:08d}" if name == "mobile" else f"mail{n}@acme.example"


def movable(h: History) -> list[dict[str, str]]:
    """The people whose unique values may move: rows the source reads (not rejected)."""
    return [p for p in h.people() if p["username"] not in h.rejected]


def swap_values(h: History) -> None:
    """Two people swap mobiles, or e-mail addresses."""
    rows = movable(h)
    if len(rows) < 2:
        return
    name = h.rng.choice(UNIQUE_FIELDS)
    a, b = h.rng.sample(rows, 2)
    a[name], b[name] = b[name], a[name]
    h.touched |= {a["id"], b["id"]}
    FIGURES["moved: swaps"] += 1


def rotate_values(h: History) -> None:
    """Mobiles, or e-mail addresses, rotate among three to five people."""
    rows = movable(h)
    if len(rows) < 5:
        return
    name = h.rng.choice(UNIQUE_FIELDS)
    ring = h.rng.sample(rows, h.rng.randint(3, 5))
    values = [row[name] for row in ring]
    for row, value in zip(ring, values[1:] + values[:1], strict=True):
        row[name] = value
    h.touched |= {row["id"] for row in ring}
    FIGURES["moved: rotations"] += 1


def pass_value(h: History) -> None:
    """A value passes from one person to another (an existing one, or a hire): the first gets
    a new one or none."""
    rows = movable(h)
    if len(rows) < 2:
        return
    name = h.rng.choice(UNIQUE_FIELDS)
    giver = h.rng.choice(rows)
    if h.rng.random() < 0.3:
        n = h.next()
        taker = employee(f"E{n}", f"new{n}", h.rng.choice(h.units())["id"])
        h.people().append(taker)
        FIGURES["moved: passes to a hire"] += 1
    else:
        taker = h.rng.choice([row for row in rows if row is not giver])
        FIGURES["moved: passes"] += 1
    taker[name] = giver[name]
    giver[name] = fresh_value(h, name) if h.rng.random() < 0.5 else ""
    h.touched |= {giver["id"], taker["id"]}


def value_for_a_foreign_account(h: History) -> None:
    """A hire, or someone already synced, gets a mobile or e-mail address that another
    administrator gives an account syncd does not own before syncd runs."""
    name = h.rng.choice(UNIQUE_FIELDS)
    value = fresh_value(h, name)
    if h.rng.random() < 0.5:
        n = h.next()
        row = employee(f"E{n}", f"new{n}", h.rng.choice(h.units())["id"])
        h.people().append(row)
        FIGURES["foreign: a hire's value taken"] += 1
    else:
        row = h.rng.choice(movable(h))
        FIGURES["foreign: a new value taken"] += 1
    row[name] = value
    h.touched.add(row["id"])
    h.pending_foreign.append((name, value))


SOURCE_CHANGES = (
    hire,
    leave,
    move,
    rename_unit,
    reorganise,
    drop_unit,
    break_row,
    rename_user,
    depart_or_return,
    new_mobile,
    swap_values,
    rotate_values,
    pass_value,
    value_for_a_foreign_account,
)


# ---------------------------------------------------------------- platform changes


def change_platform(h: History, admin: AnotherAdmin, rig: Rig) -> None:
    h.deleted_now.clear()
    h.locked_now.clear()
    for _ in range(h.rng.randint(1, 4)):
        state = rig.emulator.state()
        there = {e["username"] for e in state["employees"]}
        held = {r["username"] for r in rig.rows("SELECT username FROM employees")}
        owned = (held & there) - h.foreign_people
        kind = h.rng.choice(PLATFORM_CHANGES)
        if kind(h, admin, state, sorted(owned)):
            h.drift[kind.__name__] += 1
            h.events.append(f"platform: {kind.__name__}")
    serials = [n["serial_no"] for n in rig.emulator.state()["nodes"] if n.get("serial_no")]
    for name, value in h.pending_foreign:  # after any wipe: the values the source gives out
        username = f"guest{h.next()}"
        admin.add_person(username, h.rng.choice([None, *serials]), **{name: value})
        h.foreign_people.add(username)
        h.drift["foreign account takes a value"] += 1
        h.events.append(f"platform: {username} takes {name} {value}")
    h.pending_foreign.clear()


def delete_person(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    if not owned:
        return False
    username = h.rng.choice(owned)
    h.deleted_now |= {row["id"] for row in h.people() if row["username"] == username}
    h.deleted |= h.deleted_now
    admin.delete_person(username)
    return True


def lock_or_unlock_person(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    if not owned:
        return False
    username = h.rng.choice(owned)
    if admin.employee(username)["locked"]:
        admin.unlock(username)
    else:
        admin.lock(username)
        h.locked_now.add(username)
    return True


def move_person(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    serials = [n["serial_no"] for n in state["nodes"] if n.get("serial_no")]
    if not owned or not serials:
        return False
    admin.move_person(h.rng.choice(owned), h.rng.choice(serials))
    return True


def edit_person(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    if not owned:
        return False
    admin.edit(h.rng.choice(owned), mobile=f"136{h.next():08d}", name=f"Edited {h.next()}")
    return True


def rename_node(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    serials = [n["serial_no"] for n in state["nodes"] if n.get("serial_no")]
    if not serials:
        return False
    admin.rename_node(h.rng.choice(serials), f"Renamed {h.next()}")
    return True


def move_node(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    nodes = [n for n in state["nodes"] if n.get("serial_no")]
    if not nodes:
        return False
    node = h.rng.choice(nodes)
    below = {node["id"]}
    while True:  # the node and its subtree: not a place to move it to
        more = {n["id"] for n in state["nodes"] if n.get("parent_org_id") in below} - below
        if not more:
            break
        below |= more
    targets = [n.get("serial_no") for n in nodes if n["id"] not in below]
    admin.move_node(node["serial_no"], h.rng.choice([None, *targets]))
    return True


def delete_node(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    parents = {n.get("parent_org_id") for n in state["nodes"]}
    empty = [
        n["serial_no"]
        for n in state["nodes"]
        if n.get("serial_no") and not n["all_employee_count"] and n["id"] not in parents
    ]
    if not empty:
        return False
    admin.delete_node(h.rng.choice(empty))
    return True


def add_foreign(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    serials = [n["serial_no"] for n in state["nodes"] if n.get("serial_no")]
    parent = h.rng.choice([None, *serials])
    admin.add_node(f"Guest unit {h.next()}", parent)
    username = f"guest{h.next()}"
    admin.add_person(username, h.rng.choice([None, *serials]))
    h.foreign_people.add(username)
    return True


def foreign_takes_deleted(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    """One of syncd's people deleted, and their mobile or e-mail address given to an
    account syncd does not own."""
    rows = {row["username"]: row for row in h.people()}
    name = h.rng.choice(UNIQUE_FIELDS)
    candidates = [u for u in owned if u in rows and rows[u][name]]
    if not candidates:
        return False
    username = h.rng.choice(candidates)
    value = admin.employee(username)[name]
    if not value:
        return False
    delete_person(h, admin, state, [username])
    guest = f"guest{h.next()}"
    admin.add_person(guest, None, **{name: value})
    h.foreign_people.add(guest)
    return True


def foreign_gives_up(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    """An account syncd does not own gives its mobile or e-mail address up: cleared,
    changed, or the account deleted."""
    holders = [
        e
        for e in state["employees"]
        if e["username"] in h.foreign_people and (e["mobile"] or e["email"])
    ]
    if not holders:
        return False
    holder = h.rng.choice(holders)
    how = h.rng.choice(("cleared", "changed", "deleted"))
    if how == "deleted":
        admin.delete_person(holder["username"])
        h.foreign_people.discard(holder["username"])
    else:
        name = h.rng.choice([n for n in UNIQUE_FIELDS if holder[n]])
        admin.edit(holder["username"], **{name: "" if how == "cleared" else fresh_value(h, name)})
    return True


def set_clock_back(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    """The platform's clock is set back (a minute to half an hour): what changes next is
    stamped before what syncd has already read."""
    admin.emulator.set_clock_back(h.rng.randint(60, 1800))
    return True


def delete_most_people(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    """Most of syncd's people deleted, or all of them, and every node left empty."""
    if not owned:
        return False
    gone = h.rng.sample(owned, max(1, len(owned) * h.rng.randint(6, 10) // 10))
    for username in gone:
        h.deleted_now |= {row["id"] for row in h.people() if row["username"] == username}
        admin.delete_person(username)
    h.deleted |= h.deleted_now
    while True:  # leaves first, until none is empty
        nodes = admin.emulator.state()["nodes"]
        parents = {n.get("parent_org_id") for n in nodes}
        empty = [
            n["serial_no"]
            for n in nodes
            if n.get("serial_no") and not n["all_employee_count"] and n["id"] not in parents
        ]
        if not empty:
            return True
        for serial in empty:
            admin.delete_node(serial)


def wipe(h: History, admin: AnotherAdmin, state: Any, owned: list[str]) -> bool:
    """The organization wiped: every node but the root, every employee and user."""
    h.deleted_now |= {row["id"] for row in h.people()}
    h.deleted |= h.deleted_now
    h.foreign_people.clear()
    admin.emulator.reset(data=True)
    return True


PLATFORM_CHANGES = (
    delete_person,
    lock_or_unlock_person,
    move_person,
    edit_person,
    rename_node,
    move_node,
    delete_node,
    add_foreign,
    set_clock_back,
    delete_most_people,
    wipe,
    foreign_takes_deleted,
    foreign_gives_up,
)
