"""Records as the platform's import endpoints take them (POST import-orgs, import-employees),
for the emulator's and the platform client's tests."""

from __future__ import annotations

from typing import Any


def dept(name: str, parent: str = "Acme", **fields: Any) -> dict[str, Any]:
    """A department under ``parent`` (a node path), with any more fields."""
    return {"name": name, "type": "DEPT", "parent_path": parent, **fields}


def person(username: str, org_path: str = "Acme", **fields: Any) -> dict[str, Any]:
    """An employee named after ``username``, placed (primary) at ``org_path``."""
    return {
        "name": username.title(),
        "username": username,
        "positions": [{"org_path": org_path}],
        **fields,
    }
