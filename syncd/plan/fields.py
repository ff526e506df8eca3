"""The fields syncd writes for a department or a person, and their content hashes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import fields
from operator import attrgetter
from typing import Any

from syncd.model import Department, Employee, Position, State


def _digest(values: tuple[Any, ...]) -> str:
    return hashlib.blake2b(repr(values).encode(), digest_size=12).hexdigest()


def department_fields(d: Department) -> dict[str, Any]:
    return {
        "name": d.name,
        "parent": d.parent_id,
        "sort_order": d.sort_order,
        "sn": d.sn,
        "en_name": d.en_name,
    }


def department_hash(d: Department) -> str:
    # The fields' values in their order: the very tuple hashed before, so stored hashes hold.
    return _digest(tuple(department_fields(d).values()))


_DEPARTMENT_FIELDS = ("name", "parent", "sort_order", "sn", "en_name")  # department_fields'


def written_department_hash(written: Mapping[str, Any]) -> str:
    """``department_hash`` of the department whose fields these are (``department_fields``):
    what recovery records for a node found on the platform as it was sent."""
    return _digest(tuple(written.get(name) for name in _DEPARTMENT_FIELDS))


def _extended(e: Employee, mapping: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    if not e.extra:  # as a rule: asked three times of everyone (plan, journal, body)
        return ()
    return tuple(sorted((mapping[k], v) for k, v in e.extra if k in mapping))


def employee_fields(e: Employee, extended_fields: Mapping[str, str]) -> dict[str, Any]:
    return {
        "username": e.username,
        "name": e.name,
        "en_name": e.en_name,
        "email": e.email,
        "mobile": e.mobile,
        "tel": e.tel,
        "sn": e.sn,
        "gender": e.gender,
        "birthday": e.birthday,
        "job_title": e.job_title,
        "sort_order": e.sort_order,
        "senior": e.senior,
        "positions": [
            {
                "department": p.department_id,
                "job_title": p.job_title,
                "primary": p.primary,
                "chief": p.chief,
            }
            for p in e.positions
        ],
        "extended": extended_values(e, extended_fields),
        # Only when there are some: the fields, and so the hashes, of everyone else stay
        # as they were before properties were synced.
        **({"properties": dict(e.properties)} if e.properties else {}),
        # Likewise: the tags syncd sets, as [group, tag] pairs (only those: see executor).
        **({"tags": [list(t) for t in e.tags]} if e.tags else {}),
    }


def fields_departments(kind: str, values: Mapping[str, Any] | None) -> set[str]:
    """The source ids of the departments fields name: positions, a department's parent."""
    found: set[str] = set()
    if not values:
        return found
    if kind == "department" and isinstance(values.get("parent"), str):
        found.add(values["parent"])
    for position in values.get("positions") or ():
        if isinstance(position, Mapping) and isinstance(position.get("department"), str):
            found.add(position["department"])
    return found


def extended_values(e: Employee, extended_fields: Mapping[str, str]) -> dict[str, str]:
    """Platform field -> value, for the employee's extra attributes that settings map."""
    return dict(_extended(e, extended_fields))


# repr() of a Position, as its dataclass makes it, without the dataclass's guard against
# recursion (a Position holds no containers): half the cost, for every person every run.
_SHOWN = [f.name for f in fields(Position) if f.repr]
_POSITION_TEXT = Position.__qualname__ + "(" + ", ".join(f"{n}=%r" for n in _SHOWN) + ")"
_position_values = attrgetter(*_SHOWN)


def _positions_text(positions: tuple[Position, ...]) -> str:
    """Exactly repr(positions)."""
    if len(positions) == 1:
        return "(" + _POSITION_TEXT % _position_values(positions[0]) + ",)"
    return "(" + ", ".join([_POSITION_TEXT % _position_values(p) for p in positions]) + ")"


def employee_hash(
    e: Employee,
    extended_fields: Mapping[str, str],
    written: dict[tuple[Position, ...], str] | None = None,
) -> str:
    """The hash of what syncd writes of the person. ``written``: positions written out
    already (see ``employee_hasher``), added to as it goes."""
    # The lock state is not hashed: it is kept, and changed, on its own. The text hashed
    # is exactly repr() of the values' tuple, as it always was (hashes stored in snapshots
    # must not change), written out as one f-string, once per person and run: no tuple
    # made, and each set of positions written once (the dataclass repr costs twice as
    # much).
    positions, memo = e.positions, {} if written is None else written
    shown = memo.get(positions)
    if shown is None:
        shown = memo[positions] = _positions_text(positions)
    extended = _extended(e, extended_fields) if e.extra and extended_fields else ()
    text = (
        f"({e.username!r}, {e.name!r}, {e.en_name!r}, {e.email!r}, {e.mobile!r}, {e.tel!r}, "
        f"{e.sn!r}, {e.gender!r}, {e.birthday!r}, {e.job_title!r}, {e.sort_order!r}, "
        f"{e.senior!r}, {shown}, {extended!r})"
    )
    if e.properties:  # appended only when there are some: other hashes stay as stored
        text += repr(e.properties)
    if e.tags:  # the same: people without tags keep their stored hashes
        text += "tags" + repr(e.tags)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def employee_hasher(extended_fields: Mapping[str, str]) -> Callable[[Employee], str]:
    """``employee_hash`` for a whole directory: each distinct set of positions (most
    people share theirs with colleagues) is written out once, not once per person."""
    written: dict[tuple[Position, ...], str] = {}

    def hashed(e: Employee) -> str:
        return employee_hash(e, extended_fields, written)

    return hashed


def employee_from_fields(
    source_id: str, written: Mapping[str, Any], extended_fields: Mapping[str, str], state: State
) -> Employee:
    """The person syncd last wrote, made again from the fields it recorded (the inverse of
    ``employee_fields``): the source's truth for someone an incremental read did not return."""
    extended = written.get("extended") or {}
    extra = tuple(
        (attr, extended[name]) for attr, name in extended_fields.items() if name in extended
    )
    return Employee(
        id=source_id,
        username=written["username"],
        name=written["name"],
        positions=tuple(
            Position(
                p.get("department"),
                p.get("job_title"),
                bool(p.get("primary")),
                bool(p.get("chief")),
            )
            for p in written.get("positions") or ()
        ),
        en_name=written.get("en_name"),
        email=written.get("email"),
        mobile=written.get("mobile"),
        tel=written.get("tel"),
        sn=written.get("sn"),
        gender=written.get("gender"),
        birthday=written.get("birthday"),
        job_title=written.get("job_title"),
        sort_order=written.get("sort_order"),
        senior=bool(written.get("senior")),
        state=state,
        extra=extra,
        properties=tuple(sorted((written.get("properties") or {}).items())),
        tags=written_tags(written),
    )


def written_hash(
    source_id: str, written: Mapping[str, Any], extended_fields: Mapping[str, str]
) -> str:
    """``employee_hash`` of the person whose fields these are (``employee_fields``): what
    recovery records for an account found on the platform as it was sent, so that the next
    plan, from an unchanged source, finds nothing to change."""
    person = employee_from_fields(source_id, written, extended_fields, State.ACTIVE)
    return employee_hash(person, extended_fields)


def written_tags(written: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """The tags recorded in fields syncd wrote (``employee_fields``), as sorted pairs."""
    found = (written or {}).get("tags") or ()
    return tuple(
        sorted((str(t[0]), str(t[1])) for t in found if isinstance(t, list | tuple) and len(t) == 2)
    )
