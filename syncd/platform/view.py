"""What planning needs from the platform, read before each plan: the view of the platform.

- the root node, and every node (complete reads) or those changed since the nodes'
  ``refresh_time`` cursor (department drift);
- the people syncd holds who changed there since the people's cursor: the users list
  (D3) with ``refresh_time`` names them, the employee list (G) gives their records
  (people drift);
- the people syncd holds who were deleted there: on complete reads, those the
  organization's employees (G) do not include, listed along the whole tree at least once
  a day and otherwise in the nodes whose employee count moved since the last complete
  read (a deletion lowers its node's count); on every read, those D3 names whose employee
  record G no longer returns. A removed employee's user may stay in D3, so D3 alone never
  says who is gone;
- accounts the source names that syncd never synced, to adopt rather than duplicate.

``read_platform`` reads what does not depend on the source, while the source is read;
``with_adoptions`` adds the accounts to adopt once the directory is known. A cursor is
the newest ``last_modified`` seen; the runner moves it after a clean run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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
from syncd.platform.client import PlatformClient
from syncd.platform.schemas import EmployeeRecord, Node
from syncd.spelling import look_alike, nfc

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
# The list form's profile fields that people drift compares (see syncd.plan.drift).
COMPARED = ("name", "email", "mobile", "sn", "gender", "sort_order", "senior", "properties")


def read_platform(
    client: PlatformClient,
    snapshot: Callable[[], Snapshot],
    complete: bool,
    cursors: Mapping[str, int | None],
    settings: Settings,
    census: Census | None = None,
) -> PlatformView:
    """What the view holds whatever the source says: made while the source is read.

    ``complete``: whether the source read is expected to be complete (then every node is
    listed, and the employees as ``census`` says: see ``_listing_for``). ``snapshot`` waits
    for the snapshot, which is loaded while the listings that do not need it are read.
    Accounts to adopt come after the read (``with_adoptions``).
    """
    root = client.root()
    since_nodes = cursors.get("nodes")
    listing = complete or since_nodes is None or not snapshot().departments
    nodes: Mapping[int, PlatformNode] = {}
    if listing:
        nodes = _nodes(client.page_orgs())
    elif settings.sync.drift_check:
        nodes = _nodes(client.page_orgs(refresh_time=since_nodes))
    changed: dict[str, PlatformEmployee] = {}
    deleted: frozenset[str] = frozenset()
    counted = None
    if settings.sync.drift_check:
        since = cursors.get("people")
        where = None
        if complete:
            counts = {**{n.id: n.employees for n in nodes.values()}, root.id: root.employee_count}
            where, counted = _listing_for(root.id, nodes, counts, census, since, now_ms())
        changed, deleted = _people_drift(
            client, snapshot, root.id, where, since, platform_of(settings).concurrency
        )
    return PlatformView(
        root.id,
        root.name or "",
        nodes,
        listing,
        changed=changed,
        deleted=deleted,
        employee_count=root.all_employee_count or 0,
        census=counted,
    )


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
    return adopting(view, client, snapshot, newcomers(snapshot, directory), match_by)


def newcomers(snapshot: Snapshot, directory: Directory) -> list[str]:
    """Usernames the source names that no record syncd synced holds in any spelling
    (syncd.spelling.look_alike); a username with accents also in NFD, in case the
    platform holds it so (it matches usernames exactly)."""
    synced = snapshot.employees
    new = [e for e in directory.employees.values() if e.id not in synced]
    # Usernames syncd holds, gathered only when someone is new (most runs: nobody).
    known = {look_alike(e.username) for e in synced.values()} if new else set()
    found: list[str] = []
    for e in new:
        if look_alike(e.username) not in known:
            found.append(e.username)
            if not e.username.isascii() and (nfd := normalize("NFD", e.username)) != e.username:
                found.append(nfd)
    return found


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
    if match_by != "username" and not snapshot.employees:
        records = client.list_employees(org_id=view.root_id, recursion=True)
    else:
        records = client.employees_by_username(unknown)
    found = [_platform_person(r) for r in records if r.username]
    # Keyed by look-alike key: the planner finds accounts spelled another way (and, an
    # account in NFD and one in NFC both there, the NFC one, which is the source's).
    in_nfc_last = sorted(found, key=lambda p: p.username == nfc(p.username))
    people = {look_alike(p.username): p for p in in_nfc_last}
    by_key: dict[str, list[PlatformPerson]] = {}
    if match_by != "username" and not snapshot.employees:
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
    )


def newest(stamps: Iterable[int | None]) -> int | None:
    """The latest of these ``last_modified`` stamps: the next read's ``refresh_time``."""
    return max((s for s in stamps if s is not None), default=None)


