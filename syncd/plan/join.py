"""Several sources joined into one Directory: plain data in, plain data out, no I/O.

Each source was read as it is alone (its own Directory, its own rejected rows). People are
joined on a key (a field each source holds, normalized the way ``match_value`` compares
it); each field is taken from the first source in its precedence that gives a value. The
joined person's id is the key itself: it is the same whichever sources know them today,
so a person found by one more source later is the same record, never a re-key.

What the join cannot pair is set aside as a rejected row naming the source, and the person
is kept as they are on the platform (``Directory.rejected_keys``): two records of one
source with the same key, a record without a key, a person a required source lacks (under
``wait``), a person another source rejected. A read that could not say who is gone (not
complete, a row that may hide others, a domain not read) makes the joined read say so too:
nobody becomes a leaver for want of a source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import Literal

from syncd.model import (
    Directory,
    Employee,
    Kind,
    RejectedRow,
    State,
    build_directory,
    match_value,
)
from syncd.plan.precedence import Precedence
from syncd.plan.values import SyncedEmployee
from syncd.spelling import look_alike

# The fields taken by precedence: every field but the id (the key is the joined id).
FIELDS = tuple(f for f in Employee._fields if f != "id")
_INDEX = {name: i for i, name in enumerate(Employee._fields)}
_POSITIONS, _STATE, _SENIOR = _INDEX["positions"], _INDEX["state"], _INDEX["senior"]
# Fields whose every value is a value (never empty): the first source that has the person
# decides them.
_ALWAYS_GIVEN = frozenset({_STATE, _SENIOR})
_MATCHED = frozenset({"username", "email", "mobile", "sn"})


@dataclass(frozen=True)
class SourceRead:
    """One source's read, and what the join needs to know of it."""

    name: str
    directory: Directory
    key: str = "sn"  # the field holding the join key: a model field or extra.<name>
    required: bool = True


@dataclass(frozen=True)
class JoinRules:
    # Model field (positions, state, email, ...) -> sources in order; a field not named:
    # every source in the order read.
    precedence: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    missing: Literal["wait", "partial"] = "wait"


@dataclass(frozen=True)
class Joined:
    directory: Directory
    departments_from: str  # the source whose departments are the tree
    # For each joined person asked about (explain=True: everyone), field -> the source
    # that gave it.
    origins: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    waiting: int = 0  # people a required source lacks (join.missing = wait)
    # explain=True: each joined key -> source -> that source's own id of the person.
    members: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def key_value(e: Employee, key: str) -> str | None:
    """The join key of one record, normalized (None: the record has none)."""
    extra = key.startswith("extra.")
    raw = dict(e.extra).get(key[len("extra.") :]) if extra else getattr(e, key)
    if raw is None:
        return None
    if key in _MATCHED:
        return match_value(key, raw)  # type: ignore[arg-type]
    return str(raw).strip() or None


