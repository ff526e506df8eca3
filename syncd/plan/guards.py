"""Safety checks on a plan, made before anything is sent: too many removals, a shrunken
source, too much access granted, too many updates of synced people.

Removals are blocked past either limit (a count, or a share of the synced records).
Access granted and updates are blocked past both: the count is a floor below which a run
is never stopped, the share what lets a large company make more. Each guard has its own
one-shot override (``--allow-removals N``, ``--allow-reactivations N``, ``--allow-updates
N``), named with the number to pass in the message of a guard that trips; a reviewed saved
plan stands for all three (syncd.run.saved_plan).

Access granted (the ``max_reactivations`` guard) counts every way a run gives sign-in to
someone who had none: unlocks (a person back in the source, an account locked on the
platform, a locked account adopted), accounts made anew for people syncd holds locked or
removed before, and accounts made for people a read called departed (their ids are kept:
syncd.snapshot.departures). A status column that turns everyone active stops here.

So does access given to people the source called departed by a read that cannot tell who
is departed, whatever their number: a file without its status column (a header renamed or
left out reads everyone as active), or a complete read that calls nobody departed though
syncd holds people a read called so (an OpenLDAP departed_filter whose attribute the bind
account cannot read, or whose value was renamed, matches nobody). Absence is not evidence
of a return: the run is blocked until the read tells them apart again, or a reviewed run
lets them in (``--allow-reactivations N``). So does a former employee who comes back
beside someone who leaves, in a complete read (``shifted_status``): a status column
shifted by a row. A former employee there is someone a read called departed before,
someone whose account syncd removed, someone syncd holds active whose account was
deleted on the platform, or an account locked there while syncd left it unlocked: on the
platform, locked is the departure flag, and who set it is not recorded. It is another
administrator's lock (or deletion), or syncd's own from after the backup its whole state
directory was rolled back to (a VM snapshot: the database, its departures and
``last-run`` all from before); then only the platform remembers that the person left, and
a shifted column must not hand the account back. (Such a lock alone does not count for a
read that cannot tell: an export of the people still employed calls nobody departed on
every ordinary day.)

Its floor is 3 (``sync.max_reactivations``) and its share 1% of the synced people
(``sync.max_reactivation_ratio``): up to 300 people, a fourth person given access in one
run stops it; 10,000 people may get 100. As with Entra Connect's accidental-delete
threshold, the limit is a small count an admin can read at a glance and that an ordinary
day stays under (a returning employee or two, a hire's start day is not counted); a
handful of re-activations in a small company is a mass re-activation, and the share only
raises the limit where a handful is an ordinary day.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from syncd.model import IDENTIFYING, Directory, Kind, State
from syncd.plan.actions import Action
from syncd.plan.dates import ENDED, NOT_STARTED
from syncd.plan.values import (
    DELETED_HELD,
    DEPARTED,
    ROW_REJECTED,
    Change,
    Plan,
    Snapshot,
    SyncedEmployee,
)


@dataclass(frozen=True, slots=True)
class GuardDecision:
    name: str
    passed: bool
    message: str
    overridden: bool = False


@dataclass(frozen=True)
class Limits:
    max_removals: int = 50
    max_removal_ratio: float = 0.10
    allow_removals: int | None = None  # --allow-removals N: this run may remove up to N
    max_reactivations: int = 3
    max_reactivation_ratio: float = 0.01
    max_updates: int = 100
    max_update_ratio: float = 0.5
    max_field_changes: int = 3
    max_field_change_ratio: float = 0.05
    allow_reactivations: int | None = None  # --allow-reactivations N
    allow_updates: int | None = None  # --allow-updates N


@dataclass(frozen=True, slots=True)
class Reactivations:
    """What the guard on access granted counts: sign-in given to someone who had none."""

    returning: int = 0  # unlocks of people syncd holds locked: back in the source
    # Of ``returning`` and ``departed``: people a read called departed before (not those
    # locked as missing); given access by a read that cannot tell, they stop the run.
    called_departed: int = 0
    drift: int = 0  # unlocks of accounts locked on the platform while active in the source
    adopted: int = 0  # unlocks of locked platform accounts adopted by this run
    recreated: int = 0  # new accounts for people syncd holds locked (deleted there, renamed)
    removed: int = 0  # new accounts for people whose account syncd removed before
    departed: int = 0  # new accounts for people a read called departed (never synced)
    # Not in the total: new accounts for people syncd holds active whose account was
    # deleted on the platform (a wiped platform is rebuilt by one run), or held so when it
    # was, their row rejected then (kept as DELETED_HELD). Beside someone who leaves, they
    # are a former employee's return (shifted_status), and counted then.
    deleted: int = 0

    @property
    def total(self) -> int:
        return (
            self.returning + self.drift + self.adopted + self.recreated + self.removed
        ) + self.departed

    @property
    def former(self) -> int:
        """Access for people the source, syncd or the platform had as gone: what a shifted
        status column gives (shifted_status; the kinds of ``CALLED``)."""
        return self.called_departed + self.removed + self.drift + self.deleted

    def describe(self, beside: bool = False) -> str:
        """The kinds counted, each with its number; ``beside``: with the accounts made
        anew for people whose account was deleted (counted beside someone who leaves)."""
        parts = [
            (self.returning, "unlock", "unlocks", "of people back in the source"),
            (self.drift, "unlock", "unlocks", "of accounts locked on the platform by someone else"),
            (self.adopted, "unlock", "unlocks", "of locked accounts being adopted"),
            (self.recreated, "account", "accounts", "made anew for people held locked"),
            (
                self.deleted if beside else 0,
                "account",
                "accounts",
                "made anew for people whose account was deleted on the platform",
            ),
            (self.removed, "account", "accounts", "made anew for people syncd removed"),
            (
                self.departed,
                "account",
                "accounts",
                "made for people the source called departed before",
            ),
        ]
        said = [f"{n:,} {one if n == 1 else many} {what}" for n, one, many, what in parts if n]
        return ", ".join(said)


# How a change gives access (access_of): what the guard on access granted counts it under.
RETURNING = "back in the source"
RETURNING_DEPARTED = "back in the source, called departed before"
DRIFT = "locked on the platform by someone else"
ADOPTED = "a locked account adopted"
RECREATED = "made anew for someone held locked"
DELETED = "made anew, deleted on the platform"
REMOVED = "made anew for someone syncd removed"
CALLED_DEPARTED = "made for someone a read called departed"
# Access for a former employee (called departed by a read before, removed by syncd, or
# locked or deleted on the platform), back beside someone who leaves: a shifted column.
# Reactivations.former counts the same kinds.
CALLED = (RETURNING_DEPARTED, CALLED_DEPARTED, REMOVED, DRIFT, DELETED)


def access_of(c: Change, snapshot: Snapshot) -> str:
    """Under what the guard on access granted counts this change ("" when it gives no
    access): why it gives sign-in, which the change's fields alone do not say. The same
    unlock repairs another admin's lock one day and lets a former employee back in
    another; a saved plan's fingerprint holds this too (syncd.run.saved_plan)."""
    if c.kind is not Kind.EMPLOYEE:
        return ""
    synced = snapshot.employees.get(c.key)
    if c.action is Action.UNLOCK:
        return _unlocked(synced)
    if c.action is not Action.CREATE:
        return ""
    if synced is not None:  # the account is gone: deleted on the platform, or renamed
        if synced.locked:
            return RECREATED
        # Active, under the same username: their account was deleted on the platform (a
        # new username is remove_and_create's rename, the same person's access).
        return DELETED if c.display == synced.username else ""
    why = snapshot.departures.get(c.key)
    if why is None:
        return ""
    return _KEPT.get(why, CALLED_DEPARTED)


