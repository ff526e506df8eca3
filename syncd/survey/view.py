"""What planning needs from the platform, read before each plan: the view of the platform.

- the root node, and every node (complete reads) or those changed since the nodes'
  ``refresh_time`` cursor (department drift);
- the people syncd holds whose platform record differs from what syncd last wrote: those
  the users list (D3) with ``refresh_time`` names, read from the employee list (G) by
  username, and on complete reads everyone the organization's employees list (G) in the
  nodes whose employee count moved since the last complete read, or along the whole tree
  at least once a day, whatever their stamps say (people drift);
- the people syncd holds who were deleted there: on complete reads, those the listed
  nodes lack (asked about by name), and those placed in a node deleted since; on every
  read, those D3 names whose employee record G no longer returns. A removed employee's
  user may stay in D3, so D3 alone never says who is gone;
- accounts the source names that syncd never synced, to adopt rather than duplicate.

``read_platform`` reads what does not depend on the source, while the source is read;
``with_adoptions`` adds the accounts to adopt once the directory is known. A cursor is
the newest ``last_modified`` the platform's answers gave, never later than its clock (its
``Date``); a platform whose clock is behind the cursors was set back, and the run lists
and compares everyone (``clock_behind``). The runner moves the cursors after a clean run,
past its own writes (``syncd.survey.settle``).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any
from unicodedata import normalize

from syncd import snapshot as store
from syncd.clock import now_ms
from syncd.config import Settings, platform_of
from syncd.model import Directory, MatchKey, match_value
from syncd.plan import (
    Census,
    PlatformEmployee,
    PlatformNode,
    PlatformPerson,
    PlatformView,
    Snapshot,
)
from syncd.plan.values import PlatformMark
from syncd.platform import EmployeeRecord, Node, PlatformClient
from syncd.spelling import look_alike, look_alikes, nfc
from syncd.survey.records import Judge, newest, present, usernames

log = logging.getLogger(__name__)

# Users asked per page of the D3 list (a platform may give fewer). With platform.concurrency
# pages in flight, 5,000 a page held 27 MB more at 100,000 people and was no faster.
USERS_PAGE = 2000
# People per listing of the organization's employees, as the nodes' counts say: one
# listing of 100,000 list-form records is 76 MB of JSON, so the tree is listed in parts,
# platform.concurrency at a time, each part kept only for its usernames.
LISTING_PART = 2000
# Whatever the nodes' counts say, a complete read lists every employee this often: one
# person deleted and another placed in the same node between two runs leave its count.
CENSUS_EVERY_MS = 24 * 3600 * 1000
# The employee list asks this many usernames a call (PlatformClient.employee_records).
NAMES_PER_CALL = 200
# A platform's Date header gives whole seconds: its clock is behind a stamp it gave only
# when that stamp is at least this far ahead of the Date.
CLOCK_RESOLUTION_MS = 1000


def read_platform(
    client: PlatformClient,
    held: store.Held,
    complete: bool,
    cursors: Mapping[str, int | None],
    settings: Settings,
    census: Census | None = None,
    names: frozenset[str] | None = None,
) -> PlatformView:
    """What the view holds whatever the source says: read before the source is.

    ``complete``: whether the source read is expected to be complete (then every node is
    listed, and the employees as ``census`` says: see ``_listing_for``). ``held`` is what
    syncd holds as this reader asks about it, by queries of its own (``store.Held``): the
    plan's snapshot is loaded apart and shares nothing with it. Accounts to adopt come
    after the read (``with_adoptions``). ``names``: the census of names the last runs
    kept (``PlatformView.names``); None, none kept: the whole users list is read for it.
    """
    root = client.root()
    now = client.platform_time()
    since_nodes, since = cursors.get("nodes"), cursors.get("people")
    behind = clock_behind(now, since_nodes, since)
    listing = complete or since_nodes is None or behind is not None or not held.departments
    nodes: Mapping[int, PlatformNode] = {}
    if listing:
        nodes = _nodes(client.page_orgs())
    elif settings.sync.drift_check:
        nodes = _nodes(client.page_orgs(refresh_time=since_nodes))
    nodes_cursor = capped(newest(n.last_modified for n in nodes.values()), now)
    found = Found({}, frozenset(), since)
    counted = kept = None
    if settings.sync.drift_check:
        where = None
        if complete or behind is not None:
            counts = {**{n.id: n.employees for n in nodes.values()}, root.id: root.employee_count}
            where, counted = _listing_for(
                root.id, nodes, counts, census, since, now_ms(), whole=behind is not None
            )
        found = _people_drift(
            client,
            held,
            root.id,
            where,
            since,
            platform_of(settings).concurrency,
            frozenset(nodes) if listing else None,
        )
        kept = _names(client, names, found.named)
    # Set back, the platform stamps what changes next from its time now on: what changed
    # before this read, the whole listing compared.
    people_cursor = behind - 1 if behind is not None else capped(found.newest, now)
    return PlatformView(
        root.id,
        root.name or "",
        nodes,
        listing,
        changed=found.changed,
        deleted=found.deleted,
        marked=found.marked,
        employee_count=root.all_employee_count or 0,
        census=counted,
        named=found.named | (kept or frozenset()),
        names=kept,
        nodes_cursor=nodes_cursor,
        people_cursor=people_cursor,
    )


def capped(cursor: int | None, now: int | None) -> int | None:
    """A cursor no later than the platform's clock: a stamp ahead of it (made before the
    clock was set back) would make the next reads miss what is stamped from now on."""
    if cursor is None or now is None or cursor < now + CLOCK_RESOLUTION_MS:
        return cursor
    return now - 1


def clock_behind(now: int | None, *cursors: int | None) -> int | None:
    """The platform's time, when its clock is behind a stamp it gave before: set back.

    ``now`` is its answer's ``Date`` (whole seconds, so up to a second behind the stamps
    of that instant). Changes made since it was set back carry stamps older than the
    cursors, and a ``refresh_time`` read from them would never return them: this run lists
    and compares everyone instead, and the cursors start again from ``now``.
    """
    if now is None:
        return None
    ahead = [c for c in cursors if c is not None and c >= now + CLOCK_RESOLUTION_MS]
    if not ahead:
        return None
    log.warning(
        "the platform's clock (%d) is %.1f s behind the newest change it reported (%d): "
        "it was set back; every employee is listed and compared, and reads start again "
        "from its time now",
        now,
        (max(ahead) - now) / 1000,
        max(ahead),
    )
    return now


def with_adoptions(
    view: PlatformView,
    client: PlatformClient,
    snapshot: Snapshot,
    directory: Directory,
    match_by: MatchKey = "username",
) -> PlatformView:
    """The view, with the platform's accounts of people the source names and syncd never
    synced (adopted rather than made twice): by username, or on a first run by
    ``match_by`` (email, mobile or work number), which needs every account listed."""
    unknown = newcomers(snapshot, directory, view.named)
    unknown += renamed_from_deleted(snapshot, directory, view)
    return adopting(view, client, snapshot, unknown, match_by)


def newcomers(snapshot: Snapshot, directory: Directory, named: Collection[str] = ()) -> list[str]:
    """Usernames the source names that no record syncd synced holds in any spelling
    (syncd.spelling.look_alike), each with the spellings the platform may hold it in
    (``spellings``), and those of the usernames the users list ``named`` since the
    people's cursor that look like it (an account another installation or program made
    lately, in any letter case): the platform matches usernames exactly, and an account
    found in another spelling is a conflict, never a second account beside it."""
    synced, read = snapshot.employees, directory.employees
    new_ids = read.keys() - synced.keys()
    new = [e for k, e in read.items() if k in new_ids] if new_ids else []
    # Usernames syncd holds, gathered only when someone is new (most runs: nobody).
    known = set(look_alikes([e.username for e in synced.values()])) if new else set()
    lately: dict[str, list[str]] = {}
    for username in named if new else ():
        lately.setdefault(look_alike(username), []).append(username)
    found: list[str] = []
    for e in new:
        key = look_alike(e.username)
        if key not in known:
            asked = spellings(e.username)
            found += asked + [u for u in lately.get(key, ()) if u not in asked]
    return found


def renamed_from_deleted(snapshot: Snapshot, directory: Directory, view: PlatformView) -> list[str]:
    """The new usernames (``spellings``) of people the source renamed whose old account
    was deleted on the platform: they are planned as records not synced yet, so an account
    under the new one is weighed in the same run (syncd.plan.employees): theirs, made by
    syncd before the state database was put back (adopted; locked if departed), or
    another's (a conflict). Nobody is looked for unless someone was deleted."""
    if not view.deleted:
        return []
    found: list[str] = []
    for source_id, synced in snapshot.employees.items():
        e = directory.employees.get(source_id)
        if synced.username in view.deleted and e is not None and e.username != synced.username:
            found += spellings(e.username)
    return found


