"""Holds: an update that would hand an account to another person is not made.

A record under a key syncd holds is, as a rule, the person syncd wrote under it: an update
brings their account in step, whatever changed. That is true of a key never given to
someone else (an HR number, a directory's object id), and not of the e-mail, the username
or a mobile, which a join may be keyed on, nor of an HR number a company hands on: given
to a new hire before syncd saw its holder leave (syncd stopped for a week, a state database
put back), the update would rename the holder's account, still active, for the new hire,
who would sign in to it with its history.

So an update whose record shows another person than the one syncd last wrote under its key
(``rekeys.Evidence.named_apart``: the name differs, and so does a mobile or a work number
where both have one) is held: the account is neither rewritten nor given to anyone, and a
conflict note names the key and what differs. The person syncd wrote is gone from the
source as surely as if their key were missing, so they are a leaver (locked, then removed,
as the leaver policy says: a re-key's rule, ``syncd.plan.rekeys``), counted at the removal
guard, but only where a missing person would be one: not while the read cannot say who is
missing (rows that may hide theirs, a part of the source not read: ``may_be_hidden``).
The record gets an account of its own once theirs is removed, or deleted on the
platform. The same holds under either ``username_change``: a record showing another
person under a new username is no rename. A name corrected alone, or with a mobile
added where there was none, is an update as before. Where it is the same person (their
name and mobile corrected at once), ``sync.same_person`` lists their key and the update
is made (their account unlocked, if the hold locked it).

Memory is not evidence on its own: where the platform's account, read because it changed
there since the last run or followed by a state database put back from before it was made
again, bears the record's name (``rekeys.named_there``), the account
already shows the record's person and what syncd remembers writing is behind it (a state
database put back from before the key was handed on, then followed to the new holder's
account): an update as any other, nobody held, nobody a leaver.

Planning finds them after a first draft (it needs what syncd wrote for the people it
updates, which the caller loads then: ``syncd.plan.Planning``) and drafts once more with
them held: pure, as the rest of planning.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from syncd.model import Employee, Kind, State
from syncd.plan.actions import Action
from syncd.plan.messages import unsure_rows
from syncd.plan.rekeys import Evidence, Verdict, evidence, judge, named_there
from syncd.plan.values import Change, Note, PlatformView, SyncedEmployee
from syncd.spelling import look_alike

if TYPE_CHECKING:
    from syncd.plan.employees import EmployeePlanner

# Why the person syncd wrote under a key is a leaver though the key is read.
ANOTHER_PERSON = "their source id now names another person"
SHOWN_ANOTHER = "has a row under its id showing another person"  # as a note says it


@dataclass(frozen=True)
class Holds:
    """What the first draft's updates and what syncd wrote say must be held."""

    held: Mapping[str, Evidence]  # source id -> what shows another person
    written: Mapping[str, Mapping[str, Any] | None]  # what syncd wrote under the held ids
    withheld: tuple[Change, ...]  # their updates, as drafted (Plan.withheld)
    notes: tuple[Note, ...]  # sync.same_person entries that spared no update


def holds_of(
    upserts: Iterable[Change],
    username_changes: Iterable[tuple[Employee, str]],
    written: Mapping[str, Mapping[str, Any] | None],
    view: PlatformView,
    accepted: Collection[str],
    complete: bool,
) -> Holds:
    """The updates, and the ``username_changes`` (record, username of the account under its
    key: a conflict, or a replacement), whose record shows another person than syncd wrote
    under its key (re-keys are weighed on their own: ``rekeys.weigh``), unless the
    platform's account read now (``view``: ``rekeys.named_there``) bears the record's name,
    or ``accepted`` (``sync.same_person``) names it; and, for a ``complete`` read, a note for
    each accepted key that spared no update: left there, it would take a record showing
    another person under that key later for the person syncd wrote."""
    held: dict[str, Evidence] = {}
    withheld: list[Change] = []
    spared: set[str] = set()
    updates = {c.key: c for c in upserts if c.action is Action.UPDATE and c.previous_key is None}
    weighed = [(_record(c), c.display) for c in updates.values()]
    for record, username in (*weighed, *username_changes):
        found = evidence(record, written.get(record.id))
        if not found.named_apart or named_there(record, username, view):
            continue
        if record.id in accepted:
            spared.add(record.id)
            continue
        held[record.id] = found
        if record.id in updates:
            withheld.append(updates[record.id])
    needless = sorted(set(accepted) - spared) if complete else []
    ours = {k: written.get(k) for k in held}
    return Holds(held, ours, tuple(withheld), tuple(map(_needless, needless)))