# snapshot.departures' reasons, by what an account made for the person counts under.
_KEPT = {"removed": REMOVED, DELETED_HELD: DELETED}


def _unlocked(synced: SyncedEmployee | None) -> str:
    """Under what an unlock of this person is counted (see access_of)."""
    if synced is None:
        return ADOPTED
    if not synced.locked:
        return DRIFT
    if synced.lock_reason == NOT_STARTED:
        return ""  # a new hire's start day: locked by syncd only until then
    return RETURNING_DEPARTED if synced.lock_reason == DEPARTED else RETURNING


def reactivations(p: Plan, snapshot: Snapshot) -> Reactivations:
    """The plan's access granted: every unlock, and every account made for someone syncd
    holds locked (a departed person's account deleted on the platform, or renamed), removed
    before, or a read called departed (snapshot.departures); and apart, the accounts made
    anew for people syncd holds active (deleted on the platform)."""
    n = Counter(access_of(c, snapshot) for c in p.changes)
    return Reactivations(
        returning=n[RETURNING] + n[RETURNING_DEPARTED],
        called_departed=n[RETURNING_DEPARTED] + n[CALLED_DEPARTED],
        drift=n[DRIFT],
        adopted=n[ADOPTED],
        recreated=n[RECREATED],
        deleted=n[DELETED],
        removed=n[REMOVED],
        departed=n[CALLED_DEPARTED],
    )