def spellings(username: str) -> list[str]:
    """``username`` and the look-alikes of it a platform commonly holds: in NFD (macOS and
    some HR tools), in lower case (most directories), and with its case folded and its
    invisible characters left out (``syncd.spelling.look_alike``). An account in another
    letter case than these (``Alice`` for the source's ``alice``) is found only by a
    whole listing: the platform is asked by exact username."""
    found = [username]
    if username.isascii() and username.islower():
        return found  # nearly every username: asked once
    for variant in (normalize("NFD", username), username.lower(), look_alike(username)):
        if variant not in found:
            found.append(variant)
    return found


def _names(
    client: PlatformClient, kept: frozenset[str] | None, named: Iterable[str]
) -> frozenset[str]:
    """The census of names after this read: the one ``kept``, or when none is (a first
    run), every account's from the whole users list, once; with those ``named`` since."""
    if kept is None:
        kept = spelled_apart(_named(client.users(page_size=USERS_PAGE))[0])
    return kept | spelled_apart(named)


def spelled_apart(usernames: Iterable[str]) -> frozenset[str]:
    """Of these usernames, those spelled otherwise than their look-alike key (``Alice``,
    ``JOSÉ``, in NFD): no look-up of a newcomer's ``spellings`` finds them, so the census
    of names keeps them (``PlatformView.names``). Any other account is found by them."""
    return frozenset(u for u in usernames if u != look_alike(u))


