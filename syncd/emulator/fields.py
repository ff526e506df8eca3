"""Reading fields out of JSON bodies the way the platform does: lenient on form, strict on sense."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from syncd.emulator.codes import bad_request

Body = Mapping[str, Any]


def is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def text(body: Body, key: str) -> str:
    """A text field; absent or null is empty, numbers are accepted as their digits."""
    value = body.get(key)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise bad_request(f"{key} must be a string")
    return str(value).strip()


def required_text(body: Body, key: str) -> str:
    value = text(body, key)
    if not value:
        raise bad_request(f"{key} is required")
    return value


def to_int(value: Any, key: str) -> int:
    """An integer given as a JSON number or as a string of digits."""
    if isinstance(value, bool):
        raise bad_request(f"{key} must be an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise bad_request(f"{key} must be an integer")


def to_bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if value is None:
        return False
    raise bad_request(f"{key} must be true or false")


def require_object(item: Any) -> Body:
    if not isinstance(item, Mapping):
        raise bad_request("item must be a JSON object")
    return item