NEIGHBOURS = 2  # rows apart: a status column shifted by one or two rows


def shifted_status(p: Plan, directory: Directory, snapshot: Snapshot) -> tuple[str, str] | None:
    """Someone given access back and someone newly departed next to each other in a complete
    read (within NEIGHBOURS rows of the run of rows called departed before that holds the
    first), or None: what a status column shifted by a row or two does, each former
    employee's status handed to a neighbouring row (the former employee unlocked, an active
    neighbour locked), counts that stay under every guard's limits. Rare on an ordinary day;
    a reviewed run lets such a pair through (``--allow-reactivations N``)."""
    if not directory.complete:
        return None
    back: list[str] = []
    leaving: set[str] = set()
    for c in p.changes:
        if c.kind is not Kind.EMPLOYEE:
            continue
        if c.action is Action.LOCK:
            if c.record is not None and c.lock_reason is None:  # departed in the source
                leaving.add(c.key)
        elif access_of(c, snapshot) in CALLED:
            back.append(c.key)
    if not back or not leaving:
        return None
    called = _called_departed(directory, snapshot, leaving)
    order = list(directory.employees)
    at = {key: n for n, key in enumerate(order)}
    for key in back:
        if key not in at:  # not in this read: no neighbours in it
            continue
        first, last = _run(order, at[key], called)
        for near in order[max(0, first - NEIGHBOURS) : last + NEIGHBOURS + 1]:
            if near in leaving:
                return key, near
    return None


def _called_departed(directory: Directory, snapshot: Snapshot, leaving: set[str]) -> set[str]:
    """Who was called departed before a plan where ``leaving`` leave: held locked as read
    departed, kept in the departures (read departed, or their account removed; not one
    deleted while held active), or read departed now and not among ``leaving``."""
    called = {k for k, s in snapshot.employees.items() if s.lock_reason == DEPARTED}
    called.update(k for k, why in snapshot.departures.items() if why != DELETED_HELD)
    # Read departed and not leaving in this plan: gone already, whatever syncd remembers
    # (a rolled-back state holds them active; the platform has them locked, or deleted).
    called.update(
        k for k, e in directory.employees.items() if e.state is State.DEPARTED and k not in leaving
    )
    return called


