"""Join keys: how a join reads and compares the key of a record, of a row set aside and of
the row beside a moved status, as plain data (syncd.plan.join).

A record's key is its field (an extra attribute's: ``extra.<name>``), matched as accounts
are and then normalized by its source's steps (``SourceRead.normalize``). A row a source
set aside names the joined id its id, username or identifiers give (what the row kept); so
does the row beside a status a moved line break may have made (``MovedStatus.names``).
Where that row's field at the edge is the key itself, the key as read may be one the break
made: a record read so is set aside as the person's whom syncd holds under the key with
the text moved back (``keys_moved``), not joined as someone new.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from operator import itemgetter
from typing import TYPE_CHECKING

from syncd.model import EXTRA, Employee, MovedStatus, RejectedRow, match_value
from syncd.plan.values import SyncedEmployee

if TYPE_CHECKING:
    from syncd.plan.join import SourceRead

STRIP: tuple[str, ...] = ("strip",)
_MATCHED = frozenset({"username", "email", "mobile", "sn"})


def key_value(e: Employee, key: str, normalize: Sequence[str] = STRIP) -> str | None:
    """The join key of one record, normalized (None: the record has none)."""
    extra = key.startswith(EXTRA)
    raw = dict(e.extra).get(key[len(EXTRA) :]) if extra else getattr(e, key)
    return compared(key, raw, normalize)


def compared(key: str, raw: object, normalize: Sequence[str]) -> str | None:
    """A raw key value as a join compares it: matched as accounts are, then normalized."""
    if raw is None:
        return None
    text = match_value(key, raw) if key in _MATCHED else str(raw)  # type: ignore[arg-type]
    return normalizer(normalize)(text) if text is not None else None


def normalizer(steps: Sequence[str]) -> Callable[[str], str | None]:
    """A key's text as compared after these steps (see SourceRead.normalize); None: empty."""
    strip, nfkc = "strip" in steps, "nfkc" in steps
    casefold, zeros = "casefold" in steps, "leading_zeros" in steps

    def normalized(text: str) -> str | None:
        if strip:
            text = text.strip()
        if nfkc:
            text = unicodedata.normalize("NFKC", text)
        if casefold:
            text = text.casefold()
        if zeros and text.isascii() and text.isdigit():
            text = text.lstrip("0") or "0"
        return text or None

    return normalized


def record_keys(records: list[Employee], key: str, normalize: tuple[str, ...]) -> list[str | None]:
    """key_value of each record, the plain text fields (id, username, sn, email) read by
    index in one comprehension."""
    index = Employee._fields.index(key) if key in Employee._fields else None
    if index is None or key == "mobile" or normalize != STRIP:
        return [key_value(e, key, normalize) for e in records]
    texts: list[str | None] = list(map(itemgetter(index), records))
    if key == "email":
        return [(v.strip().casefold() or None) if v else None for v in texts]
    return [(v.strip() or None) if v else None for v in texts]


def joined_key(row: RejectedRow, read: SourceRead) -> str | None:
    """The joined id a rejected person row names: its join key, read from what the row kept
    (its id, username, name, mobile, work number, e-mail or extra attribute) and compared
    as the source's keys are. None when the row does not keep that field (an unreadable
    cell): then the row names nobody and keeps whoever's username it gives as they are."""
    return _key_of(read, row.key, row.username, row.identifiers)


def named_key(note: MovedStatus, read: SourceRead) -> str | None:
    """The joined id of the row beside a status, by its cells (MovedStatus.names)."""
    return _key_of(read, note.beside, dict(note.names).get("username"), note.names)


def _key_of(
    read: SourceRead, key: str | None, username: str | None, named: Iterable[tuple[str, str]]
) -> str | None:
    """The joined id a row names by its id, username or identifiers, as its source's keys
    are compared."""
    if read.key == "id":
        raw = key
    elif read.key == "username":
        raw = username
    else:
        raw = dict(named).get(read.key)
    return compared(read.key, raw, read.normalize)


def keys_moved(read: SourceRead, synced: Mapping[str, SyncedEmployee]) -> SourceRead:
    """The read with each record set aside whose join key a moved line break may have
    changed (``key_moved``): its row is kept as the person's syncd holds under the key
    moved back, who is kept as they are, rather than an account made under a key the
    break made ("user1" + "inactive" read "user1in" + "active": a new person by key)."""
    d = read.directory
    notes = [
        n
        for n in d.moved_statuses.values()
        if n.beside in d.employees and key_moved(n, read, synced)
    ]
    if not notes:
        return read  # as a rule
    rows = [_key_moved_aside(read, d.employees[n.beside], n) for n in notes]
    left = {n.beside for n in notes}
    people = {i: e for i, e in d.employees.items() if i not in left}
    return replace(read, directory=replace(d, employees=people, rejected=(*d.rejected, *rows)))


def key_moved(
    note: MovedStatus, read: SourceRead, synced: Mapping[str, SyncedEmployee]
) -> str | None:
    """The join key of the row beside a status a moved line break may have made, where
    that row's field at the edge is the key: the key with the text moved back, when
    syncd holds someone under it and nobody under the key as read; else None."""
    if note.field != read.key or not synced:
        return None
    was = compared(read.key, note.was, read.normalize)
    now = compared(read.key, note.read, read.normalize)
    moved = was is not None and was != now and was in synced
    return was if moved and now not in synced else None


def _key_moved_aside(read: SourceRead, e: Employee, note: MovedStatus) -> RejectedRow:
    """The row of a record whose join key a moved line break may have made, set aside under
    the key with the text moved back (``keys_moved``)."""
    moved_back = ((read.key, note.was),)
    username, named = (note.was, ()) if read.key == "username" else (e.username, moved_back)
    return RejectedRow(
        f"person {e.id!r}",
        f"its join key ({read.key}) reads {note.read!r}, which syncd holds for nobody, "
        "beside a status a line break moved across the rows' edge may have made; with the "
        f"text moved back it is {note.was!r}, whose person syncd holds: the row is theirs, "
        "kept as they are until the rows read as syncd wrote them",
        key=e.id,
        username=username,
        identifiers=named,
    )
