"""Where the last runs left off, kept in the state database: the platform's
``refresh_time`` cursors (nodes, people), the nodes' census (their employee counts), the
census of names (usernames spelled apart, ``PlatformView.names``), and the source's
incremental mark.

A cursor is moved by a run after it applied its plan; those that make the next run look
again at what failed (people, the census, the source's mark) only when the run was clean.
Cursors are stamps the platform gave in its answers, never syncd's clock: a platform
whose clock was set back is met with a listing of everyone (``view.clock_behind``).
"""

from __future__ import annotations

import json

from syncd import snapshot as store
from syncd.plan import Census, Plan, PlatformView
from syncd.survey.records import newest
from syncd.survey.settle import Settled
from syncd.survey.view import spelled_apart

NODES = "platform.refresh_time"
PEOPLE = "platform.people_refresh_time"
CENSUS = "platform.census"
NAMES = "platform.names"
SOURCE = "source.mark"


def platform_cursors(state: store.StateStore) -> dict[str, int | None]:
    """The platform's refresh_time cursors: nodes and people changed since."""
    found = {}
    for name, cursor in (("nodes", NODES), ("people", PEOPLE)):
        value = state.cursor(cursor)
        found[name] = int(value) if value else None
    return found


def source_mark(state: store.StateStore) -> str | None:
    """Where an incremental read of the source starts; None before a complete read."""
    return state.cursor(SOURCE)


def census(state: store.StateStore) -> Census | None:
    """The census the last clean complete read left; None if none, or damaged (then the
    whole tree is listed)."""
    found = store.json_object(state.cursor(CENSUS))
    listed_at, counts = found.get("listed_at"), found.get("counts")
    if not isinstance(listed_at, int) or not isinstance(counts, dict):
        return None
    try:
        return Census(listed_at, {int(k): int(v) for k, v in counts.items()})
    except (TypeError, ValueError):
        return None


def names(state: store.StateStore) -> frozenset[str] | None:
    """The census of names the last runs kept; None if none, or damaged (then the whole
    users list is read for it)."""
    found = store.json_object(state.cursor(NAMES)).get("usernames")
    if not isinstance(found, list) or not all(isinstance(u, str) for u in found):
        return None
    return frozenset(found)


def _names_to_keep(
    state: store.StateStore, view: PlatformView, settled: Settled | None
) -> frozenset[str] | None:
    """The census of names to write: the view's, with those spelled apart that the read
    after the writes named; None when the people were not read, or nobody new was named.
    What the users lists named stays true of the platform, clean run or not."""
    if view.names is None:
        return None
    kept = view.names
    if settled is not None:
        kept |= spelled_apart(settled.named)
    return kept if kept != names(state) else None


def advance(
    state: store.StateStore,
    view: PlatformView,
    the_plan: Plan,
    mark: str | None,
    *,
    clean: bool,
    settled: Settled | None = None,
) -> None:
    """Move the cursors past what this run read (the platform's own stamps, as the view
    and, after a clean apply, ``settled`` found them: never syncd's clock)."""
    people = view.people_cursor
    census = view.census
    kept = _names_to_keep(state, view, settled)
    if settled is not None:
        people = newest([people, settled.people])
        census = settled.census or census
    if people is not None and the_plan.unweighed_since is not None:
        people = min(people, the_plan.unweighed_since - 1)
    with state.transaction() as tx:
        if view.nodes_cursor is not None:
            tx.set_cursor(NODES, str(view.nodes_cursor))
        if kept is not None:
            tx.set_cursor(NAMES, json.dumps({"usernames": sorted(kept)}, ensure_ascii=False))
        # A failed change must be read again by the next delta, a drift whose repair failed
        # found again by the next drift read, and a deletion found again by the counts it
        # moved: these move only when clean.
        if clean and people is not None:
            tx.set_cursor(PEOPLE, str(people))
        if clean and mark is not None:
            tx.set_cursor(SOURCE, mark)
        if clean and census is not None:
            document = {"listed_at": census.listed_at, "counts": census.counts}
            tx.set_cursor(CENSUS, json.dumps(document))