def _run(order: list[str], n: int, called: set[str]) -> tuple[int, int]:
    """The first and last row of the run of rows called departed before around row ``n``,
    gaps of fewer than NEIGHBOURS rows included: shifted by up to NEIGHBOURS rows, the
    statuses of such a run move past its end (or before its start), where someone active
    reads departed, however long the run."""
    first = last = n
    while any(order[i] in called for i in range(max(0, first - NEIGHBOURS), first)):
        first -= next(d for d in range(1, NEIGHBOURS + 1) if order[first - d] in called)
    end = len(order)
    while any(order[i] in called for i in range(last + 1, min(end, last + NEIGHBOURS + 1))):
        last += next(d for d in range(1, NEIGHBOURS + 1) if order[last + d] in called)
    return first, last


@dataclass(frozen=True, slots=True)
class Departures:
    """What an applied run leaves the guard on access granted to remember
    (syncd.snapshot.departures): ids only."""

    departed: tuple[str, ...] = ()  # read departed, not yet kept
    returned: tuple[str, ...] = ()  # kept, read active: gone once syncd holds them
    let_go: tuple[str, ...] = ()  # removed or let go of by this run
    # Let go of by this run but not gone: deleted on the platform while held active, their
    # row rejected (ROW_REJECTED); made anew once read, as a wiped platform's people are.
    deleted: tuple[str, ...] = ()


def departures(p: Plan, directory: Directory, snapshot: Snapshot) -> Departures:
    """The ids this run's read and plan add to, or take from, snapshot.departures."""
    kept = snapshot.departures
    departed: list[str] = []
    returned: list[str] = []
    gone = State.DEPARTED
    for key, e in directory.employees.items():
        if e.state is gone:
            if key not in kept:
                departed.append(key)
        elif key in kept:
            returned.append(key)
    # Read departed in rows set aside for what does not say who they are: locked all the same.
    departed.extend(key for key in directory.departed_aside() if key not in kept)
    let_go: list[str] = []
    deleted: list[str] = []
    for c in p.changes:
        if c.action not in (Action.REMOVE, Action.FORGET) or c.kind is not Kind.EMPLOYEE:
            continue
        held = snapshot.employees.get(c.key)
        if c.reason == ROW_REJECTED and held is not None and not held.locked:
            deleted.append(c.key)
        elif kept.get(c.key) != "removed":
            let_go.append(c.key)
    return Departures(tuple(departed), tuple(returned), tuple(let_go), tuple(deleted))


def updates(p: Plan, snapshot: Snapshot) -> tuple[int, int]:
    """Updates of people syncd holds (re-keyed ones included, and those withheld as
    another person's: the source asks for them; adoptions are not, nor the updates that
    free a value for another person first): how many, and how many of those applied put
    back what was changed on the platform (drift)."""
    total = repairs = 0
    for c in _applied_updates(p, snapshot):
        if not c.frees:
            total += 1
            repairs += c.platform_before is not None
    return total + len(p.withheld), repairs


def _held_updates(p: Plan, snapshot: Snapshot) -> Iterator[Change]:
    yield from _applied_updates(p, snapshot)
    yield from p.withheld  # syncd.plan.holds: asked for, not applied


def _applied_updates(p: Plan, snapshot: Snapshot) -> Iterator[Change]:
    held = snapshot.employees
    update, employee = Action.UPDATE, Kind.EMPLOYEE  # looked up once
    for c in p.changes:
        if c.action is not update or c.kind is not employee:
            continue
        if c.key in held or (c.previous_key is not None and c.previous_key in held):
            yield c


PASSED_ON = "passed on"


def field_changes(p: Plan, snapshot: Snapshot) -> Counter[str]:
    """How many people syncd holds this plan's updates change so, by what: a field emptied
    (a value written before, none now: ``"email emptied"``, ``"extended.extended1
    emptied"`` for one of a table's keys), a field that tells people apart replaced by
    another value (``"name replaced"``, ``"source id replaced"`` for a re-key), a unique
    value passed on to another person of this run (``"mobile passed on"``). A column or
    attribute renamed or left out empties a field for everyone at once; an export whose
    rows shifted hands each person another's name, e-mail or mobile."""
    counts: Counter[str] = Counter()
    for c in _held_updates(p, snapshot):
        if c.frees:  # freed for another person first: the values' own update follows
            counts.update(f"{name} {PASSED_ON}" for name in c.frees)
            continue
        if c.previous_key is not None and c.previous_key != c.key:
            counts["source id replaced"] += 1
        counts.update(_field_changes(c.before or {}, c.after or {}))
    return counts


