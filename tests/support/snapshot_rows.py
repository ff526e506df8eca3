"""Rows of the state database's employees table, as syncd.snapshot's writers take them."""

from __future__ import annotations


def person(source_id: str, username: str, **kw: object) -> dict[str, object]:
    """syncd's record of one person it synced (source ids like ``E12``: employee id 12)."""
    return {
        "source_id": source_id,
        "username": username,
        "employee_id": int(source_id[1:]),
        "fields": "{}",
        "hash": f"h{source_id}",
        "adopted": False,
        "locked": False,
        "lock_reason": None,
        "locked_since": None,
        **kw,
    }
