"""The sentence each change is shown with, and the field-level differences it names."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from syncd.model import Kind
from syncd.plan.actions import Action

if TYPE_CHECKING:
    from syncd.plan.values import Change


def _short(key: str, value: Any) -> str:
    if key == "positions" and isinstance(value, list):
        text = ", ".join(_position(p) for p in value) or "none"
    elif key == "extended" and isinstance(value, dict):
        text = ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
    elif isinstance(value, str):
        text = repr(value)
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _position(p: Mapping[str, Any]) -> str:
    where = str(p.get("department") or "root")
    return f"{where} ({p['job_title']})" if p.get("job_title") else where


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
    if c.action in (Action.UPDATE, Action.MOVE):
        diff = field_diff(c.before, c.after)
        detail = ", ".join(f"{k} {_short(k, b)} → {_short(k, a)}" for k, (b, a) in diff.items())
        detail = detail or "fields"
        where = f" to {c.new_path}" if c.action is Action.MOVE or c.new_path != c.display else ""
        verb = "move" if c.action is Action.MOVE else "update"
        return f"{verb} {noun} {c.display}{where if c.kind is Kind.DEPARTMENT else ''} ({detail})"
    return f"{c.action.value} {noun} {c.display}"