@dataclass(frozen=True, slots=True)
class Listing:
    """Where a complete read lists the organization's employees: ``parts`` as (node id,
    with its descendants); ``whole``: they cover the tree (else: the nodes whose count
    moved, each alone)."""

    parts: Sequence[tuple[int, bool]]
    whole: bool


def _listing_for(
    root_id: int,
    nodes: Mapping[int, PlatformNode],
    counts: Mapping[int, int | None],
    census: Census | None,
    since: int | None,
    now: int,
) -> tuple[Listing, Census | None]:
    """What this complete read lists, and the census the next one compares with: the
    whole tree when no census stands (none yet, a day old, no cursor, a node without a
    count), else the nodes whose count moved, unless listing the whole costs fewer calls."""
    whole = Listing(listing_parts(root_id, nodes), whole=True)
    if any(c is None for c in counts.values()):
        return whole, None
    known = {k: c for k, c in counts.items() if c is not None}
    if census is None or since is None or now - census.listed_at >= CENSUS_EVERY_MS:
        return whole, Census(now, known)
    moved = [k for k, c in known.items() if census.counts.get(k) != c]
    if len(moved) >= len(whole.parts):
        return whole, Census(now, known)
    return Listing([(k, False) for k in moved], whole=False), Census(census.listed_at, known)


def _people_drift(
    client: PlatformClient,
    snapshot: Callable[[], Snapshot],
    root_id: int,
    listing: Listing | None,
    since: int | None,
    concurrency: int,
) -> tuple[dict[str, PlatformEmployee], frozenset[str]]:
    """The people syncd holds who changed on the platform, and those deleted there.

    ``listing``: where to list the organization's employees (complete reads), None to
    read only whom D3 names. Once syncd has synced (a cursor), a whole listing is made
    while the snapshot loads; on the first drift read (no cursor), everyone's record is
    compared.
    """
    named = None
    if since is not None:
        named = set(_usernames(client.users(refresh_time=since, page_size=USERS_PAGE)))
    early = None
    if listing is not None and listing.whole and named is not None:
        early = _listing(client, listing.parts, concurrency, named, since)
    loaded = snapshot()
    synced = loaded.employees
    if not synced:
        return {}, frozenset()
    if listing is not None and listing.whole:
        present, found = early or _listing(client, listing.parts, concurrency, named, since)
        owned = set(store.usernames(synced))
        # Missing from every part: deleted, or moved between two parts while they were
        # listed. Asked about by name, only those the platform does not know are gone.
        missing = [u for u in owned if u not in present]
        there = _present(client.employee_records(missing)) if missing else []
        found += _employees(_changed(there, named, since))
        changed = {p.username: p for p in found if p.username in owned}
        return changed, frozenset(missing).difference(_usernames(there))
    if named is None:  # never read before: every user is new
        named = set(_usernames(client.users(page_size=USERS_PAGE, concurrency=concurrency)))
    moved = _moved(loaded, root_id, listing.parts) if listing is not None else {}
    present, found = _listing(client, [(n, False) for n in moved], concurrency, named, since)
    placed = loaded.placed(list(moved.values())) if moved else {}
    expected = {synced[k].username for ids in placed.values() for k in ids if k in synced}
    owned = store.holding(synced, [p.username for p in found])
    changed = {p.username: p for p in found if p.username in owned}
    # Named by D3 and not read in a listed node, or placed in one and not listed there:
    # asked about by name; those the platform no longer has are gone.
    wanted = store.holding(synced, named).difference(changed) | expected.difference(present)
    records = client.employee_records(list(wanted)) if wanted else ()
    changed.update((p.username, p) for p in _employees(_present(records)))
    return changed, frozenset(wanted.difference(changed))