def _record(c: Change) -> Employee:
    assert isinstance(c.record, Employee)
    return c.record


def _needless(key: str) -> Note:
    return Note(
        "skipped",
        key,
        f"sync.same_person lists {key!r}, and no update under it needs it (the record "
        "shows the person syncd wrote, or the source has none): take it out, or a record "
        "under that key showing another person later is taken for them",
    )


def hold(planner: EmployeePlanner, e: Employee, synced: SyncedEmployee) -> None:
    """An update whose record shows another person: not made; the person syncd wrote is a
    leaver, as if missing from the source, unless another record holds their username and
    may be them under a new key (a re-key's verdict other than a leaver's:
    syncd.plan.rekeys), whose own conflict says why, or a rejected row does
    (``EmployeePlanner.rejected_holds``), or rows the read rejected may hide theirs."""
    planner.weighed.add(synced.username)
    planner.untouched.add(e.id)
    planner.notes.append(Note("conflict", e.id, _hold_message(e, planner.held[e.id])))
    written = planner.held_written[e.id]
    claims = planner.source_holders().get(look_alike(synced.username), ())
    if any(
        judge(other, written, synced.locked)[0] is not Verdict.LEAVER
        for other in claims
        if other.id != e.id
    ) or planner.rejected_holds(synced, SHOWN_ANOTHER):
        return
    if not may_be_hidden(planner, e, synced):
        planner.plan_leaver(synced, ANOTHER_PERSON)


def someone_else_back(planner: EmployeePlanner, e: Employee, synced: SyncedEmployee) -> bool:
    """Whether a person syncd holds locked is read active again with a record that shows
    another person than the one syncd wrote (the name differs, and a mobile or work number
    differs or none agrees: syncd.plan.rekeys; a join key that is the work number agrees by
    construction): a recycled source id, an HR number given to a new hire. Their account is
    neither unlocked nor rewritten, and the person syncd wrote goes on as a leaver (removed
    when the leaver policy says), unless rows the read rejected may hide theirs; a conflict
    note says why. ``sync.same_person`` names those who are the same person after all, and
    the account read now bearing the record's name (``rekeys.named_there``) beats what
    syncd remembers writing."""
    if e.state is not State.ACTIVE or e.id in planner.policy.same_person:
        return False
    seen = evidence(e, planner.snapshot.written(Kind.EMPLOYEE, synced.source_id))
    if not seen.not_the_one_written or named_there(e, synced.username, planner.view):
        return False
    planner.untouched.add(e.id)
    planner.notes.append(
        Note(
            "conflict",
            e.id,
            f"{e.username}: source id {e.id} is active in the source again, but its record "
            f"shows another person than the one syncd wrote for it ({seen.describe()}): "
            "a source id given to someone else? Their account stays locked and unchanged, "
            "a leaver's under the leaver policy; the record gets an account of its own once "
            "that one is removed, or deleted on the platform",
        )
    )
    if not may_be_hidden(planner, e, synced):
        planner.plan_leaver(synced, ANOTHER_PERSON)
    return True


def may_be_hidden(planner: EmployeePlanner, e: Employee, synced: SyncedEmployee) -> bool:
    """Whether the read cannot say who is missing (``Directory.leavers_known``: rows it
    rejected may hide anyone's, a part of the source was not read), so that the person
    syncd wrote under ``e``'s source id, which shows another person now, is no leaver:
    their row may be among those hidden. Their account then stays as it is, and a note
    says why."""
    hidden = planner.directory.leavers_unknown_because()
    if hidden:
        planner.notes.append(
            Note(
                "skipped",
                e.id,
                f"{synced.username}: not treated as a leaver though source id {e.id} shows "
                "another person: rejected rows, or a part of the source not read, may hold "
                f"their row ({unsure_rows(hidden)}), and nobody absent from this read is "
                "treated as gone; their account stays as it is",
            )
        )
    return bool(hidden)


def _hold_message(e: Employee, found: Evidence) -> str:
    """The conflict note of a held update."""
    return (
        f"{e.username}: the source's record under {e.id} shows another person than the one "
        f"syncd wrote for it ({found.describe()}): a key given to someone else? The person "
        "syncd wrote is a leaver (their account locked or removed as the leaver policy "
        "says) unless another row may be theirs (its note says so), and "
        f"{e.id} gets an account of its own once theirs is removed, or deleted on the "
        f"platform. The same person: add {e.id!r} to sync.same_person"
    )
