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
guard; the record gets an account of its own once theirs is removed, or deleted on the
platform. A name corrected alone, or with a mobile added where there was none, is an
update as before. Where it is the same person (their name and mobile corrected at once),
``sync.same_person`` lists their key and the update is made (their account unlocked, if
the hold locked it).

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
from typing import Any

from syncd.model import Employee
from syncd.plan.actions import Action
from syncd.plan.rekeys import Evidence, evidence, named_there
from syncd.plan.values import Change, Note, PlatformView


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
    key) left a conflict, whose record shows another person than syncd wrote under its key
    (re-keys are weighed on their own: ``rekeys.weigh``), unless the platform's account
    read now (``view``: ``rekeys.named_there``) bears the record's name, or ``accepted``
    (``sync.same_person``) names it; and, for a ``complete`` read, a note for each
    accepted key that spared no update: left there, it would take a record showing
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


def hold_message(e: Employee, found: Evidence) -> str:
    """The conflict note of a held update."""
    return (
        f"{e.username}: the source's record under {e.id} shows another person than the one "
        f"syncd wrote for it ({found.describe()}): a key given to someone else? The person "
        "syncd wrote is a leaver (their account locked or removed as the leaver policy "
        "says) unless another row may be theirs (its note says so), and "
        f"{e.id} gets an account of its own once theirs is removed, or deleted on the "
        f"platform. The same person: add {e.id!r} to sync.same_person"
    )