def adopting(
    view: PlatformView,
    client: PlatformClient,
    snapshot: Snapshot,
    unknown: Sequence[str],
    match_by: MatchKey = "username",
) -> PlatformView:
    """The view with the accounts the platform holds for these ``newcomers``."""
    # An organization with nobody in it has nobody to adopt: skip the look-ups.
    if not unknown or view.employee_count <= 0:
        return view
    if match_by != "username" and not snapshot.headcount:
        records = client.list_employees(org_id=view.root_id, recursion=True)
    else:
        records = client.employees_by_username(unknown)
    found = [_platform_person(r) for r in records if r.username]
    # Keyed by look-alike key: the planner finds accounts spelled another way (and, an
    # account in NFD and one in NFC both there, the NFC one, which is the source's).
    in_nfc_last = sorted(found, key=lambda p: p.username == nfc(p.username))
    people = {look_alike(p.username): p for p in in_nfc_last}
    by_key: dict[str, list[PlatformPerson]] = {}
    if match_by != "username" and not snapshot.headcount:
        for person in found:
            value = match_value(match_by, getattr(person, match_by))
            if value is not None:
                by_key.setdefault(value, []).append(person)
    return replace(view, people=people, by_key={k: tuple(v) for k, v in by_key.items()})


def _platform_person(record: EmployeeRecord) -> PlatformPerson:
    return PlatformPerson(
        record.id,
        record.username or "",
        record.locked or record.disabled,
        record.email,
        record.mobile,
        record.sn,
        record.extension_id or None,
        record.name,
        tuple(p.org_id for p in record.positions if p.org_id is not None),
    )


@dataclass(frozen=True, slots=True)
class Listing:
    """Where a read lists the organization's employees: ``parts`` as (node id, with its
    descendants); ``whole``: they cover the tree (else: the nodes whose count moved, each
    alone)."""

    parts: Sequence[tuple[int, bool]]
    whole: bool


@dataclass(frozen=True, slots=True)
class Found:
    """What the people reads found: syncd's people whose platform record differs from what
    syncd last wrote (by username), those deleted there, and the people's cursor they
    justify (the newest stamp of the changes they weighed)."""

    changed: dict[str, PlatformEmployee]
    deleted: frozenset[str]
    newest: int | None
    marked: tuple[PlatformMark, ...] = ()
    named: frozenset[str] = frozenset()  # every username the users list named