def join(
    reads: Sequence[SourceRead],
    rules: JoinRules,
    *,
    explain: bool = False,
    synced: Mapping[str, SyncedEmployee] | None = None,
) -> Joined:
    """The sources' people joined by key, each field by precedence; departments from the
    first source that decides ``positions``.

    ``synced``: what syncd last wrote, by joined id. A person no source in the username's
    precedence gives a username to keeps the one syncd synced them with (their account):
    so a leaver HR marks departed whose directory account is already deleted is locked,
    not set aside for want of a username."""
    names = tuple(r.name for r in reads)
    by_name = {r.name: r for r in reads}
    orders = tuple(tuple(names.index(s) for s in rules.precedence.get(f, names)) for f in FIELDS)
    departments_from = rules.precedence.get("positions", names)[0]
    tree = by_name[departments_from].directory.departments
    precedence = Precedence(orders, len(reads), names.index(departments_from), tree)
    rejected: list[RejectedRow] = []
    # key -> one record per source (None where the source lacks them)
    people: dict[str, list[Employee | None]] = {}
    held: set[str] = set()  # keys set aside: duplicates
    held_usernames: set[str] = set()  # usernames rejected by a source: kept as they are
    for i, read in enumerate(reads):
        _carried(read, rejected, held_usernames)
        twice = _indexed(read, i, len(reads), people, rejected)
        for k, found in twice.items():
            held.add(k)
            ids = ", ".join(repr(e.id) for e in found)
            rejected.append(
                RejectedRow(
                    f"{read.name}: people {ids}",
                    f"join key {k!r} ({read.key}) is held by {len(found)} records of "
                    f"source {read.name!r}: it cannot say which one is the person",
                    key=k,
                    username=found[0].username,
                )
            )
    required = [i for i, r in enumerate(reads) if r.required]
    wait = rules.missing == "wait"
    everywhere = precedence.compiled((True,) * len(reads))  # the people every source has
    merged: list[tuple[str, Employee]] = []
    origins: dict[str, dict[str, str]] = {}
    members: dict[str, dict[str, str]] = {}
    waiting = 0
    for k, slots in people.items():
        if explain:
            members[k] = {names[i]: e.id for i, e in enumerate(slots) if e is not None}
        if held and k in held:
            continue
        employee = precedence.merge(k, slots) if None in slots else everywhere(k, *slots)
        if not employee.username and synced is not None and (known := synced.get(k)):
            employee = employee._replace(username=known.username)
        lacking = (
            [names[i] for i in required if slots[i] is None]
            if wait and None in slots and employee.state is not State.DEPARTED
            else None
        )
        if lacking:
            # Neither created nor changed, nor a leaver: kept as they are until every
            # required source has them. (A person the sources that have them say departed
            # is taken: they are locked, whoever else lacks them.)
            waiting += 1
            rejected.append(
                RejectedRow(
                    _where(k, slots, names),
                    f"waiting for source {', '.join(map(repr, lacking))}: "
                    "join.missing = wait syncs a person once every required source has them",
                    key=k,
                    username=employee.username or _any_username(slots),
                )
            )
            continue
        if held_usernames and employee.username and look_alike(employee.username) in held_usernames:
            rejected.append(
                RejectedRow(
                    _where(k, slots, names),
                    f"another source rejected a record of {employee.username!r}: kept as they "
                    "are until every source reads them",
                    key=k,
                    username=employee.username,
                )
            )
            continue
        merged.append((k, employee))  # where: the key (a row rejected below is named again)
        if explain:
            origins[k] = _origins(slots, orders, precedence, names)
            if not any(s is not None and s.username for s in slots) and employee.username:
                origins[k]["username"] = "the state database (as synced)"
    complete = all(r.directory.complete for r in reads)
    source = " + ".join(f"{r.name}={r.directory.source}" for r in reads)
    filtered = sum(r.directory.filtered for r in reads)
    warnings = [f"{r.name}: {w}" for r in reads for w in r.directory.warnings]
    if _plainly_valid(merged):
        # Each source validated its own records and the tree; what joining can break is
        # checked above: a username and a name given, no username twice. So the 100,000
        # people of a join are not validated a second time, one by one.
        directory = Directory(
            dict(tree), dict(merged), tuple(rejected), complete, source, None, filtered,
            tuple(warnings),
        )  # fmt: skip
    else:
        directory = build_directory(
            [(f"{departments_from}: department {d.id!r}", d) for d in tree.values()],
            merged,
            rejected=rejected,
            complete=complete,
            source=source,
            filtered=filtered,
            warnings=warnings,
        )
    named = tuple(
        replace(r, where=_where(r.key, people[r.key], names))
        if r.key in people and r.where == r.key
        else r
        for r in directory.rejected
    )
    if named != directory.rejected:
        directory = replace(directory, rejected=named)
    return Joined(directory, departments_from, origins, waiting, members)


