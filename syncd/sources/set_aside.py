"""Rows set aside: what a read's rejected rows say about the run.

A row set aside is kept as it is: nobody is changed by it. Three kinds must not pass for
success all the same. A row set aside for a status value nobody named (HR renamed the
departed value, a cell emptied) keeps a departed person's access: the run is partial
(exit 1), ``syncd status`` unhealthy and the failure notifications go out, every run while
it lasts (an unchanged source's run replays what its read found), until the settings name
the value. A full read whose set-aside rows are more than the rows it kept (a first run
that rejects 149 rows of 150) is partial too, with a line that says so. And a complete read
with rows that may hide other rows, or name nobody (a footer line, a row cut in two),
cannot say who left: nobody missing from it is made a leaver, so a
leaver keeps their access. When syncd holds people that run is partial too, every run
while it lasts, naming the first rows to fix. So is a read, complete or incremental, that
left a part of the source unread (an Active Directory domain: ``Directory.unread``): who
left or departed there is not seen.

The counts are kept in the run's summary (``source``), so a run that does not read an
unchanged source judges it as the run that read it did.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from syncd.model import Directory, Kind, RejectedRow
from syncd.plan import Note
from syncd.plan.messages import unsure_rows
from syncd.sources._text import shown

UNNAMED = "unnamed_statuses"  # summary["source"]: status value -> rows set aside for it
SET_ASIDE = "set_aside"  # summary["source"]: department and employee rows set aside
# summary["source"]: the rows that keep a complete read from naming leavers, and where
LEAVERS_UNKNOWN = "leavers_unknown"
NOTE_KIND = "set aside"


def counts(directory: Directory, *, people_held: bool = False) -> dict[str, Any]:
    """What the run's summary keeps of the rows set aside (nothing when none were);
    ``people_held``: whether syncd holds people a read could find gone."""
    rows = [r for r in directory.rejected if r.kind is not Kind.PHOTO]
    unsure = _unsure(directory) if people_held else ()
    found: dict[str, Any] = {SET_ASIDE: len(rows)} if rows else {}
    unnamed = Counter(_short(r.status) for r in rows if r.status is not None)
    if unnamed:
        found[UNNAMED] = dict(sorted(unnamed.items()))
    if unsure:  # a part of the source not read too (Directory.unread), with no row rejected
        first = _short(unsure_rows(unsure, shown=1), 200)
        unread = len(directory.unread)
        found[LEAVERS_UNKNOWN] = {"rows": len(unsure) - unread, "unread": unread, "first": first}
    return found


def _unsure(directory: Directory) -> tuple[RejectedRow, ...]:
    """What keeps a read from saying who left: on an incremental read, which looks for no
    leavers, a part not read still hides who left or departed there."""
    return directory.leavers_unknown_because() if directory.complete else directory.not_read()


def leavers_unknown(unsure: Mapping[str, Any]) -> str:
    """Why a run could not look for leavers (its summary's LEAVERS_UNKNOWN), and until when
    someone missing keeps their access: "1 rejected row may hide other rows or name nobody
    (employees.csv:7: …)", or "1 part of the source was not read (…)"."""
    n, unread = int(unsure.get("rows") or 0), int(unsure.get("unread") or 0)
    why = []
    if n:
        why.append(f"{n:,} rejected row{'' if n == 1 else 's'} may hide other rows or name nobody")
    if unread:
        were = "part of the source was" if unread == 1 else "parts of the source were"
        why.append(f"{unread:,} {were} not read")
    until = "the rows are fixed" if not unread else "the source is read whole"
    return (
        f"{' and '.join(why)} ({unsure.get('first')}): someone missing from the source keeps "
        f"their access until {until}"
    )


def _short(value: str, limit: int = 60) -> str:
    """A value kept in the summary: cut short when long (a cell may be megabytes)."""
    return value if len(value) <= limit else value[:limit] + "…"


def problems(source: Mapping[str, Any]) -> list[str]:
    """Why a run whose read found this (its summary's ``source``) is not a success."""
    told: list[str] = []
    unnamed: Mapping[str, int] = source.get(UNNAMED) or {}
    if unnamed:
        n = sum(unnamed.values())
        values = ", ".join(f"{shown(v)} ({k:,})" for v, k in unnamed.items())
        told.append(
            f"{n:,} row{'' if n == 1 else 's'} set aside for a status value nobody named "
            f"({values}): kept as they are, a departed person keeps their access, until the "
            "settings name the value in active_values or departed_values"
        )
    unsure: Mapping[str, Any] = source.get(LEAVERS_UNKNOWN) or {}
    if unsure:
        told.append(f"leavers not looked for: {leavers_unknown(unsure)}")
    set_aside = int(source.get(SET_ASIDE) or 0)
    kept = int(source.get("employees") or 0) + int(source.get("departments") or 0)
    # An incremental read holds only what changed: its share says nothing of the source.
    if set_aside > kept and source.get("read") != "incremental":
        told.append(
            f"most of the source was set aside: {set_aside:,} of {set_aside + kept:,} rows "
            "rejected (see the rejected rows); only what was kept was synced"
        )
    return told


def notes(source: Mapping[str, Any]) -> list[Note]:
    """The problems as the plan's notes, shown with it."""
    return [Note(NOTE_KIND, "", told) for told in problems(source)]
