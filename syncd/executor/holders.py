"""Who holds a value the platform refused (a mobile, an e-mail address another account has).

The platform's refusal says only "mobile already used by another employee". The
employee list searches by id or username only, so the holder is found in the users list
(D3: every user, with ``phone`` and ``email``), gone over once for all the values a run had
refused, and confirmed by the employee record (a removed employee's user may still carry
the phone it had). Asked only when a value is refused for the first time: a known problem
keeps its holder.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from syncd.plan.unique_values import UNIQUE, value_key
from syncd.platform import PlatformClient

# The platform's per-item refusal of a value another account holds, e.g. "mobile already
# used by another employee" (the emulator's text; see docs/platform.md).
_REFUSED = re.compile(r"\b(mobile|email|e-mail|phone)\b.*\balready\b", re.IGNORECASE)
USER_FIELDS = {"mobile": "phone", "email": "email"}  # the users list's name for each
PAGE = 2000


# The platform's per-item refusal of a value's form, e.g. "invalid mobile: 12ab" (the
# emulator's text; see docs/platform.md).
_MALFORMED = re.compile(r"\b(?:invalid|malformed)\b\W*(mobile|email|e-mail|phone)\b", re.IGNORECASE)


def refused_field(error: str | None) -> str | None:
    """The unique field an import failure says another account holds, if it says so."""
    return _field(_REFUSED.search(error or ""))


def malformed_field(error: str | None) -> str | None:
    """The field (mobile, email) an import failure refuses for its form, if it says so."""
    return _field(_MALFORMED.search(error or ""))


def _field(found: re.Match[str] | None) -> str | None:
    if found is None:
        return None
    word = found.group(1).lower()
    return "mobile" if word in ("mobile", "phone") else "email"


def find_holders(
    client: PlatformClient, wanted: Collection[tuple[str, str]], concurrency: int = 1
) -> dict[tuple[str, str], str]:
    """(field, value key) -> the username whose employee record holds it, for those found."""
    if not wanted:
        return {}
    candidates: dict[tuple[str, str], list[str]] = {}
    for user in client.users(page_size=PAGE, concurrency=concurrency):
        username = user.get("username")
        if not isinstance(username, str) or not username:
            continue
        for name in UNIQUE:
            raw = user.get(USER_FIELDS[name])
            key = value_key(name, raw) if isinstance(raw, str) else None
            if key is not None and (name, key) in wanted:
                candidates.setdefault((name, key), []).append(username)
    if not candidates:
        return {}
    names = sorted({u for users in candidates.values() for u in users if "," not in u})
    records = {
        r.get("username"): r for r in client.employee_records(names) if r.get("deleted") is not True
    }
    return {
        pair: username
        for pair, users in candidates.items()
        for username in users
        if _holds(records.get(username), *pair)
    }


def still_held(
    client: PlatformClient, problems: Iterable[tuple[str, str, str]]
) -> set[tuple[str, str, str]]:
    """Of these (holder username, field, value), those the holder's employee record still
    holds (one look-up per 200 holders)."""
    wanted = list(problems)
    names = sorted({h for h, _, _ in wanted if "," not in h})
    if not names:
        return set()
    records = {
        r.get("username"): r for r in client.employee_records(names) if r.get("deleted") is not True
    }
    return {
        (holder, name, value)
        for holder, name, value in wanted
        if (key := value_key(name, value)) is not None and _holds(records.get(holder), name, key)
    }


def _holds(record: Mapping[str, Any] | None, name: str, key: str) -> bool:
    if record is None:
        return False
    value = record.get(name)
    return isinstance(value, str) and value_key(name, value) == key