def _moved(snapshot: Snapshot, root_id: int, parts: Iterable[tuple[int, bool]]) -> dict[int, str]:
    """Of the nodes whose count moved, those syncd places people in, each with its
    department's source id ("" the root: a position naming no department)."""
    ours = {d.node_id: k for k, d in snapshot.departments.items() if d.node_id is not None}
    ours[root_id] = ""
    return {node_id: ours[node_id] for node_id, _ in parts if node_id in ours}


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
    named: set[str] | None,
    since: int | None,
) -> tuple[set[str], list[PlatformEmployee]]:
    """Every username the parts list, and the records of those changed there (see
    ``_changed``); a part's answer is let go of as soon as it is read."""

    def part(where: tuple[int, bool]) -> tuple[list[str], list[PlatformEmployee]]:
        records = _present(client.employee_listing(where[0], recursion=where[1]))
        return _usernames(records), list(_employees(_changed(records, named, since)))

    present: set[str] = set()
    found: list[PlatformEmployee] = []
    if not parts:  # no node's count moved: most runs
        return present, found
    with ThreadPoolExecutor(concurrency, thread_name_prefix="listing") as pool:
        for usernames, employees in pool.map(part, parts):
            present.update(usernames)
            found += employees
    return present, found


def _changed(
    records: list[Mapping[str, Any]], named: set[str] | None, since: int | None
) -> list[Mapping[str, Any]]:
    """The records of people changed on the platform: D3 ``named`` them, or their record
    is later than ``since`` (where a platform does not refresh the user with it). No
    cursor: everyone's."""
    if named is None or since is None:
        return records
    return [
        r
        for r in records
        if r.get("username") in named or (type(t := r.get("last_modified")) is int and t > since)
    ]


def _present(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records of employees, those a platform keeps with their deleted flag left out."""
    return [r for r in records if r.get("deleted") is not True]


def _employees(records: Iterable[Mapping[str, Any]]) -> Iterator[PlatformEmployee]:
    """The records as drift compares them."""
    for record in records:
        found = _platform_employee(record)
        if found is not None:
            yield found


def _usernames(users: Iterable[Mapping[str, Any]]) -> list[str]:
    return [u["username"] for u in users if isinstance(u.get("username"), str)]


def _platform_employee(record: Mapping[str, Any]) -> PlatformEmployee | None:
    """A list-form record as drift compares it; None for one without id or username, or
    deleted (a hundred thousand of them are read after a big run: no model is built)."""
    employee_id, username = record.get("id"), record.get("username")
    if not isinstance(employee_id, int) or not isinstance(username, str):
        return None
    if record.get("deleted") is True:  # a removed employee, where a platform keeps the record
        return None
    positions = []
    for p in record.get("positions") or ():
        org_id = p.get("org_id") if isinstance(p, dict) else None
        if isinstance(org_id, int):
            title = p.get("job_title") or ""
            positions.append((org_id, p.get("primary") is True, p.get("chief") is True, title))
    stamp = record.get("last_modified")
    return PlatformEmployee(
        employee_id,
        username,
        record.get("locked") is True or record.get("disabled") is True,
        {name: record[name] for name in COMPARED if name in record},
        tuple(positions),
        stamp if isinstance(stamp, int) else None,
    )


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
