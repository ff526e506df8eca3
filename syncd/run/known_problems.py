"""Known problems, as a run and ``syncd status`` see them: values the platform refused for a
person because another account holds them (Entra's duplicate attribute resiliency), or for
their form (a malformed mobile or e-mail address: the same rule, with no holder).

The person is created or updated without the value; the problem names the value and its
holder, is told once (in the run that found it: its report, its notification, exit 1),
does not fail later runs, and is tried again only when either side changes: the person's
source record (the planner plans their update anyway), or the holder, which each run
with known problems asks the platform about (one look-up per 200 holders) before planning.
A problem follows its value: when the holder gave it up and another account holds it now,
that account is recorded as the holder (found in the users list, one pass) and nothing is
sent; only a value nobody else holds is sent again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from syncd import snapshot as store
from syncd.executor.holders import find_holders, still_held
from syncd.plan import KnownProblem, Note, Snapshot
from syncd.plan.unique_values import value_key
from syncd.platform import PlatformClient

log = logging.getLogger("syncd.known_problems")


def rows(state: store.StateStore) -> list[dict[str, Any]]:
    """Every known problem of a person syncd holds, oldest first."""
    with state.read() as conn:
        return store.problem_rows(conn)


def untold(state: store.StateStore, run_id: int) -> list[tuple[KnownProblem, str]]:
    """Problems a killed or stopped run found and could not tell: this run tells them."""
    with state.transaction() as tx:
        return tx.untold(run_id)


def follow(
    client: PlatformClient, state: store.StateStore, snapshot: Snapshot
) -> tuple[Snapshot, frozenset[tuple[str, str]]]:
    """Each known problem's value followed to the account that holds it now, before planning.

    Returns the snapshot with the holders found (also recorded: ``syncd status`` names
    them), and the (source id, field) of the problems whose value nobody else holds now:
    the person is sent it again (``released``). A value passed on to another account is
    not released: the problem stays, told once, with its new holder, and nothing is sent.
    """
    # A value refused for its form has no holder: it waits for the source to change it.
    every = [p for known in snapshot.problems.values() for p in known if p.refusal is None]
    if not every:
        return snapshot, frozenset()
    let_go = _let_go(client, every)
    if not let_go:
        return snapshot, frozenset()
    keys = {p: (p.field, value_key(p.field, p.value) or "") for p in let_go}
    holders = find_holders(client, set(keys.values()))
    own = {(r["source_id"], r["field"]): r["username"] for r in rows(state)}
    free: set[tuple[str, str]] = set()
    moved: list[KnownProblem] = []
    for p, key in keys.items():
        holder = holders.get(key)
        if holder is None or holder == own.get((p.source_id, p.field)):
            free.add((p.source_id, p.field))  # nobody else holds it (the person may, already)
        elif holder != p.holder:
            moved.append(p._replace(holder=holder))
    if moved:
        moved = _record_holders(state, moved)
        snapshot = replace(snapshot, problems=_with(snapshot.problems, moved))
    return snapshot, frozenset(free)


def _let_go(client: PlatformClient, problems: list[KnownProblem]) -> list[KnownProblem]:
    """The problems whose named holder no longer holds the value (it changed it, or is
    gone), and those whose holder was never named (the value was free again when syncd
    looked: an account this very run freed it from, say): each is looked for again."""
    named = [p for p in problems if p.holder]
    unnamed = [p for p in problems if not p.holder]
    if not named:
        return unnamed
    held = still_held(client, [(p.holder or "", p.field, p.value) for p in named])
    return [p for p in named if (p.holder or "", p.field, p.value) not in held] + unnamed


def _record_holders(state: store.StateStore, moved: list[KnownProblem]) -> list[KnownProblem]:
    """Record the accounts that hold these problems' values now (with their source id when
    syncd holds them); the problems as recorded."""
    with state.transaction() as tx:
        recorded = tx.move_problems(moved)
    for p in recorded:
        log.info(
            "known problem of %s: %s %s is held by %s now; still written without it",
            p.source_id,
            p.field,
            p.value,
            p.holder,
        )
    return recorded


def _with(
    problems: Mapping[str, tuple[KnownProblem, ...]], moved: list[KnownProblem]
) -> dict[str, tuple[KnownProblem, ...]]:
    now = {(p.source_id, p.field): p for p in moved}
    return {
        k: tuple(now.get((p.source_id, p.field), p) for p in known) for k, known in problems.items()
    }


def describe(problem: KnownProblem, username: str) -> str:
    """The sentence a report and a notification tell once."""
    if problem.refusal is not None:
        return (
            f"{username}: the platform refuses {problem.field} {problem.value} "
            f"({problem.refusal}): written without it; tried again when the source changes it"
        )
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
