"""After a clean apply: where the platform's answers leave the people's cursor and the
nodes' counts, so that the next run does not read back what this one wrote.

syncd's own writes move every person's ``refresh_time`` and the counts of the nodes they
touch. Read back, 100,000 people written by a first sync would be listed and compared
again by the run after it. Instead, once the writes are answered, the users list since
the view's cursor names who changed since: syncd's people this run wrote are its own
writes, and the newest stamp the list gives is the next cursor; anyone else syncd holds
in that list changed there during the run, and the cursor stays before them. The nodes'
counts are read again for the census the next complete read compares with.

What this trusts: a change another administrator makes to a person in the seconds
between syncd's write and this read is taken for syncd's own, and so is a deletion in a
node syncd wrote to in that time. The daily listing of everyone (``view.CENSUS_EVERY_MS``)
compares every record whatever its stamp, and finds them.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from syncd import snapshot as store
from syncd.errors import SyncdError
from syncd.model import Employee, Kind
from syncd.plan import Census, Plan, PlatformView, Snapshot
from syncd.platform import Node, PlatformClient
from syncd.survey.records import newest
from syncd.survey.view import USERS_PAGE, capped

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Settled:
    """The people's cursor past this run's own writes (None: as the view left it), and
    the census with the counts those writes left (None: the view's, if any)."""

    people: int | None
    census: Census | None
    # Usernames the users list named that this run did not write (another's account, made
    # while it ran): the census of names takes those spelled apart (cursors.NAMES).
    named: frozenset[str] = frozenset()


def settle(
    client: PlatformClient,
    view: PlatformView,
    the_plan: Plan,
    snapshot: Snapshot,
    concurrency: int,
) -> Settled | None:
    """Read where this run's writes left the platform; None if the read failed (then the
    next run reads back what this one wrote, as a run after a failed one does)."""
    written = _written(the_plan)
    if not written and view.census is None:
        return None
    try:
        root = client.root()
        now = client.platform_time()
        people, named = None, frozenset[str]()
        if written:
            people, named = _people_cursor(client, view, snapshot, written, concurrency)
            people = capped(people, now)
        census = _census(client, root, view.census) if view.census is not None else None
    except SyncdError as exc:
        log.warning("reading the platform after the writes failed (%s): read back next run", exc)
        return None
    return Settled(people, census, named)


def _written(the_plan: Plan) -> set[str]:
    """The usernames of the people this plan wrote to, or weighed (an adoption)."""
    found = set()
    for c in the_plan.changes:
        if c.kind is Kind.EMPLOYEE:
            found.add(c.display)
            if isinstance(c.record, Employee):
                found.add(c.record.username)
    return found


def _people_cursor(
    client: PlatformClient,
    view: PlatformView,
    snapshot: Snapshot,
    written: Collection[str],
    concurrency: int,
) -> tuple[int | None, frozenset[str]]:
    """The newest stamp the users list gives since the view's cursor, kept before anyone
    syncd holds whom this run did not write (another administrator's change, made while
    it ran), None when the list gives such a person no stamp; and the usernames of those
    this run did not write."""
    users = client.users(
        refresh_time=view.people_cursor, page_size=USERS_PAGE, concurrency=concurrency
    )
    cursor, others = _stamps(users, written)
    held = store.holding(snapshot.employees, others) if others else set()
    theirs = [others[u] for u in held]
    if any(stamp is None for stamp in theirs):
        return None, frozenset(others)
    before = min((s for s in theirs if s is not None), default=None)
    if cursor is not None and before is not None:
        cursor = min(cursor, before - 1)
    return cursor, frozenset(others)


def _stamps(
    users: Iterable[Mapping[str, Any]], written: Collection[str]
) -> tuple[int | None, dict[str, int | None]]:
    """The newest stamp the list gives, and the users this run did not write, with theirs."""
    stamps: list[int | None] = []  # one a user: the newest is taken once, after the list
    others: dict[str, int | None] = {}
    for user in users:
        username, stamp = user.get("username"), user.get("last_modified")
        stamp = stamp if type(stamp) is int else None
        stamps.append(stamp)
        if isinstance(username, str) and username not in written:
            others[username] = stamp
    return newest(stamps), others


def _census(client: PlatformClient, root: Node, census: Census) -> Census | None:
    """The view's census with the nodes' counts as they are after the writes (when the
    last listing of everyone was stays as it was); None if a node gives no count."""
    counts = {n.id: n.employee_count for n in client.page_orgs()}
    counts[root.id] = root.employee_count
    known = {k: c for k, c in counts.items() if c is not None}
    if len(known) < len(counts):
        return None
    return Census(census.listed_at, known)
