"""The sentence each change is shown with, and the field-level differences it names."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from syncd.model import Directory, Kind, RejectedRow
from syncd.plan.actions import Action
from syncd.plan.tags import tags_text
from syncd.spelling import looks_the_same, spelled

if TYPE_CHECKING:
    from syncd.plan.values import Change, Snapshot


def department_names(directory: Directory, snapshot: Snapshot, root: str) -> dict[str, str]:
    """Department source id -> name path from the root, as the source says now (those it
    no longer names: where syncd last put them)."""
    names = {d.source_id: d.name_path for d in snapshot.departments.values()}
    names.update((k, "/".join((root, *directory.path(k)))) for k in directory.departments)
    return names


def _short(key: str, value: Any, departments: Mapping[str, str]) -> str:
    if key == "positions" and isinstance(value, list):
        text = ", ".join(_position(p, departments) for p in value) or "none"
        return text if len(text) <= 120 else text[:117] + "..."
    if key == "parent" and isinstance(value, str):
        return departments.get(value, value)
    if key == "extended" and isinstance(value, dict):
        text = ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
    elif key == "tags" and isinstance(value, list | None):
        text = tags_text(value or ())
    elif isinstance(value, str):
        text = repr(value)
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _pair(key: str, before: Any, after: Any, departments: Mapping[str, str]) -> str:
    """``'José' → 'Jose'``; two spellings that look the same are written out, so that the
    change shows: ``'jose\\u0301' → 'josé'``, which would otherwise read 'josé' → 'josé'."""
    if isinstance(before, str) and isinstance(after, str) and looks_the_same(before, after):
        return f"'{spelled(before)}' → '{spelled(after)}'"
    return f"{_short(key, before, departments)} → {_short(key, after, departments)}"


def _position(p: Mapping[str, Any], departments: Mapping[str, str]) -> str:
    department = p.get("department")
    where = departments.get(department, department) if department else "root"
    notes = [str(p["job_title"])] if p.get("job_title") else []
    if p.get("chief"):
        notes.append("head")
    return f"{where} ({', '.join(notes)})" if notes else str(where)


def field_diff(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> dict[str, tuple[Any, Any]]:
    """Fields whose values differ: name -> (before, after)."""
    before = before or {}
    after = after or {}
    keys = list(after) + [k for k in before if k not in after]
    return {k: (before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k)}


def describe(c: Change) -> str:
    """One human sentence: what the change does (its reason is added by Change.message)."""
    noun = c.kind.value
    if c.action is Action.CREATE:
        return f"create {noun} {c.new_path or c.display}"
    if c.action is Action.ADOPT:
        return f"adopt {noun} {c.display} as it is on the platform"
    if c.action is Action.PHOTO:
        photo = c.after or {}
        return (
            f"set the photo of {noun} {c.display} "
            f"({photo.get('from')}, {str(photo.get('type')).upper()}, {photo.get('size'):,} bytes)"
        )
    if c.action in (Action.UPDATE, Action.MOVE):
        diff = field_diff(c.before, c.after)
        names = c.departments
        detail = ", ".join(f"{k} {_pair(k, b, a, names)}" for k, (b, a) in diff.items())
        detail = detail or "fields"
        where = f" to {c.new_path}" if c.action is Action.MOVE or c.new_path != c.display else ""
        verb = "move" if c.action is Action.MOVE else "update"
        return f"{verb} {noun} {c.display}{where if c.kind is Kind.DEPARTMENT else ''} ({detail})"
    return f"{c.action.value} {noun} {c.display}"


def unsure_rows(rows: Sequence[RejectedRow], shown: int = 3) -> str:
    """Where rows that keep a read from naming leavers are, and why: the first few."""
    told = "; ".join(f"{r.where}: {r.reason}" for r in rows[:shown])
    return told + (f"; and {len(rows) - shown} more" if len(rows) > shown else "")
