"""The identity campaign's truth: companies whose people are kept apart from what syncd reads,
as identity_world.py keeps them, and the files their sources export.

A ``Staff`` is one installation's company (``Truth`` with ids, keys, e-mail addresses and
mobiles of its own, so that two installations on one platform never share a person by
accident, only by the events that make them meet). With several sources it also holds each
person's record in the directory (an account enabled or disabled, or none) and the head
each department names. The truth's ``status`` is HR's word: active, departed, or gone (no
HR row); ``standing`` says what the identity invariants make of a person from every source
that holds them.
"""

from __future__ import annotations

import csv
import io
import random
from dataclasses import dataclass, field
from typing import Literal

from .identity_world import (
    ACTIVE,
    DEPARTED,
    UNIT_NAMES,
    Person,
    Status,
    Truth,
    Unit,
    departed_this_round,
    fold,
    preferred_row,
    row_to_blank,
    side_random,
    variant,
)

Directory = Literal["enabled", "disabled"]  # a directory account; none: no record
Standing = Literal["active", "departed", "gone", "unsure"]


@dataclass
class Staff(Truth):
    """One installation's company. ``prefix`` starts its HR ids (E1, B1), ``offset`` its
    people's keys (unique over every installation of a campaign)."""

    prefix: str = "E"
    offset: int = 0
    directory: dict[int, Directory] = field(default_factory=dict)  # several sources only
    heads: dict[str, str] = field(default_factory=dict)  # unit id -> the head's HR id
    # The HR rows the last HR export wrote without their name (several sources), by HR id.
    blanked: set[str] = field(default_factory=set)

    def hire(self, username: str | None = None) -> Person:
        p = super().hire(username)
        n = self.serial
        p.key, p.hr_id = self.offset + n, f"{self.prefix}{n}"
        p.email = f"{self.prefix.lower()}{n}@acme.example"
        p.mobile = f"13{9 - self.offset // 10_000}{n:08d}"
        if username is None and self.offset:
            # Another installation's own usernames, in its HR system's own letter case.
            p.username = (p.username + self.prefix.lower()).capitalize()
        return p

    def person(self, key: int) -> Person:
        return next(p for p in self.people if p.key == key)


def first_staff(
    rng: random.Random, *, prefix: str = "E", offset: int = 0, size: tuple[int, int] = (10, 15)
) -> Staff:
    """A company of ``size`` people (two of them departed) in seven departments; another
    installation's departments have ids and names of their own."""
    names = rng.sample(UNIT_NAMES, 7)
    tag = "" if not offset else f" {prefix}"
    units = [Unit(f"{prefix}U1" if offset else "U1", names[0] + tag, "")]
    for n in range(2, 8):
        parent = rng.choice(["", *[u.id for u in units]])
        units.append(Unit(f"{prefix}U{n}" if offset else f"U{n}", names[n - 1] + tag, parent))
    staff = Staff(rng, units, ldap=False, prefix=prefix, offset=offset)
    for _ in range(rng.randint(*size)):
        staff.hire()
    for person in rng.sample(staff.people, 2):
        person.status = "departed"
    return staff


def standing(staff: Staff, p: Person, *, several: bool) -> tuple[Standing, bool]:
    """What the invariants make of a person: their standing, and whether a complete read
    must leave them without an active account (departed in every source that holds them).

    With several sources (HR decides the status where it has the person, the directory
    where HR has not): HR active with the directory account disabled, or an account left
    enabled for someone HR no longer has, are "unsure" (the sources disagree: syncd may
    keep them as they are, or follow either), and no invariant about their lock holds.
    """
    if not several:
        return p.status, p.status != "active"
    account = staff.directory.get(p.key)
    if p.status == "active":
        return ("unsure", False) if account == "disabled" else ("active", False)
    if p.status == "departed":
        return "departed", account != "enabled"
    if account == "enabled":
        return "unsure", False
    return ("departed" if account else "gone"), True


# ---------------------------------------------------------------- HR with a directory


def give_account(t: Staff, p: Person, why: str) -> None:
    t.directory[p.key] = "enabled"
    t.event("directory account", f"{p.hr_id} {p.username} ({why})")


def hire_with_account(t: Staff) -> None:
    p = t.hire()
    t.event("hire", f"{p.hr_id} {p.username} in {p.unit}")
    if t.rng.random() < 0.7:
        t.directory[p.key] = "enabled"
    else:
        t.event("record missing from a source", f"{p.hr_id}: no directory account yet")


def account_catches_up(t: Staff) -> None:
    waiting = [p for p in t.with_status("active") if p.key not in t.directory]
    waiting = [p for p in waiting if not directory_taken(t, p.username, p.key)]
    if waiting:
        give_account(t, t.rng.choice(waiting), "made late")


def leave_hr(t: Staff) -> None:
    """HR drops a row; the directory keeps the account, disables it, or deletes it."""
    candidates = t.with_status("active", "departed")
    if len(candidates) <= 4:
        return
    p = t.rng.choice(candidates)
    p.status = "gone"
    after = t.rng.choice(["kept", "disabled", "deleted"])
    if p.key in t.directory and after == "disabled":
        t.directory[p.key] = "disabled"
    elif after == "deleted":
        t.directory.pop(p.key, None)
    t.event("leave", f"{p.hr_id} {p.username} dropped from HR (directory account {after})")
    forget_head(t, p)


