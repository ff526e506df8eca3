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
where both have one) is held: the account is neither rewritten nor given to anyone, a
conflict note names the key and what differs, and nobody is changed until the evidence
names the person. A record the source calls departed is still locked (its account is no
one's to keep active), its fields left as they were. A name corrected alone, or with a
mobile added where there was none, is an update as before. Where it is the same person
(their name and mobile corrected at once), ``sync.same_person`` lists their key and the
update is made; where it is another, deleting the old account on the platform frees the
key, and the record gets a new account at the next run.

Planning finds them after a first draft (it needs what syncd wrote for the people it
updates, which the caller loads then: ``syncd.plan.Planning``) and drafts once more with
them held: pure, as the rest of planning.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from syncd.model import Employee, State
from syncd.plan.actions import Action
from syncd.plan.rekeys import Evidence, evidence
from syncd.plan.values import Change, Note


@dataclass(frozen=True)
class Holds:
    """What the first draft's updates and what syncd wrote say must be held."""

    held: Mapping[str, Evidence]  # source id -> what shows another person
    withheld: tuple[Change, ...]  # their updates, as drafted (Plan.withheld)
    notes: tuple[Note, ...]  # sync.same_person entries that spared no update


def holds_of(
    upserts: Iterable[Change],
    written: Mapping[str, Mapping[str, Any] | None],
    accepted: Collection[str],
    complete: bool,
) -> Holds:
    """The updates whose record shows another person than syncd wrote under its key
    (re-keys are weighed on their own: ``rekeys.weigh``), unless ``accepted``
    (``sync.same_person``) names it; and, for a ``complete`` read, a note for each
    accepted key that spared no update: left there, it would take a record showing
    another person under that key later for the person syncd wrote."""
    held: dict[str, Evidence] = {}
    withheld: list[Change] = []
    spared: set[str] = set()
    for c in upserts:
        if c.action is not Action.UPDATE or c.previous_key is not None:
            continue
        assert isinstance(c.record, Employee)
        found = evidence(c.record, written.get(c.key))
        if not found.named_apart:
            continue
        if c.key in accepted:
            spared.add(c.key)
        else:
            held[c.key] = found
            withheld.append(c)
    needless = sorted(set(accepted) - spared) if complete else []
    return Holds(held, tuple(withheld), tuple(map(_needless, needless)))


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
    locked = (
        "locked, as the source says, and otherwise kept as it is"
        if e.state is State.DEPARTED
        else "kept as it is, neither rewritten nor locked"
    )
    return (
        f"{e.username}: the source's record under {e.id} shows another person than the one "
        f"syncd wrote for it ({found.describe()}): a key given to someone else? The account "
        f"is {locked}; nobody is changed until the evidence names the person. The same "
        f"person: add {e.id!r} to sync.same_person. Another: delete the old account on the "
        f"platform, and {e.id} gets a new one"
    )
