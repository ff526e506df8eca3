"""Known problems, as a run and ``syncd status`` see them: values the platform refused for a
person because another account holds them (Entra's duplicate attribute resiliency).

The person is created or updated without the value; the problem names the value and its
holder, is told once (in the run that found it: its report, its notification, exit 1),
does not fail later runs, and is tried again only when either side changes: the person's
source record (the planner plans their update anyway), or the holder, which each run
with known problems asks the platform about (one look-up per 200 holders) before planning.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Engine

from syncd import snapshot as store
from syncd.executor.holders import find_holders, still_held
from syncd.plan import KnownProblem, Note
from syncd.plan.unique_values import value_key
from syncd.platform import PlatformClient


def rows(engine: Engine) -> list[dict[str, Any]]:
    """Every known problem of a person syncd holds, oldest first."""
    with engine.connect() as conn:
        return store.problem_rows(conn)


def untold(engine: Engine, run_id: int) -> list[tuple[KnownProblem, str]]:
    """Problems a killed or stopped run found and could not tell: this run tells them."""
    with store.write(engine) as conn:
        return store.untold(conn, run_id)


def released(
    client: PlatformClient, problems: Iterable[tuple[KnownProblem, ...]]
) -> frozenset[tuple[str, str]]:
    """(source id, field) of the known problems whose holder no longer holds the value:
    the holder changed it, or is gone. A problem whose holder was not named (the value was
    free again when syncd looked: an account this very run freed it from, say) is looked
    for again, through the users list: found nowhere, the value is tried again."""
    every = [p for known in problems for p in known]
    named = [p for p in every if p.holder]
    unnamed = [p for p in every if not p.holder]
    free: set[tuple[str, str]] = set()
    if named:
        held = still_held(client, [(p.holder or "", p.field, p.value) for p in named])
        free |= {
            (p.source_id, p.field) for p in named if (p.holder or "", p.field, p.value) not in held
        }
    if unnamed:
        keys = {p: (p.field, value_key(p.field, p.value) or "") for p in unnamed}
        holders = find_holders(client, set(keys.values()))
        free |= {(p.source_id, p.field) for p, key in keys.items() if key not in holders}
    return frozenset(free)


def describe(problem: KnownProblem, username: str) -> str:
    """The sentence a report and a notification tell once."""
    if problem.holder is None:
        held = "another account the platform did not name"
    elif problem.holder_key is not None:
        held = f"{problem.holder} (synced for source id {problem.holder_key})"
    else:
        held = f"{problem.holder}, an account syncd does not manage"
    return (
        f"{username}: {problem.field} {problem.value} is already used by {held}: written "
        "without it; tried again when either account changes"
    )


def notes(found: Iterable[tuple[KnownProblem, str]]) -> list[Note]:
    return [Note("known problem", p.source_id, describe(p, u)) for p, u in found]