def depart_hr(t: Staff) -> None:
    if candidates := t.with_status("active"):
        p = t.rng.choice(candidates)
        p.status = "departed"
        disabled = p.key in t.directory and t.rng.random() < 0.5
        if disabled:
            t.directory[p.key] = "disabled"
        t.event("depart", f"{p.hr_id} {p.username} departed (account disabled: {disabled})")
        forget_head(t, p)


def disable_account(t: Staff) -> None:
    """The directory disables an account: of someone HR let go, or (rarely) before HR does."""
    enabled = [p for p in t.people if t.directory.get(p.key) == "enabled"]
    let_go = [p for p in enabled if p.status != "active"]
    pool = let_go if let_go and t.rng.random() < 0.8 else enabled
    if pool:
        p = t.rng.choice(pool)
        t.directory[p.key] = "disabled"
        forget_head(t, p)
        t.event("account disabled in the directory", f"{p.hr_id} {p.username} (HR: {p.status})")


def delete_account(t: Staff) -> None:
    gone = [p for p in t.people if p.status != "active" and p.key in t.directory]
    if gone:
        p = t.rng.choice(gone)
        del t.directory[p.key]
        t.event("record missing from a source", f"{p.hr_id}: directory account deleted")


def return_hr(t: Staff) -> None:
    candidates = [
        p
        for p in t.with_status("departed", "gone")
        if not directory_taken(t, p.username, p.key) and not t.taken(p.username)
    ]
    if candidates:
        p = t.rng.choice(candidates)
        t.event("return", f"{p.hr_id} {p.username} active again (was {p.status})")
        p.status = "active"
        t.directory[p.key] = "enabled"


def move_hr(t: Staff) -> None:
    if candidates := t.present():
        p = t.rng.choice(candidates)
        p.unit = t.rng.choice(t.units).id
        t.event("move", f"{p.hr_id} {p.username} to {p.unit}")


def recycle_login(t: Staff) -> None:
    """A new hire gets the login of someone HR let go, whose directory account is deleted
    first (a directory holds a login once). Now and then (a generator of its own) of
    someone HR still lists as departed, most often since this round (their account not
    locked yet): HR gives no logins, so only the directory tells."""
    side = side_random(t.rng, 6)
    listed = [
        p
        for p in t.with_status("departed")
        if not any(fold(q.username) == fold(p.username) and q.key != p.key for q in t.people)
    ]
    fresh = [p for p in listed if p.hr_id in departed_this_round(t)]
    if listed and side.random() < (0.7 if fresh else 0.3):
        old = side.choice(fresh or listed)
    elif let_go := [p for p in t.people if p.status != "active" and not t.taken(p.username)]:
        old = t.rng.choice(let_go)
    else:
        return
    if old.key in t.directory:
        del t.directory[old.key]
        t.event("record missing from a source", f"{old.hr_id}: directory account deleted")
    username, kind = old.username, "same spelling"
    if t.rng.random() < 0.3:
        username, kind = variant(t.rng, old.username)
    if directory_taken(t, username, None):
        return
    p = t.hire(username)
    t.directory[p.key] = "enabled"
    t.event("recycled username", f"{p.hr_id} hired as {username!r} ({kind}), {old.hr_id}'s")


def name_head(t: Staff) -> None:
    """A department names a head: most often someone placed in another department (HR's
    data as it comes: a head of several units, a deputy), or nobody (headless). Heads are
    people both sources hold active: a head syncd cannot read is another problem."""
    unit = t.rng.choice(t.units)
    present = [p for p in t.with_status("active") if t.directory.get(p.key) == "enabled"]
    outside = [p for p in present if p.unit != unit.id]
    inside = [p for p in present if p.unit == unit.id]
    pool = outside if outside and (not inside or t.rng.random() < 0.7) else inside
    if not pool or t.rng.random() < 0.15:
        t.heads.pop(unit.id, None)
        t.event("department head", f"{unit.id} has no head")
        return
    p = t.rng.choice(pool)
    t.heads[unit.id] = p.hr_id
    where = "outside" if p.unit != unit.id else "inside"
    t.event("department head", f"{unit.id} headed by {p.hr_id} ({where} the department)")


def forget_head(t: Staff, p: Person) -> None:
    """HR names no head who has left (a department headed by someone not read is another
    problem, not the one under test)."""
    for unit_id, head in list(t.heads.items()):
        if head == p.hr_id:
            del t.heads[unit_id]


def shadowed(t: Staff, p: Person) -> bool:
    """Whether another person whose HR row the last export wrote without its name holds
    ``p``'s login in the directory (any spelling): whether the two are one person under a
    new number cannot be told (the re-key rule needs both names), so syncd keeps ``p`` as
    they are and says so (a partial run)."""
    return any(
        q.hr_id in t.blanked and q.key != p.key and q.key in t.directory
        for q in t.people
        if fold(q.username) == fold(p.username)
    )


