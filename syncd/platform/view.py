"""What planning needs from the platform, read before each plan: the view of the platform.

- the root node, and every node (complete reads) or those changed since the nodes'
  ``refresh_time`` cursor (department drift);
- the people syncd holds who changed there since the people's cursor: the users list
  (D3) with ``refresh_time`` names them, the employee list (G) by username gives their
  records (people drift); on complete reads, every username on the platform, to find the
  people deleted there (deletions are invisible to ``refresh_time``);
- accounts the source names that syncd never synced, to adopt rather than duplicate.

``read_platform`` reads what does not depend on the source, while the source is read;
``with_adoptions`` adds the accounts to adopt once the directory is known. A cursor is
the newest ``last_modified`` seen; the runner moves it after a clean run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from syncd import snapshot as store
from syncd.config import Settings, platform_of
from syncd.model import Directory, MatchKey, match_value
from syncd.plan import PlatformEmployee, PlatformNode, PlatformPerson, PlatformView, Snapshot
from syncd.platform.client import PlatformClient
from syncd.platform.schemas import EmployeeRecord, Node

# Users asked per page of the D3 list (a platform may give fewer). With platform.concurrency
# pages in flight, 5,000 a page held 27 MB more at 100,000 people and was no faster.
USERS_PAGE = 2000
# The list form's profile fields that people drift compares (see syncd.plan.drift).
COMPARED = ("name", "email", "mobile", "sn", "gender", "sort_order", "senior", "properties")


def read_platform(
    client: PlatformClient,
    snapshot: Callable[[], Snapshot],
    complete: bool,
    cursors: Mapping[str, int | None],
    settings: Settings,
) -> PlatformView:
    """What the view holds whatever the source says: made while the source is read.

    ``complete``: whether the source read is expected to be complete (then every node and
    every username are listed). ``snapshot`` waits for the snapshot, which is loaded while
    the listings that do not need it are read. Accounts to adopt come after the read
    (``with_adoptions``).
    """
    root = client.root()
    since_nodes = cursors.get("nodes")
    listing = complete or since_nodes is None or not snapshot().departments
    nodes: Mapping[int, PlatformNode] = {}
    if listing:
        nodes = _nodes(client.page_orgs())
    elif settings.sync.drift_check:
        nodes = _nodes(client.page_orgs(refresh_time=since_nodes))
    changed, listed = _people_drift(
        client, snapshot, complete, cursors.get("people"), platform_of(settings).concurrency
    )
    return PlatformView(
        root.id,
        root.name or "",
        nodes,
        listing,
        changed=changed,
        listed=listed,
        employee_count=root.all_employee_count or 0,
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
    if not directory.complete and view.listed is not None:
        view = replace(view, listed=None)  # an incremental read finds no one deleted
    return adopting(view, client, snapshot, newcomers(snapshot, directory), match_by)


def newcomers(snapshot: Snapshot, directory: Directory) -> list[str]:
    """Usernames the source names that no record syncd synced holds, in any letter case."""
    synced = snapshot.employees
    new = [e for e in directory.employees.values() if e.id not in synced]
    # Usernames syncd holds, gathered only when someone is new (most runs: nobody).
    known = {e.username.casefold() for e in synced.values()} if new else set()
    return [e.username for e in new if e.username.casefold() not in known]


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
    people = {p.username.casefold(): p for p in found}
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


def _people_drift(
    client: PlatformClient,
    snapshot: Callable[[], Snapshot],
    complete: bool,
    since: int | None,
    concurrency: int,
) -> tuple[dict[str, PlatformEmployee], frozenset[str] | None]:
    """The people syncd holds who changed on the platform, and (complete reads) who is there."""
    # Complete reads list every username: once syncd has synced (a cursor), before the
    # snapshot is loaded rather than after.
    listed = _all_usernames(client, concurrency) if complete and since is not None else None
    synced = snapshot().employees
    if not synced:
        return {}, None
    if complete:
        owned = set(store.usernames(synced))
        listed = listed if listed is not None else _all_usernames(client, concurrency)
        # Missing from the list: deleted, or passed over while the list changed between
        # pages. Asked about by name, only those the platform does not know are gone.
        missing = [u for u in owned if u not in listed]
        if missing:
            there = client.employees_by_username(missing)
            listed = listed | {r.username for r in there if r.username}
    if since is None and listed is not None:
        changed_names: list[str] | frozenset[str] = listed  # never read before: all are new
    else:
        changed_names = _usernames(client.users(refresh_time=since, page_size=USERS_PAGE))
    if not complete:  # only the people changed lately are looked for among syncd's
        owned = store.holding(synced, changed_names)
    wanted = [u for u in changed_names if u in owned]
    changed = {}
    for record in client.employee_records(wanted) if wanted else ():
        found = _platform_employee(record)
        if found is not None and found.username in owned:
            changed[found.username] = found
    return changed, listed


def _all_usernames(client: PlatformClient, concurrency: int) -> frozenset[str]:
    return frozenset(_usernames(client.users(page_size=USERS_PAGE, concurrency=concurrency)))


def _usernames(users: Iterable[dict[str, Any]]) -> list[str]:
    return [u["username"] for u in users if isinstance(u.get("username"), str)]


def _platform_employee(record: Mapping[str, Any]) -> PlatformEmployee | None:
    """A list-form record as drift compares it; None for one without id or username
    (a hundred thousand of them are read after a big run: no model is built)."""
    employee_id, username = record.get("id"), record.get("username")
    if not isinstance(employee_id, int) or not isinstance(username, str):
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
