"""Values the platform lets one account hold at a time (a mobile, an e-mail address).

Two things follow from that rule, both planned here, as pure functions of the changes the
employee planner made:

- **Free, then set.** When people syncd holds swap, rotate or pass on such values in one
  run, each update would be refused while the value is still another's. So every person
  who gives up a value someone else in this run wants is first sent an update without it
  (a change with ``frees``, applied in a phase of its own before the people's creates and
  updates), then the creates and updates set the new values: any permutation of unique
  values among syncd's people converges in one run.
- **Known problems, tried again when either side changes.** A value the platform refused
  because another account holds it is recorded as a known problem (see
  ``syncd.run.known_problems``); the person was written without it and is not sent again for
  it until their source record changes (the planner plans that update anyway), or the
  holder gives the value up: found on the platform before planning (``released``), or
  the holder is one of syncd's people whose update in this run gives it up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from syncd.model import Employee, match_value
from syncd.plan.actions import Action
from syncd.plan.values import Change, KnownProblem

UNIQUE = ("mobile", "email")  # what the platform refuses when another account holds it


def value_key(field: str, value: str | None) -> str | None:
    """The value as the platform compares it for uniqueness (e-mail in any case, a mobile
    by its digits); None when empty."""
    return match_value("email" if field == "email" else "mobile", value)


def with_values(e: Employee, values: Mapping[str, str | None]) -> Employee:
    """The person with these unique values (None: without it)."""
    return e._replace(mobile=values.get("mobile", e.mobile), email=values.get("email", e.email))


def _written(c: Change) -> Mapping[str, Any] | None:
    """What syncd wrote under the change's own key: a re-keyed record's new key has none
    (its fields were written under ``previous_key``, which these rules leave alone)."""
    return c.written if c.previous_key is None else None


def held(c: Change) -> dict[str, str]:
    """The unique values the platform holds for this change's person before it: what syncd
    last wrote, and what drift found there instead."""
    written: Mapping[str, Any] = _written(c) or {}
    drifted: Mapping[str, Any] = c.platform_before or {}
    found: dict[str, str] = {}
    for name in UNIQUE:
        value = drifted[name] if name in drifted else written.get(name)
        if isinstance(value, str) and value:
            found[name] = value
    return found


class _Giving(NamedTuple):
    """An update of someone syncd holds that gives up unique values the platform holds."""

    change: Change
    record: Employee
    holding: dict[str, str]  # field -> the value the platform holds (held)
    changed: dict[str, str]  # field -> the value key given up


def frees(upserts: Sequence[Change], hasher: Callable[[Employee], str]) -> list[Change]:
    """The updates that free values other people in this run want, to be sent before
    ``upserts``: each person's record without the values they give up."""
    # First who gives a value up (a first sync has nobody: nothing more is done), then
    # who in this run wants one of those.
    giving = [g for c in upserts if (g := _giving(c)) is not None]
    if not giving:
        return []
    wanted = _wanted(upserts, {(name, key) for g in giving for name, key in g.changed.items()})
    freeing: list[Change] = []
    for g in giving:
        given_up = {
            name: g.holding[name]
            for name, key in g.changed.items()
            if wanted.get((name, key), set()) - {g.change.key}
        }
        if given_up:
            freeing.append(_freeing(g, given_up, hasher))
    return freeing


def _giving(c: Change) -> _Giving | None:
    """The values this update gives up, if it is an update (of someone syncd wrote, or an
    adoption) and it gives any up."""
    e = c.record
    if c.action is not Action.UPDATE or not isinstance(e, Employee):
        return None
    holding = held(c)  # an adoption's: the account's, as the platform holds them
    changed = {
        name: key
        for name, value in holding.items()
        if (key := value_key(name, value)) is not None and key != value_key(name, getattr(e, name))
    }
    return _Giving(c, e, holding, changed) if changed else None


def _wanted(
    upserts: Sequence[Change], given: set[tuple[str, str]]
) -> dict[tuple[str, str], set[str]]:
    """(field, value key) -> the source ids of the people in this run who want it, of the
    values ``given`` up."""
    wanted: dict[tuple[str, str], set[str]] = {}
    for c in upserts:
        if isinstance(c.record, Employee):
            for name in UNIQUE:
                pair = (name, value_key(name, getattr(c.record, name)) or "")
                if pair in given:
                    wanted.setdefault(pair, set()).add(c.key)
    return wanted


def _freeing(g: _Giving, given_up: Mapping[str, str], hasher: Callable[[Employee], str]) -> Change:
    """The update that sends the person without the values they give up."""
    c, holding = g.change, g.holding
    # Nothing new is set yet: another value this person takes may still be held too.
    freed = with_values(g.record, {n: None if n in given_up else holding.get(n) for n in UNIQUE})
    before = c.platform_before
    if before is not None:  # drift: the body clears what the platform holds
        before = {**(_written(c) or {}), **before}
    what = ", ".join(f"{name} {value}" for name, value in given_up.items())
    return replace(
        c,
        record=freed,
        hash=hasher(freed),
        frees=tuple(given_up),
        platform_before=before,
        reason=f"freeing {what} for another person in this run; set next",
    )


def retries(
    problems: Mapping[str, Sequence[KnownProblem]],
    released: Iterable[tuple[str, str]],
    upserts: Sequence[Change],
) -> dict[str, list[KnownProblem]]:
    """The known problems to try again, by person, because the holder gave the value up:
    ``released`` names the (source id, field) pairs the platform no longer shows held, and
    a holder syncd holds whose update in ``upserts`` gives the value up counts too. People
    already in ``upserts`` are left out: their update sends the value anyway."""
    if not problems:
        return {}
    planned = {c.key for c in upserts}
    giving_up: set[tuple[str, str, str]] = set()  # (holder source id, field, value key)
    holders = {p.holder_key for known in problems.values() for p in known}
    for c in upserts:
        if c.key in holders and isinstance(c.record, Employee) and c.action is Action.UPDATE:
            for name, value in held(c).items():
                key = value_key(name, value)
                if key is not None and key != value_key(name, getattr(c.record, name)):
                    giving_up.add((c.key, name, key))
    free = set(released)
    found: dict[str, list[KnownProblem]] = {}
    for source_id, known in sorted(problems.items()):
        if source_id in planned:
            continue
        again = [
            p
            for p in known
            if (p.source_id, p.field) in free
            or (
                p.holder_key is not None
                and (p.holder_key, p.field, value_key(p.field, p.value)) in giving_up
            )
        ]
        if again:
            found[source_id] = again
    return found
