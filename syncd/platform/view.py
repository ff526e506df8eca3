"""What planning needs from the platform, read before each plan: the view of the platform.

- the root node, and every node (complete reads) or those changed since the nodes'
  ``refresh_time`` cursor (department drift);
- the people syncd holds who changed there since the people's cursor: the users list
  (D3) with ``refresh_time`` names them, the employee list (G) by username gives their
  records (people drift); on complete reads, every username on the platform, to find the
  people deleted there (deletions are invisible to ``refresh_time``);
- accounts the source names that syncd never synced, to adopt rather than duplicate.

A cursor is the newest ``last_modified`` seen; the runner moves it after a clean run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from syncd.config import Settings
from syncd.model import Directory
from syncd.plan import PlatformEmployee, PlatformNode, PlatformPerson, PlatformView, Snapshot
from syncd.platform.client import PlatformClient
from syncd.platform.schemas import EmployeeRecord, Node

USERS_PAGE = 1000  # users per page of the D3 list
# The list form's profile fields that people drift compares (see syncd.plan.drift).
COMPARED = ("name", "email", "mobile", "sn", "gender", "sort_order", "senior")


def fetch_view(
    client: PlatformClient,
    snapshot: Snapshot,
    directory: Directory,
    cursors: Mapping[str, int | None],
    settings: Settings,
) -> PlatformView:
    """Read the root, the nodes, the people changed or gone, and accounts to adopt.

    ``cursors``: ``nodes`` and ``people``, the ``refresh_time`` of each read (None: never).
    """
    root = client.root()
    since_nodes = cursors.get("nodes")
    complete = directory.complete or not snapshot.departments or since_nodes is None
    nodes: Mapping[int, PlatformNode] = {}
    if complete:
        nodes = _nodes(client.page_orgs())
    elif settings.sync.drift_check:
        nodes = _nodes(client.page_orgs(refresh_time=since_nodes))
    changed, listed = _people_drift(client, snapshot, directory.complete, cursors.get("people"))
    people: dict[str, PlatformPerson] = {}
    known = {e.username.casefold() for e in snapshot.employees.values()}
    unknown = [
        e.username
        for e in directory.employees.values()
        if e.id not in snapshot.employees and e.username.casefold() not in known
    ]
    # An organization with nobody in it has nobody to adopt: skip the look-ups.
    if unknown and (root.all_employee_count or 0) > 0:
        for record in client.employees_by_username(unknown):
            if record.username:
                people[record.username.casefold()] = PlatformPerson(
                    record.id, record.username, record.locked or record.disabled
                )
    return PlatformView(
        root.id, root.name or "", nodes, complete, people, changed=changed, listed=listed
    )


def newest(stamps: Iterable[int | None]) -> int | None:
    """The latest of these ``last_modified`` stamps: the next read's ``refresh_time``."""
    return max((s for s in stamps if s is not None), default=None)


def _people_drift(
    client: PlatformClient, snapshot: Snapshot, complete: bool, since: int | None
) -> tuple[dict[str, PlatformEmployee], frozenset[str] | None]:
    """The people syncd holds who changed on the platform, and (complete reads) who is there."""
    if not snapshot.employees:
        return {}, None
    listed = None
    if complete:
        listed = frozenset(_usernames(client.users(page_size=USERS_PAGE)))
    if since is None and listed is not None:
        changed_names: Iterable[str] = listed  # never read before: everyone is new to syncd
    else:
        changed_names = _usernames(client.users(refresh_time=since, page_size=USERS_PAGE))
    owned = {s.username for s in snapshot.employees.values()}
    wanted = [u for u in changed_names if u in owned]
    records = client.employees_by_username(wanted) if wanted else []
    changed = {r.username: _platform_employee(r) for r in records if r.username in owned}
    return changed, listed


def _usernames(users: Iterable[dict[str, Any]]) -> list[str]:
    return [u["username"] for u in users if isinstance(u.get("username"), str)]


def _platform_employee(record: EmployeeRecord) -> PlatformEmployee:
    given = record.model_fields_set
    return PlatformEmployee(
        record.id,
        record.username or "",
        record.locked or record.disabled,
        {name: getattr(record, name) for name in COMPARED if name in given},
        tuple(
            (p.org_id, p.primary, p.chief, p.job_title or "")
            for p in record.positions
            if p.org_id is not None
        ),
        record.last_modified,
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