_EMPTY: tuple[object, ...] = (None, "", [], {})
# What tells people apart (syncd.plan.rekeys), and what they sign in with besides their
# username: another value in one of these for many people at once is a column gone wrong.
TELLING = (*IDENTIFYING, "email")


def _field_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> Iterator[str]:
    for name, was in before.items():
        now = after.get(name)
        if isinstance(was, Mapping):
            now = now if isinstance(now, Mapping) else {}
            yield from (f"{name}.{key}" for key in _field_changes(was, now))
        elif was in _EMPTY or now == was:
            continue
        elif now in _EMPTY:
            yield f"{name} emptied"
        elif name in TELLING:
            yield f"{name} replaced"


def adoptions(p: Plan, snapshot: Snapshot) -> int:
    """The platform's accounts and nodes the plan takes over (adopts): held once applied."""
    held = {Kind.EMPLOYEE: snapshot.employees, Kind.DEPARTMENT: snapshot.departments}
    return sum(
        1
        for c in p.changes
        if c.action is Action.UPDATE
        and c.platform_before is not None
        and c.previous_key is None
        and not c.frees  # the same account's update follows
        and c.kind in held
        and c.key not in held[c.kind]
    )


def check_guards(
    p: Plan, directory: Directory, snapshot: Snapshot, limits: Limits
) -> list[GuardDecision]:
    """Safety checks on the plan; the run stops if any decision did not pass."""
    removals = p.removals
    override = limits.allow_removals is not None and removals <= limits.allow_removals
    how = f"rerun with --allow-removals {removals} if this is intended"
    decisions = [_removal_guard(p, snapshot, limits, override, how)]
    shrink = _shrink_guard(directory, snapshot, limits, override, how)
    if shrink is not None:
        decisions.append(shrink)
    # Shown only when there is something to count, as the shrink guard is.
    back = reactivations(p, snapshot)
    shifted = shifted_status(p, directory, snapshot) if back.former else None
    if back.total or shifted is not None:
        blind = cannot_tell_departed(directory) if back.called_departed else None
        decisions.append(_reactivation_guard(back, snapshot, limits, blind, shifted))
    changed, repairs = updates(p, snapshot)
    if changed:
        fields = field_changes(p, snapshot)
        decisions.append(
            _update_guard((changed, repairs, len(p.withheld)), fields, snapshot, limits)
        )
    return decisions


def _over(count: int, floor: int, ratio: float, of: int) -> bool:
    """Past both limits: more than ``floor`` and more than ``ratio`` of ``of``."""
    return count > floor and (of == 0 or count / of > ratio)


def _decision(
    name: str, message: str, too_many: bool, count: int, allowed: int | None, flag: str
) -> GuardDecision:
    override = allowed is not None and count <= allowed
    if too_many:
        message += f": rerun with {flag} {count} if this is intended"
    return GuardDecision(name, not too_many or override, message, overridden=too_many and override)


def cannot_tell_departed(directory: Directory) -> str | None:
    """Why a read cannot tell who is departed, or None when it can (see the module's
    docstring): it has no status, or, complete, it calls nobody departed; joined, one of
    the sources that decide status cannot tell (``Directory.blind``)."""
    if directory.blind:
        sources = "; ".join(directory.blind)
        return f"a source that decides status cannot tell who is departed ({sources})"
    if not directory.status_read:
        return (
            "this read has no status: the file lacks its status column (a header renamed or "
            "left out, source.csv.columns.status) or the directory its status attribute, and "
            "without one everyone reads as active"
        )
    employees = directory.employees.values()
    if directory.complete and not any(e.state is State.DEPARTED for e in employees):
        return (
            "this read calls nobody departed: an OpenLDAP departed_filter that matches "
            "nobody (its attribute not readable by the bind account or not in the schema, "
            "its value renamed), or an export whose statuses all read as active"
        )
    return None