def directory_taken(t: Staff, username: str, key: int | None) -> bool:
    """Whether a directory account other than ``key``'s holds ``username`` (any spelling)."""
    return any(
        fold(p.username) == fold(username) and p.key != key
        for p in t.people
        if p.key in t.directory
    )


SEVERAL_SOURCE_EVENTS = (
    hire_with_account, hire_with_account, leave_hr, depart_hr, disable_account,
    disable_account, delete_account, account_catches_up, return_hr, move_hr, recycle_login,
    name_head, name_head,
)  # fmt: skip


def first_directory(t: Staff) -> None:
    """Everyone has an account but a hire or two; a departed person's is often disabled."""
    for p in t.people:
        if p.status == "departed":
            t.directory[p.key] = t.rng.choice(["enabled", "disabled"])
        elif t.rng.random() < 0.9:
            t.directory[p.key] = "enabled"
    for unit in t.rng.sample(t.units, 3):
        outside = [
            p
            for p in t.with_status("active")
            if p.unit != unit.id and t.directory.get(p.key) == "enabled"
        ]
        if outside:
            t.heads[unit.id] = t.rng.choice(outside).hr_id


# ---------------------------------------------------------------- files


def table(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def status_value(status: Status, vocabulary: tuple[str, str]) -> str:
    return vocabulary[0] if status == "active" else vocabulary[1]


def hr_file(t: Staff, vocabulary: tuple[str, str] = (ACTIVE, DEPARTED)) -> str:
    """HR's export with several sources: no usernames (the directory's are taken)."""
    rows = [["emp_no", "name", "department", "mobile", "status"]]
    rows += [
        [p.hr_id, p.name, p.unit, p.mobile, status_value(p.status, vocabulary)] for p in t.present()
    ]
    blank_a_name(t, rows)
    return table(rows)


def blank_a_name(t: Staff, rows: list[list[str]]) -> None:
    """Now and then an HR row without its name (``row_to_blank``): set aside, it still
    says who left, and the join locks them."""
    t.blanked = set()
    n = row_to_blank(t, rows, 2)
    if n is None:
        return
    rows[n][1] = ""
    t.event("name blanked", f"HR row of {rows[n][0]}")
    t.blanked.add(rows[n][0])


def directory_file(t: Staff) -> str:
    """The directory's export of accounts: login, mail, the employee number, enabled."""
    rows = [["guid", "login", "mail", "employeeID", "account", "ou"]]
    for p in t.people:
        if (account := t.directory.get(p.key)) is not None:
            rows.append([f"g-{p.hr_id}", p.username, p.email, p.hr_id, account, ""])
    misplace_a_row(t, rows)
    export_a_deleted_account(t, rows)
    return table(rows)


def export_a_deleted_account(t: Staff, rows: list[list[str]]) -> None:
    """Now and then the export still lists the deleted account of someone HR has as
    departed whose login a new hire now holds, its login cleared (as a directory keeps a
    deleted object with its attributes stripped): its row is set aside, and the account
    syncd holds under their number is still theirs, to be locked. Drawn from a generator
    of its own (every other draw of a seed stays as it was)."""
    side = side_random(t.rng, 5)
    ghosts = [
        p
        for p in t.people
        if p.status == "departed"
        and p.key not in t.directory
        and directory_taken(t, p.username, p.key)
    ]
    # Most often someone who left this round: their account is not locked yet.
    fresh = [p for p in ghosts if p.hr_id in departed_this_round(t)]
    if ghosts and side.random() < (0.8 if fresh else 0.3):
        p = side.choice(fresh or ghosts)
        rows.append([f"g-{p.hr_id}", "", p.email, p.hr_id, "disabled", ""])
        t.event("deleted account exported", f"directory row of {p.hr_id} without its login")


def misplace_a_row(t: Staff, rows: list[list[str]]) -> None:
    """Now and then the directory places an account in a department named ``..``: its row
    is set aside for where it places the person, which does not say who they are. Most
    often the account of someone whose HR row lost its name this export: HR decides their
    status, so the directory's row is outranked, as its record would be, and a leaver
    among them is still locked. Drawn from a generator of its own (every other draw of a
    seed stays as it was)."""
    side = side_random(t.rng, 3)
    if side.random() < 0.7 or len(rows) < 2:
        return
    n = preferred_row(side, rows, [n for n in range(1, len(rows)) if rows[n][3] in t.blanked])
    rows[n][5] = ".."
    t.event("account misplaced", f"directory row of {rows[n][3]} in department '..'")


def departments_file(t: Staff, *, heads: bool) -> str:
    header = ["id", "name", "parent_id", *(["head"] if heads else [])]
    rows = [header]
    for u in t.units:
        rows.append([u.id, u.name, u.parent, *([t.heads.get(u.id, "")] if heads else [])])
    return table(rows)


def statuses_written(t: Staff, vocabulary: tuple[str, str]) -> set[str]:
    return {status_value(p.status, vocabulary) for p in t.present()}
