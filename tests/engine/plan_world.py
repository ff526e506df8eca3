"""The plain-value planner tests' shared world: a small company, its perfect sync (the
snapshot and the platform's view with nothing left to do), and the platform's view of a
person changed there. No database, no platform, no clock."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from syncd.model import Department, Directory, Employee, Kind, Position, build_directory
from syncd.plan import (
    Action,
    Change,
    Limits,
    Plan,
    Planning,
    PlatformEmployee,
    PlatformNode,
    PlatformPerson,
    PlatformView,
    Policy,
    Snapshot,
    SyncedDepartment,
    SyncedEmployee,
    check_guards,
    department_fields,
    department_hash,
    employee_fields,
    employee_hash,
)
from syncd.plan.needs import weighed

ROOT = 1
NOW = 1_800_000_000_000


def dept(id: str, name: str, parent: str | None = None, **kw: Any) -> Department:
    return Department(id, name, parent, **kw)


def person(id: str, username: str, department: str | None = "rd", **kw: Any) -> Employee:
    positions = (Position(department, primary=True),) if department else ()
    return Employee(id, username, kw.pop("name", username.title()), positions, **kw)


def directory(
    departments: Iterable[Department], employees: Iterable[Employee], **kw: Any
) -> Directory:
    return build_directory(
        [(f"departments.csv:{n}", d) for n, d in enumerate(departments, 2)],
        [(f"employees.csv:{n}", e) for n, e in enumerate(employees, 2)],
        **kw,
    )


COMPANY = [dept("rd", "R&D"), dept("be", "Backend", "rd"), dept("sales", "Sales")]
STAFF = [
    person("e1", "alice", "rd"),
    person("e2", "bob", "be", mobile="13800000002"),
    person("e3", "carol", "sales"),
]
# Carol with every unique value a record can carry: the person the hold and retry tests move
CAROL = STAFF[2]._replace(mobile="13800000003", sn="S3", email="carol@acme.example")
KNOWN = [*STAFF[:2], CAROL]


def synced(
    d: Directory,
    *,
    locked: Mapping[str, int] | None = None,
    policy: Policy | None = None,
) -> tuple[Snapshot, PlatformView]:
    """The snapshot and platform view after a perfect sync of ``d``: nothing left to do."""
    policy = policy or Policy()
    fields: dict[tuple[Kind, str], Mapping[str, Any]] = {}
    departments: dict[str, SyncedDepartment] = {}
    nodes: dict[int, PlatformNode] = {ROOT: PlatformNode(ROOT, "Acme", None)}
    ordered = sorted(d.departments.values(), key=lambda x: len(d.path(x.id)))
    for n, x in enumerate(ordered, 100):
        path = "/".join(("Acme", *d.path(x.id)))
        departments[x.id] = SyncedDepartment(x.id, n, path, department_hash(x))
        fields[(Kind.DEPARTMENT, x.id)] = department_fields(x)
        parent = ROOT if x.parent_id is None else departments[x.parent_id].node_id
        nodes[n] = PlatformNode(n, x.name, parent, x.id, x.sort_order)
    employees = {}
    for n, e in enumerate(d.employees.values(), 1000):
        since = (locked or {}).get(e.id)
        employees[e.id] = SyncedEmployee(
            e.id,
            e.username,
            n,
            employee_hash(e, policy.extended_fields),
            locked=since is not None,
            lock_reason="missing" if since is not None else None,
            locked_since=since,
        )
        fields[(Kind.EMPLOYEE, e.id)] = employee_fields(e, policy.extended_fields)
    snapshot = Snapshot(departments, employees, fields)
    return snapshot, PlatformView(ROOT, "Acme", nodes, True)


def empty_view(
    nodes: Iterable[PlatformNode] = (), people: Iterable[PlatformPerson] = ()
) -> PlatformView:
    listed = {ROOT: PlatformNode(ROOT, "Acme", None), **{n.id: n for n in nodes}}
    return PlatformView(ROOT, "Acme", listed, True, {p.username.casefold(): p for p in people})


def actions(p: Any) -> list[tuple[str, str, str]]:
    return [(c.kind.value, c.action.value, c.key) for c in p.changes]


def by_action(p: Plan, kind: Kind, *wanted: Action) -> list[Change]:
    return [c for c in p.changes if c.kind is kind and c.action in wanted]


def changed_there(
    view: PlatformView, snapshot: Snapshot, username: str, **overrides: Any
) -> PlatformView:
    """The view, with one person changed on the platform (their record as it is there)."""
    s = next(s for s in snapshot.employees.values() if s.username == username)
    written = snapshot.written(Kind.EMPLOYEE, s.source_id) or {}
    node = {d.source_id: d.node_id for d in snapshot.departments.values()}
    positions = tuple(
        (node[p["department"]], p["primary"], p["chief"], p["job_title"] or "")
        for p in written["positions"]
    )
    record = PlatformEmployee(
        s.employee_id or 0,
        username,
        overrides.pop("locked", False),
        {k: written.get(k) for k in ("name", "email", "mobile", "sn")} | overrides,
        overrides.pop("positions", positions),
        NOW,
    )
    return replace(view, changed={**view.changed, username: record})


def guards(p: Plan, d: Directory, s: Snapshot, **limits: Any) -> dict[str, Any]:
    """The guards' decisions on a plan, by name, under these limits."""
    return {g.name: g for g in check_guards(p, d, s, Limits(**limits))}


def planned_as_the_runner_does(
    d: Directory, snapshot: Snapshot, view: PlatformView, policy: Policy
) -> Plan:
    """Planned with only the written fields ``weighed`` names loaded first, as the runner
    does (a record weighed and not loaded raises FieldsNotLoaded), the others given when
    the plan asks for them."""
    first = replace(snapshot, fields_of=frozenset(weighed(d, snapshot, view)))
    planning = Planning(d, first, view, policy, NOW)
    while (wanted := planning.wanted()) is not None:
        planning.give({k: snapshot.written(Kind.EMPLOYEE, k) for k in wanted})
    return planning.plan()
