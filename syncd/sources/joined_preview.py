"""``syncd check --preview`` with several sources: each field, and the source that gave it.

The sources are read and joined as a sync joins them; the people asked for (the first N
joined, or usernames) are then read again from each source with a trace, and each of
their fields is shown as the source that decided it reads it (``hr: column name``).
"""

from __future__ import annotations

from syncd.config import Settings
from syncd.model import Directory
from syncd.plan.join import Joined
from syncd.sources import read_joined
from syncd.sources.person_preview import PLATFORM_FIELDS, FieldPreview, PersonPreview, Preview

# The platform's field -> the joined field whose source is shown (extra and properties
# rows are named "extra ..." and "properties ...").
_DECIDED_BY = {platform: name for name, platform in PLATFORM_FIELDS.items()} | {
    "positions.org": "positions",
    "locked": "state",
}


def joined_preview(settings: Settings, wanted: int | list[str]) -> list[PersonPreview]:
    joined = read_joined(settings, explain=True)
    directory = joined.directory
    keys = _wanted(joined, wanted)
    tracers = {}
    for source in settings.sources:
        members = (joined.members.get(k, {}) for k in keys)
        own_ids = frozenset(m[source.name] for m in members if source.name in m)
        tracers[source.name] = Preview(settings, [], source=source, ids=own_ids)
    read_joined(settings, traces=tracers)  # read again, each person asked for traced
    traced = {
        name: {p._employee.id: p for p in tracer.people if p._employee is not None}
        for name, tracer in tracers.items()
    }
    out = [_person(k, joined, traced) for k in keys]
    out += _rejected(directory, wanted)
    return out


def _wanted(joined: Joined, wanted: int | list[str]) -> list[str]:
    employees = joined.directory.employees
    if isinstance(wanted, int):
        return list(employees)[:wanted]
    names = {w.casefold() for w in wanted}
    return [k for k, e in employees.items() if e.username.casefold() in names]


def _person(key: str, joined: Joined, traced: dict[str, dict[str, PersonPreview]]) -> PersonPreview:
    e = joined.directory.employees[key]
    members = joined.members[key]
    origins = joined.origins.get(key, {})
    wheres = []
    rows_of: dict[str, dict[str, FieldPreview]] = {}
    for source, own_id in members.items():
        found = traced.get(source, {}).get(own_id)
        if found is None:
            continue
        wheres.append(f"{source}: {found.where}")
        rows_of[source] = {row.field: row for row in found.fields}
    person = PersonPreview(" + ".join(wheres) or key, e.username, "synced", None, _employee=e)
    directory = joined.directory
    primary = next((p for p in e.positions if p.primary), None)
    path = directory.path(primary.department_id) if primary and primary.department_id else ()
    values: dict[str, str | None] = {
        "extension_id": key,
        "positions.org": "/".join(path) or "(the root organization)",
        "locked": "yes" if e.state == "departed" else "no",
    }
    shown: list[FieldPreview] = [FieldPreview("extension_id", "the join key", {}, key)]
    platform_fields = list(dict.fromkeys(r for rows in rows_of.values() for r in rows))
    for platform in platform_fields:
        if platform == "extension_id":
            continue
        decided = _DECIDED_BY.get(platform) or platform.split(" ", 1)[0]
        decider = origins.get(decided)
        row = rows_of.get(decider or "", {}).get(platform)
        if decider is None or row is None:
            shown.append(FieldPreview(platform, "no source gives it", {}, None))
            continue
        value = values.get(platform, _value(e, decided, row))
        shown.append(FieldPreview(platform, f"{decider}: {row.source}", row.inputs, value))
    person.fields = shown
    return person


def _value(e: object, decided: str, row: FieldPreview) -> str | None:
    value = getattr(e, decided, None)
    if decided in ("extra", "properties"):
        return row.value
    if value is None or value == () or value == "":
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _rejected(directory: Directory, wanted: int | list[str]) -> list[PersonPreview]:
    """People the join set aside (waiting for a source, a duplicate key), when named."""
    if isinstance(wanted, int):
        return []
    names = {w.casefold() for w in wanted}
    return [
        PersonPreview(row.where, row.username, "rejected", row.reason)
        for row in directory.rejected
        if row.username and row.username.casefold() in names
    ]