def _reactivation_guard(
    back: Reactivations,
    snapshot: Snapshot,
    limits: Limits,
    blind: str | None,
    shifted: tuple[str, str] | None,
) -> GuardDecision:
    # Accounts deleted on the platform and made anew count beside someone who leaves.
    beside = shifted is not None
    n, people = back.total + (back.deleted if beside else 0), snapshot.headcount
    ratio = limits.max_reactivation_ratio
    # Access granted in every form, under the name admins know it by (README, the flag).
    message = (
        f"{n:,} re-activation{'' if n == 1 else 's'} planned ({back.describe(beside)}); "
        f"blocked past both {limits.max_reactivations:,} and {ratio:.0%} of {people:,} "
        "synced people"
    )
    too_many = _over(n, limits.max_reactivations, ratio, people)
    if blind is not None:  # whatever their number: the read says nothing of a return
        said = back.called_departed
        message += (
            f", and always when the source called them departed before ({said:,} here) but {blind}"
        )
        too_many = True
    if shifted is not None:  # whatever their number: one such pair is a shifted column
        message += (
            ", and always when a former employee (called departed by a read, removed by "
            "syncd, locked or deleted on the platform) comes back beside someone who leaves "
            f"(source ids {shifted[0]} and {shifted[1]}, within {NEIGHBOURS} rows of each "
            "other in the read): a status column shifted by a row?"
        )
        too_many = True
    return _decision(
        "max_reactivations",
        message,
        too_many,
        n,
        limits.allow_reactivations,
        "--allow-reactivations",
    )


def _update_guard(
    counted: tuple[int, int, int], fields: Counter[str], snapshot: Snapshot, limits: Limits
) -> GuardDecision:
    """``counted``: the updates, those putting back drift and those withheld."""
    changed, repairs, withheld = counted
    people = snapshot.headcount
    ratio = limits.max_update_ratio
    among = [f"{repairs} of them putting back changes made on the platform"] if repairs else []
    if withheld:
        among.append(f"{withheld:,} of them held as another person's, not applied")
    told = f" ({'; '.join(among)})" if among else ""
    message = (
        f"{changed:,} update{'' if changed == 1 else 's'} of synced people planned{told}; blocked "
        f"past both {limits.max_updates:,} and {ratio:.0%} of {people:,} synced people"
    )
    too_many = _over(changed, limits.max_updates, ratio, people)
    floor, share = limits.max_field_changes, limits.max_field_change_ratio
    wide = _wide(fields, limits, people)
    if wide:  # whatever the updates' number: a column renamed or shifted changes everyone
        said = ", ".join(f"{f} for {n:,}" for f, n in wide)
        message += (
            f", and one field changed for more than both {floor:,} and {share:.0%} of them, or "
            f"values passed on among more than {floor:,} ({said}): a column or attribute "
            "renamed, left out or shifted?"
        )
        too_many = True
    return _decision(
        "max_updates", message, too_many, changed, limits.allow_updates, "--allow-updates"
    )


def _wide(fields: Counter[str], limits: Limits, people: int) -> list[tuple[str, int]]:
    """The field changes past both the floor and the share: a column gone wrong. A value
    passed from one person to another is evidence alone: past the floor, whatever the
    share (rows shifted in a block of a large company's export)."""
    floor, share = limits.max_field_changes, limits.max_field_change_ratio
    return sorted(
        (f, n)
        for f, n in fields.items()
        if _over(n, floor, 0.0 if f.endswith(PASSED_ON) else share, people)
    )