def _listing_for(
    root_id: int,
    nodes: Mapping[int, PlatformNode],
    counts: Mapping[int, int | None],
    census: Census | None,
    since: int | None,
    now: int,
    whole: bool = False,
) -> tuple[Listing, Census | None]:
    """What this read lists, and the census the next one compares with: the whole tree
    when asked (``whole``) or when no census stands (none yet, a day old or from a future
    time, no cursor, a node without a count), else the nodes whose count moved and the
    people of the nodes gone since (asked about by name), unless listing the whole tree
    costs fewer calls."""
    everyone = Listing(listing_parts(root_id, nodes), whole=True)
    if any(c is None for c in counts.values()):
        return everyone, None
    known = {k: c for k, c in counts.items() if c is not None}
    if whole or census is None or since is None or _due(census, now):
        return everyone, Census(now, known)
    moved = [k for k, c in known.items() if census.counts.get(k) != c]
    # The people of a node deleted since are asked about by name, NAMES_PER_CALL a call.
    gone = sum(c for k, c in census.counts.items() if k not in known)
    if len(moved) + -(-gone // NAMES_PER_CALL) >= len(everyone.parts):
        return everyone, Census(now, known)
    return Listing([(k, False) for k in moved], whole=False), Census(census.listed_at, known)


def _due(census: Census, now: int) -> bool:
    """Whether the whole tree is due to be listed again: listed a day ago, or at a time
    syncd's clock has not reached yet (set back since)."""
    return not 0 <= now - census.listed_at < CENSUS_EVERY_MS


def _people_drift(
    client: PlatformClient,
    ours: store.Held,
    root_id: int,
    listing: Listing | None,
    since: int | None,
    concurrency: int,
    listed_nodes: frozenset[int] | None,
) -> Found:
    """The people syncd holds whose platform record differs from what syncd last wrote,
    and those deleted there.

    Who is read: those the users list names since the cursor, and everyone ``listing``
    lists (complete reads), whatever their stamps say: a platform whose clock was set back
    stamps changes before the cursor, and only a listing finds them. Each part is compared
    as it comes and only the records that differ are kept. ``listed_nodes``: every node,
    when the nodes were all listed (syncd's people placed in a node gone since are asked
    about by name).
    """
    named: set[str] | None = None
    stamps: list[int] = []
    if since is not None:
        users = client.users(refresh_time=since, page_size=USERS_PAGE)
        named, stamps = _named(users)
    judge = Judge(ours, root_id, named)
    lately = frozenset(named or ())
    if not ours.employees:
        if listing is not None and listing.whole and named is not None:
            # Nobody held to compare, but the records listed are evidence (judge.marked).
            _listing(client, listing.parts, concurrency, judge)
        return Found({}, frozenset(), newest([since, *stamps]), tuple(judge.marked), lately)
    if listing is not None and listing.whole:
        changed, deleted, newer = _whole(client, ours, listing, concurrency, judge)
    else:
        changed, deleted, newer = _in_parts(
            client, ours, (root_id, listing, listed_nodes), concurrency, judge, named
        )
    cursor = newest([since, *stamps, *newer])
    return Found(changed, deleted, cursor, tuple(judge.marked), lately)


Read = tuple[dict[str, PlatformEmployee], frozenset[str], list[int | None]]


def _whole(
    client: PlatformClient,
    loaded: store.Held,
    listing: Listing,
    concurrency: int,
    judge: Judge,
) -> Read:
    """Everyone listed: those missing from every part, deleted or moved between two parts
    while they were listed, are asked about by name; only those the platform does not
    know are gone."""
    listed, found, seen = _listing(client, listing.parts, concurrency, judge)
    owned = set(store.usernames(loaded.employees))
    missing = [u for u in owned if u not in listed]
    there = present(client.employee_records(missing)) if missing else []
    more, newer = judge(there)
    changed = {p.username: p for p in (*found, *more)}
    deleted = frozenset(missing).difference(usernames(there))
    return changed, deleted, [seen, newer]


def _in_parts(
    client: PlatformClient,
    loaded: store.Held,
    where: tuple[int, Listing | None, frozenset[int] | None],
    concurrency: int,
    judge: Judge,
    named: set[str] | None,
) -> Read:
    """The nodes whose count moved listed, and the people the users list named (or placed
    in a node listed or gone) asked about by name; those the platform no longer has are
    gone. Those it named whom syncd does not hold are asked about too, when they were
    named as changed since the cursor: a source id among them is the continuity check's
    evidence (``syncd.run.rebuild.behind``)."""
    root_id, listing, listed_nodes = where
    synced = loaded.employees
    since_cursor = named is not None
    if named is None:  # never read before: every user is new
        named = set(usernames(client.users(page_size=USERS_PAGE, concurrency=concurrency)))
    moved = _moved(loaded, root_id, listing.parts) if listing is not None else {}
    gone = _gone(loaded, listed_nodes) if listing is not None else {}
    listed, found, seen = _listing(client, [(n, False) for n in moved], concurrency, judge)
    where_ids = [*moved.values(), *gone.values()]
    placed = loaded.placed(where_ids) if where_ids else {}
    expected = {synced[k].username for ids in placed.values() for k in ids if k in synced}
    held = store.holding(synced, named)
    wanted = (held | expected).difference(listed)
    strangers = named.difference(held, listed) if since_cursor else set()
    records = present(client.employee_records([*wanted, *strangers])) if wanted or strangers else []
    more, newer = judge(records)
    changed = {p.username: p for p in (*found, *more)}
    deleted = frozenset(wanted.difference(usernames(records)))
    return changed, deleted, [seen, newer]


def _named(users: Iterable[Mapping[str, Any]]) -> tuple[set[str], list[int]]:
    """The usernames a users list names, and the stamps it gives them."""
    named, stamps = set(), []
    for user in users:
        username, stamp = user.get("username"), user.get("last_modified")
        if isinstance(username, str):
            named.add(username)
        if type(stamp) is int:
            stamps.append(stamp)
    return named, stamps


def _moved(snapshot: store.Held, root_id: int, parts: Iterable[tuple[int, bool]]) -> dict[int, str]:
    """Of the nodes whose count moved, those syncd places people in, each with its
    department's source id ("" the root: a position naming no department)."""
    ours = {d.node_id: k for k, d in snapshot.departments.items() if d.node_id is not None}
    ours[root_id] = ""
    return {node_id: ours[node_id] for node_id, _ in parts if node_id in ours}


def _gone(snapshot: store.Held, listed: frozenset[int] | None) -> dict[int, str]:
    """syncd's departments whose node a listing of every node lacks (deleted there, all at
    once with the people in it when the platform was wiped), by node id."""
    if listed is None:
        return {}
    return {d.node_id: k for k, d in snapshot.departments.items() if d.node_id not in listed}


def listing_parts(root_id: int, nodes: Mapping[int, PlatformNode]) -> list[tuple[int, bool]]:
    """Where to list the organization's employees, as (node id, with its descendants):
    subtrees of at most LISTING_PART people by the nodes' counts, each listed at once, and
    the nodes above them one by one. Without counts, the root and everything below it."""
    children: dict[int | None, list[int]] = {}
    for node in nodes.values():
        children.setdefault(node.parent_id, []).append(node.id)
    order, stack = [], [root_id]
    while stack:  # parents before children
        order.append(stack.pop())
        stack += children.get(order[-1], ())
    people = {n: (nodes[n].employees or 0) if n in nodes else 0 for n in order}
    for node_id in reversed(order):  # each node's count of its whole subtree
        people[node_id] += sum(people[c] for c in children.get(node_id, ()))
    parts, stack = [], [root_id]
    while stack:
        node_id = stack.pop()
        if people[node_id] <= LISTING_PART:
            parts.append((node_id, True))
            continue
        parts.append((node_id, False))
        stack += children.get(node_id, ())
    return parts


def _listing(
    client: PlatformClient,
    parts: Sequence[tuple[int, bool]],
    concurrency: int,
    judge: Judge,
) -> tuple[set[str], list[PlatformEmployee], int | None]:
    """Every username the parts list, the records of syncd's people there that differ from
    what it wrote, and the newest stamp of those the users list named; a part's answer
    is let go of as soon as it is judged."""

    def part(where: tuple[int, bool]) -> tuple[list[str], list[PlatformEmployee], int | None]:
        records = present(client.employee_listing(where[0], recursion=where[1]))
        return usernames(records), *judge(records)

    listed: set[str] = set()
    found: list[PlatformEmployee] = []
    stamps: list[int | None] = []
    if not parts:  # no node's count moved: most runs
        return listed, found, None
    with ThreadPoolExecutor(concurrency, thread_name_prefix="listing") as pool:
        for names, differing, stamp in pool.map(part, parts):
            listed.update(names)
            found += differing
            stamps.append(stamp)
    return listed, found, newest(stamps)


def _nodes(records: Iterable[Node]) -> dict[int, PlatformNode]:
    nodes = {}
    for n in records:
        nodes[n.id] = PlatformNode(
            n.id,
            n.name or "",
            n.parent_org_id,
            n.serial_no or None,
            _int(n.sort_order),
            n.last_modified,
            n.employee_count,
        )
    return nodes


def _int(value: Any) -> int | None:
    try:
        return None if value is None or value == "" else int(value)
    except (TypeError, ValueError):
        return None