def _indexed(
    read: SourceRead,
    i: int,
    count: int,
    people: dict[str, list[Employee | None]],
    rejected: list[RejectedRow],
) -> dict[str, list[Employee]]:
    """One source's records put in their slot by key; returns the keys held twice or more."""
    records = list(read.directory.employees.values())
    twice: dict[str, list[Employee]] = {}
    for e, k in zip(records, _keys(records, read.key), strict=True):
        if k is None:
            rejected.append(
                RejectedRow(
                    f"{read.name}: person {e.id!r}",
                    f"no join key: {read.key} is empty for {e.username!r}, so this record "
                    f"cannot be joined with the other sources' (source {read.name!r})",
                    key=None,
                    username=e.username,
                )
            )
            continue
        slots = people.get(k)
        if slots is None:
            slots = people[k] = [None] * count
        elif (first := slots[i]) is not None:
            twice.setdefault(k, [first]).append(e)
            continue
        slots[i] = e
    for k in twice:
        people[k][i] = None
    return twice


def _keys(records: list[Employee], key: str) -> list[str | None]:
    """key_value of each record, the plain text fields (id, username, sn, email) read by
    index in one comprehension."""
    index = _INDEX.get(key)
    if index is None or key == "mobile":
        return [key_value(e, key) for e in records]
    texts: list[str | None] = list(map(itemgetter(index), records))
    if key == "email":
        return [(v.strip().casefold() or None) if v else None for v in texts]
    return [(v.strip() or None) if v else None for v in texts]


def _plainly_valid(merged: list[tuple[str, Employee]]) -> bool:
    """Whether every joined person has a username and a name, and no username (in any
    spelling, syncd.spelling) is held twice: then build_directory would reject nobody."""
    if not all(e.username and e.name for _, e in merged):
        return False
    seen = {u.casefold() if (u := e.username).isascii() else look_alike(u) for _, e in merged}
    return len(seen) == len(merged)


def _where(key: str | None, slots: Sequence[Employee | None], names: tuple[str, ...]) -> str:
    found = "+".join(names[i] for i, s in enumerate(slots) if s is not None)
    return f"{found}: key {key!r}"


def _carried(read: SourceRead, rejected: list[RejectedRow], held_usernames: set[str]) -> None:
    """A source's own rejected rows, named by the source; a read that could not say who is
    gone makes the joined read say it too."""
    d = read.directory
    for row in d.rejected:
        # A department's id is the tree's; a person's source id is a joined key only when
        # the source joins on it.
        key = row.key if row.kind is not Kind.EMPLOYEE or read.key == "id" else None
        if row.kind is Kind.EMPLOYEE and row.username:
            held_usernames.add(look_alike(row.username))
        hides = row.may_hide_rows or (row.kind is Kind.EMPLOYEE and not (key or row.username))
        rejected.append(
            RejectedRow(f"{read.name}: {row.where}", row.reason, row.kind, key, row.username, hides)
        )
    for warning in d.warnings:  # a domain not read: who it holds is unknown
        rejected.append(
            RejectedRow(
                f"{read.name}: {d.source}",
                f"part of source {read.name!r} was not read ({warning}): nobody is a leaver",
                Kind.EMPLOYEE,
                may_hide_rows=True,
            )
        )


def _origins(
    slots: list[Employee | None],
    orders: tuple[tuple[int, ...], ...],
    precedence: Precedence,
    names: tuple[str, ...],
) -> dict[str, str]:
    """Which source gave each field (the preview): the rule Precedence compiles, walked."""
    gave: dict[str, str] = {}
    for n, order in enumerate(orders):
        index = n + 1  # the field's place in Employee (the id is 0)
        for s in order:
            record = slots[s]
            if record is None:
                continue
            value = record[index]
            if index == _POSITIONS:
                if s != precedence.tree_source and not precedence.placed(record.positions):
                    continue
                if not value:
                    continue
            elif index not in _ALWAYS_GIVEN and value in (None, "", ()):
                continue
            gave[FIELDS[n]] = names[s]
            break
    return gave


def _any_username(slots: list[Employee | None]) -> str | None:
    return next((e.username for e in slots if e is not None and e.username), None)