def always_blocked(p: Plan, directory: Directory, snapshot: Snapshot, limits: Limits) -> list[str]:
    """What the guards block whatever the number, in words that stay the same while the
    situation does: access for people called departed by a read that cannot tell who is
    departed, or beside someone who leaves (a status column shifted), a field changed for
    many. Only an override lifts these, and a saved plan stands for one only if its review
    showed them (syncd.run.saved_plan): counts alone would carry a review to a situation
    the reviewer never saw."""
    found: list[str] = []
    back = reactivations(p, snapshot)
    if back.called_departed:
        blind = cannot_tell_departed(directory)
        if blind is not None:
            found.append(f"max_reactivations: access for people called departed, but {blind}")
    if back.former:
        shifted = shifted_status(p, directory, snapshot)
        if shifted is not None:
            found.append(
                f"max_reactivations: source id {shifted[0]}, a former employee (called "
                "departed, removed, locked or deleted on the platform), given access beside "
                f"{shifted[1]} who leaves: a status column shifted by a row?"
            )
    changed = field_changes(p, snapshot)
    found.extend(f"max_updates: {f}" for f, _ in _wide(changed, limits, snapshot.headcount))
    return found


def _removal_guard(
    p: Plan, snapshot: Snapshot, limits: Limits, override: bool, how: str
) -> GuardDecision:
    removals = p.removals
    # Accounts and nodes this plan adopts count as held: a state database rebuilt from a
    # loss holds only the records it took back, and counted against those few, every lock
    # of a leaver would stop at the guard, run after run (issue 32).
    synced = snapshot.headcount + len(snapshot.departments) + adoptions(p, snapshot)
    ratio = limits.max_removal_ratio
    too_many = removals > limits.max_removals or (synced > 0 and removals / synced > ratio)
    message = (
        f"{removals:,} removal{'' if removals == 1 else 's'} planned (locks, removals, department "
        f"deletions); the limits are {limits.max_removals:,} and {ratio:.0%} of {synced:,} synced "
        "records"
    )
    # Departments are few beside people: over all records, deleting most of them would pass.
    departments = len(snapshot.departments)
    deletes = p.counts()[(Kind.DEPARTMENT, Action.DELETE)]
    if deletes:
        message += (
            f", and {ratio:.0%} of {departments:,} synced departments ({deletes:,} to delete)"
        )
        too_many = too_many or (departments > 0 and deletes / departments > ratio)
    return GuardDecision(
        "max_removals",
        not too_many or override,
        message + (f": {how}" if too_many else ""),
        overridden=too_many and override,
    )


def _shrink_guard(
    directory: Directory, snapshot: Snapshot, limits: Limits, override: bool, how: str
) -> GuardDecision | None:
    if not directory.complete:
        return None
    # People already locked because they are missing are not expected back: counted, they
    # would make every later read look shrunken, with nothing left to remove. Nor are
    # those locked past their end date, whose rows HR drops afterwards.
    assert not snapshot.partial, "a complete read's snapshot holds everyone"
    missing = ended = 0
    for s in snapshot.employees.values():
        if s.locked:
            missing += s.lock_reason == "missing"
            ended += s.lock_reason == ENDED
    known = len(snapshot.employees) - missing - ended
    if known <= 0:
        return None
    read = len(directory.employees)
    empty = read == 0
    shrunk = read < known * (1 - limits.max_removal_ratio)
    message = f"the source returned {read:,} employees, {known:,} were synced before"
    if missing and not ended:
        message += f" (not counting {missing:,} locked as missing from earlier reads)"
    elif ended:
        message += (
            f" (not counting {missing + ended:,} locked as missing from earlier reads or "
            "past their end date)"
        )
    if empty or shrunk:
        message += ": the source looks empty or broken; " + how
    return GuardDecision(
        "source_shrink",
        not (empty or shrunk) or override,
        message,
        overridden=(empty or shrunk) and override,
    )
