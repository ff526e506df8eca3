"""Re-keys: whether a new source id holding a known username is the same person under a new
key, or someone else the username was given to (a recycled username).

The platform's accounts are keyed by username, so taking a re-key hands the old account,
with its history, to the new record. It is taken only where the records show the same
person and nothing is given away:

- the account is **active** (syncd holds it unlocked and the platform has not locked it),
  or it is locked and the new record is departed too (it stays locked: a departed
  person's id changed, nobody gets in);
- the **name** agrees (compared in Unicode NFC, in any letter case and spacing), and so
  does a personal identifier, the **mobile** or the **work number** (``sn``), while
  neither of those differs where both records have one. The e-mail is not evidence of
  identity: it is commonly made from the username, so a recycled username brings the same
  address with it.

Otherwise it is not a re-key, and the new record is not created while the old account
exists (the platform would hand it over: its import matches usernames). A locked account,
or an active one whose records show different people (the name differs and no mobile or
work number agrees), stays with its old record, which is a leaver like anyone missing
from the source: once the leaver policy removes it (or someone deletes it on the
platform) the username is free, and the new record gets a new account. Where the
records neither show the same person nor different people (the name agrees but nothing
else can be compared, or the name agrees and a mobile differs), nothing is done to
either until the source tells them apart.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from syncd.model import IDENTIFYING, Employee, Kind, RejectedRow, State, match_value
from syncd.plan.values import (
    Note,
    PlatformEmployee,
    PlatformPerson,
    PlatformView,
    Snapshot,
    SyncedEmployee,
)

IDENTIFIERS = ("mobile", "sn")  # personal: a recycled username does not bring them along
COMPARED = IDENTIFYING
MISSING = "is missing from the source"  # how a note says a holder is not in the read


class Verdict(StrEnum):
    REKEY = "rekey"  # the same person under a new source id: the account is theirs
    LEAVER = "leaver"  # not the same person: the old record is a leaver; the new one waits
    UNDECIDED = "undecided"  # cannot tell: both records wait for the source to tell them apart


def _name(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(unicodedata.normalize("NFC", value).casefold().split())
    return text or None


def _value(name: str, value: Any) -> str | None:
    if name == "name":
        return _name(value)
    if not isinstance(value, str):
        return None
    return match_value("mobile" if name == "mobile" else "sn", value)


@dataclass(frozen=True, slots=True)
class Evidence:
    """Which identifying fields two records of the same username agree and differ on (only
    fields both records have are compared)."""

    agree: tuple[str, ...]
    differ: tuple[str, ...]

    @property
    def identified(self) -> bool:
        """A personal identifier agrees, and none differs."""
        agreed = any(f in self.agree for f in IDENTIFIERS)
        return agreed and not any(f in self.differ for f in IDENTIFIERS)

    @property
    def same_person(self) -> bool:
        return "name" in self.agree and self.identified

    @property
    def different_people(self) -> bool:
        return "name" in self.differ and not any(f in self.agree for f in IDENTIFIERS)

    @property
    def not_the_one_written(self) -> bool:
        """Another person than the one syncd wrote: the name differs, and a personal
        identifier differs too or none agrees (a work number that is a join key agrees by
        construction, so it alone does not make them the same)."""
        return "name" in self.differ and (
            self.different_people or any(f in self.differ for f in IDENTIFIERS)
        )

    @property
    def named_apart(self) -> bool:
        """The name differs and so does a mobile or work number, where both records have
        one: two people, by what the records hold (a name corrected alone is not)."""
        return "name" in self.differ and any(f in self.differ for f in IDENTIFIERS)

    def describe(self) -> str:
        parts = []
        if self.agree:
            parts.append(_words(self.agree) + (" agrees" if len(self.agree) == 1 else " agree"))
        if self.differ:
            parts.append(_words(self.differ) + (" differs" if len(self.differ) == 1 else " differ"))
        return "; ".join(parts) or "nothing to compare"


def _words(fields: tuple[str, ...]) -> str:
    named = {"name": "the name", "mobile": "the mobile", "sn": "the work number"}
    words = [named[f] for f in fields]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def evidence(e: Employee, before: Mapping[str, Any] | None) -> Evidence:
    """Compare the new record with the fields syncd last wrote for the old one."""
    return compared({name: getattr(e, name) for name in COMPARED}, before)


def named_there(e: Employee, username: str, view: PlatformView) -> bool:
    """Whether the platform's account under ``username``, as read now (changed there since
    the last run, or followed by a state database put back), bears the record's name:
    evidence that beats what syncd remembers writing (a state database put back keeps an
    older holder's fields)."""
    found = view.changed.get(username)
    fields = found.fields if found is not None else view.followed.get(username, {})
    there = _name(fields.get("name"))
    return there is not None and there == _name(e.name)


def compared(new_fields: Mapping[str, Any], before: Mapping[str, Any] | None) -> Evidence:
    """Compare a record's identifying fields with the fields syncd last wrote for another."""
    agree: list[str] = []
    differ: list[str] = []
    for name in COMPARED:
        new = _value(name, new_fields.get(name))
        old = _value(name, (before or {}).get(name))
        if new is None or old is None:
            continue
        (agree if new == old else differ).append(name)
    return Evidence(tuple(agree), tuple(differ))


def judge(e: Employee, before: Mapping[str, Any] | None, locked: bool) -> tuple[Verdict, Evidence]:
    """Whether the record ``e`` takes over the account whose old record's fields are
    ``before`` (``locked``: syncd holds it locked, or the platform does)."""
    found = evidence(e, before)
    if locked:
        if e.state is State.DEPARTED and found.same_person:
            return Verdict.REKEY, found
        return Verdict.LEAVER, found
    if found.same_person:
        return Verdict.REKEY, found
    if found.different_people:
        return Verdict.LEAVER, found
    return Verdict.UNDECIDED, found


def conflict_message(
    e: Employee, old_key: str, verdict: Verdict, found: Evidence, locked: bool
) -> str:
    """The conflict note for a username a record cannot take over."""
    held = f"username {e.username} belongs to the account of source id {old_key}"
    if locked:
        return (
            f"{held}, which is locked (departed or gone from the source); a locked account is "
            f"never given to another record, so source id {e.id} is neither re-keyed to it nor "
            f"created ({found.describe()}). The old account stays locked under the leaver "
            "policy; once it is removed, or deleted on the platform, the username is free and "
            f"{e.id} gets a new account"
        )
    if verdict is Verdict.LEAVER:
        return (
            f"{held}; source id {e.id} is not the same person ({found.describe()}), so it is not "
            f"re-keyed: {old_key} is missing from the source and a leaver; once its account is "
            f"removed, or deleted on the platform, {e.id} gets a new account"
        )
    return (
        f"{held}; whether source id {e.id} is the same person under a new id cannot be told "
        f"({found.describe()}; a re-key needs the name and a mobile or work number to agree): "
        "neither is changed until the source tells them apart, or the old account is deleted "
        "on the platform"
    )


def weigh(
    e: Employee, holder: SyncedEmployee, snapshot: Snapshot, view: PlatformView
) -> tuple[bool, Note | None, bool]:
    """Whether the new record ``e`` takes over the account of ``holder``, whose record a
    complete read no longer has; the conflict note if not; and whether the holder is then
    let go to the leaver rules (else it is kept as it is, the username held for it)."""
    if holder.username in view.deleted:
        message = (
            f"username {e.username} belonged to the account of source id {holder.source_id}, "
            f"deleted on the platform: that record is let go of now, and source id {e.id} "
            "gets a new account at the next run"
        )
        return False, Note("conflict", e.id, message), True
    if (marked := marked_for(e, holder, view)) is not None:
        message = (
            f"username {e.username} was synced for source id {holder.source_id}, but the "
            f"platform's account under it (id {marked.id}) is another and carries source id "
            f"{e.id}: it is {e.id}'s, adopted for it; {holder.source_id} is let go of"
        )
        return False, Note("conflict", e.id, message), True
    found = view.changed.get(holder.username)
    locked = holder.locked or (found is not None and found.locked)
    verdict, seen = judge(e, snapshot.written(Kind.EMPLOYEE, holder.source_id), locked)
    if verdict is Verdict.REKEY:
        return True, None, False
    message = conflict_message(e, holder.source_id, verdict, seen, locked)
    return False, Note("conflict", e.id, message), verdict is Verdict.LEAVER


def marked_for(e: Employee, holder: SyncedEmployee, view: PlatformView) -> PlatformEmployee | None:
    """The platform's account under the username syncd holds for ``holder`` when, read
    because it changed there, it is another account than syncd wrote and carries ``e``'s
    source id (a state database put back from before it was made for ``e``): ``e``'s by
    its own evidence, adopted in the run that lets ``holder`` go (weigh), so a departed
    ``e`` is locked then, not a run later. None otherwise (deleted there included)."""
    found = view.changed.get(holder.username)
    if found is None or holder.username in view.deleted or found.extension_id != e.id:
        return None
    return found if holder.another_account(found.id, e.id) else None


def weigh_rejected(
    holder: SyncedEmployee,
    rows: tuple[RejectedRow, ...],
    snapshot: Snapshot,
    absent: str = MISSING,
) -> tuple[bool, Note | None]:
    """Whether rejected rows that name the username of ``holder`` (missing from a complete
    read, or ``absent`` as said otherwise: a departed row under its id gives another
    username) keep its record as it is; and the note that says why, when a row has
    another id.

    A rejected row may be the holder's own row under a new id, so it keeps the record as it
    is (nobody is locked for a row that could not be read) unless the row's readable fields
    show different people by the re-key rule (the name differs and no mobile or work number
    agrees): then the holder is a leaver like anyone missing, and the row waits to be fixed
    (a new hire given a leaver's username in a spelling syncd refuses never keeps the
    leaver's access). A row with the holder's own id keeps it; so does a row without an id
    (it may be theirs), with a note: the holder may have left, and keeps their access until
    the row is fixed."""
    if any(row.key == holder.source_id for row in rows):
        return True, None
    unnamed = next((row for row in rows if row.key is None), None)
    if unnamed is not None:
        gives = (
            "may hide other rows and its text gives its username"
            if unnamed.may_hide_rows and not unnamed.username
            else "gives its username with no id to say whose row it is"
        )
        message = (
            f"source id {holder.source_id} ({holder.username}) {absent}, "
            f"and rejected row {unnamed.where} {gives}: it may be theirs, so "
            f"{holder.source_id} is kept as it is until the row is fixed"
        )
        return True, Note("conflict", holder.source_id, message)
    before = snapshot.written(Kind.EMPLOYEE, holder.source_id)
    for row in rows:
        seen = compared(dict(row.identifiers), before)
        if not seen.different_people:
            message = (
                f"source id {holder.source_id} ({holder.username}) {absent}, "
                f"and rejected row {row.where} gives its username to source id {row.key}; "
                f"whether that is the same person under a new id cannot be told "
                f"({seen.describe()}), so {holder.source_id} is kept as it is until the row "
                "is fixed"
            )
            return True, Note("conflict", holder.source_id, message)
    row = rows[0]
    message = (
        f"source id {holder.source_id} ({holder.username}) {absent}; "
        f"rejected row {row.where} (source id {row.key}) names its username but is not the "
        f"same person ({compared(dict(row.identifiers), before).describe()}), so "
        f"{holder.source_id} is a leaver"
    )
    return False, Note("leavers", holder.source_id, message)


def claiming_row(
    holder: SyncedEmployee, rows: tuple[Employee, ...], snapshot: Snapshot
) -> tuple[Employee, Evidence] | None:
    """Of active records under other source ids that give the username of ``holder``, the
    first that may be the holder's own row, with what shows it; None if each shows another
    person.

    A row under another record's id reads well: a typo in the id, or a line break moved so
    that the end of one row's last field is read as the start of the next row's id ("3"
    then "6" read as "36"). Its name, mobile and work number are then the holder's. Unless
    they show different people by the re-key rule (the name differs and no mobile or work
    number agrees), the holder is locked or removed for nothing the source says of another
    id (missing from the read, or a departed row under their id with another username):
    nobody is changed until the source tells them apart. A row that shows another person
    is a username handed on: the holder is a leaver, as anyone missing."""
    before = snapshot.written(Kind.EMPLOYEE, holder.source_id)
    for e in rows:
        seen = evidence(e, before)
        if not seen.different_people:
            return e, seen
    return None


def claimed_missing(holder: SyncedEmployee, row: Employee, seen: Evidence) -> Note:
    """The note for a missing holder kept as it is for a row that may be theirs."""
    return Note(
        "conflict",
        holder.source_id,
        f"source id {holder.source_id} ({holder.username}) is missing from the source, and the "
        f"active record of source id {row.id} now gives its username ({seen.describe()}): it "
        f"may be {holder.source_id}'s row under a wrong id, so {holder.source_id} is kept as it "
        "is until the source tells them apart",
    )


def claimed_while_read(
    e: Employee, holder: SyncedEmployee, row: Employee, seen: Evidence, *, departed: bool
) -> Note:
    """The note for a holder whose id is read (claimed_missing's, for one that is not): a
    row under it, with another username, leaves the holder's account as it is because an
    active row under another id may be its person's:
    a departed row does not lock it, an active one (``username_change =
    "remove_and_create"``) neither removes nor replaces it."""
    state = "is departed and gives" if departed else "gives"
    kept = (
        "is not locked, and whoever the departed row is keeps their access,"
        if departed
        else "is neither removed nor replaced"
    )
    return Note(
        "conflict",
        e.id,
        f"the row of source id {e.id} {state} the username {e.username}, not "
        f"{holder.username}, and the active record of source id {row.id} gives {holder.username} "
        f"({seen.describe()}): the rows may be under each other's ids, so the account "
        f"{holder.username} {kept} until the source tells them apart",
    )


def adoption_conflict(e: Employee, account: PlatformPerson, key: str) -> Note | None:
    """A platform account matched by ``key`` (its username, or ``sync.match_by``'s value)
    is adopted only where nothing else it holds shows another person: its name, mobile and
    work number, where both have one, agree with the record's; the key itself proves
    nothing (it matched by construction). A column shifted by a row in a first run's export
    matches each person to the next one's account. An unlocked account that carries the
    record's own source id (syncd's mark: a state database restored from before syncd made
    it) is the record's unless it shows another person (``Evidence.not_the_one_written``: a
    source id HR gave a new hire): its mobile or work number may have changed since. A
    locked account needs more: a mobile or work number that agrees (it is unlocked now, or
    when the record is active again). None if it may be adopted; else the conflict note."""
    found = compared(_held(account, key), _held(e, key))
    marked = account.extension_id == e.id and not account.locked
    shows_another = found.not_the_one_written if marked else bool(found.differ)
    if shows_another:
        message = (
            f"{e.username}: the platform's account {account.username} (matched by {key}) "
            f"shows another person ({found.describe()}): neither adopted nor created; nobody "
            "is changed until the evidence names the person (correct the value that differs, "
            "on the platform or in the source)"
        )
        return Note("conflict", e.id, message)
    if not account.locked or any(f in found.agree for f in IDENTIFIERS):
        return None
    message = (
        f"the platform's account {account.username} is locked, and nothing shows it is "
        f"{e.id}'s ({found.describe()}; a mobile or work number other than the key matched "
        "on must agree): a locked account is never given to another person, so it is "
        "neither adopted nor created; unlock it on the platform if it is theirs, or delete it"
    )
    return Note("conflict", e.id, message)


def _held(record: Employee | PlatformPerson, key: str) -> dict[str, Any]:
    """A record's identifying fields, the key matched on left out."""
    return {name: getattr(record, name) for name in COMPARED if name != key}
