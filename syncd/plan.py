"""The plan: what must change on the platform, as a value, and the guards that check it.

``plan()`` is a pure function of the Directory (what the source says), the Snapshot
(what syncd last wrote, and the platform ids it learned), a PlatformView (what the
platform holds now, as far as asked) and the Policy. It does no I/O and reads no
clock: the time comes in as ``now_ms``. It returns changes in the order the
executor applies them:

1. create departments, parents first;  2. update and move departments;
3. create and update employees;  4. unlock, then lock;  5. remove employees;
6. delete departments, children first.

Only records in the snapshot are ever updated, locked, removed or deleted; nodes and
people found on the platform are adopted (matched by serial_no, name path or username)
and updated like the rest; what the source never named is left alone and listed.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from operator import attrgetter
from typing import Any

from syncd.model import Department, Directory, Employee, Kind, Position, State

DAY_MS = 86_400_000


class Action(StrEnum):
    CREATE = "create"
    ADOPT = "adopt"  # found on the platform as it should be: recorded, nothing sent
    UPDATE = "update"
    MOVE = "move"
    UNLOCK = "unlock"
    LOCK = "lock"
    REMOVE = "remove"
    DELETE = "delete"


REMOVING = frozenset({Action.LOCK, Action.REMOVE, Action.DELETE})


# ---------------------------------------------------------------- inputs


@dataclass(frozen=True, slots=True)
class SyncedDepartment:
    """What syncd last wrote for a department, and where it lives on the platform."""

    source_id: str
    node_id: int
    name_path: str  # root name first: "Acme/R&D"
    hash: str


@dataclass(frozen=True, slots=True)
class SyncedEmployee:
    source_id: str
    username: str
    employee_id: int | None
    hash: str
    locked: bool = False
    lock_reason: str | None = None
    locked_since: int | None = None


def _no_fields(kind: Kind, source_id: str) -> Mapping[str, Any] | None:
    return None


@dataclass(frozen=True)
class Snapshot:
    departments: Mapping[str, SyncedDepartment] = field(default_factory=dict)
    employees: Mapping[str, SyncedEmployee] = field(default_factory=dict)
    # The fields syncd last wrote, looked up only for the records that changed.
    fields: Callable[[Kind, str], Mapping[str, Any] | None] = _no_fields


@dataclass(frozen=True, slots=True)
class PlatformNode:
    id: int
    name: str
    parent_id: int | None
    serial_no: str | None = None
    sort_order: int | None = None
    last_modified: int | None = None


@dataclass(frozen=True, slots=True)
class PlatformPerson:
    id: int
    username: str
    locked: bool = False


@dataclass(frozen=True)
class PlatformView:
    """What the runner read from the platform before planning."""

    root_id: int
    root_name: str
    nodes: Mapping[int, PlatformNode] = field(default_factory=dict)
    complete_listing: bool = False  # nodes holds every node (else: those changed lately)
    people: Mapping[str, PlatformPerson] = field(default_factory=dict)  # casefolded username
    _paths: dict[int, str] = field(default_factory=dict, repr=False, compare=False)

    def name_paths(self) -> dict[int, str]:
        """Node id -> name path ("Acme/R&D"), for the nodes listed (orphans and cycles left out)."""
        if self._paths or not self.nodes:
            return self._paths
        cache: dict[int, str] = {self.root_id: self.root_name}
        for node_id in self.nodes:
            chain: list[PlatformNode] = []
            current: int | None = node_id
            while current is not None and current not in cache:
                node = self.nodes.get(current)
                if node is None or len(chain) > len(self.nodes):
                    break
                chain.append(node)
                current = node.parent_id
            if current is None or current not in cache:
                continue
            prefix = cache[current]
            for node in reversed(chain):
                prefix = f"{prefix}/{node.name}"
                cache[node.id] = prefix
        del cache[self.root_id]
        self._paths.update(cache)
        return self._paths


@dataclass(frozen=True)
class Policy:
    leaver_policy: str = "lock_then_remove"  # lock, remove, lock_then_remove
    remove_after_days: int = 30
    exclude_usernames: tuple[str, ...] = ()
    exclude_departments: tuple[str, ...] = ()  # source ids or name paths below the root
    username_change: str = "conflict"  # or remove_and_create
    extended_fields: Mapping[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------- outputs


@dataclass(frozen=True, slots=True)
class Change:
    kind: Kind
    action: Action
    key: str  # source id
    display: str  # department: full name path as it is now; employee: username
    record: Department | Employee | None = None  # the wanted state
    hash: str = ""  # of the wanted fields
    target_id: int | None = None  # platform node or employee id, when known
    new_path: str = ""  # department: full name path once applied
    depth: int = 0  # department: 1 for a top-level department
    reason: str = ""
    previous_key: str | None = None  # employee: the source id this record was synced under
    platform_before: Mapping[str, Any] | None = None  # adoption and drift: the platform's values
    lookup: Callable[[Kind, str], Mapping[str, Any] | None] = _no_fields
    extended_fields: Mapping[str, str] | None = None

    @property
    def before(self) -> Mapping[str, Any] | None:
        if self.platform_before is not None:
            return self.platform_before
        if self.action in (Action.CREATE, Action.ADOPT):
            return None
        return self.lookup(self.kind, self.key)

    @property
    def after(self) -> Mapping[str, Any] | None:
        if isinstance(self.record, Department):
            return department_fields(self.record)
        if isinstance(self.record, Employee):
            return employee_fields(self.record, self.extended_fields or {})
        return None

    @property
    def message(self) -> str:
        """One human sentence: what will be done, and why."""
        text = _describe(self)
        return f"{text}: {self.reason}" if self.reason else text


@dataclass(frozen=True, slots=True)
class Note:
    """Something the report must say that is not a change: a conflict, a drift, a skip."""

    kind: str  # conflict, drift, unowned, skipped, leavers
    key: str
    message: str


@dataclass(frozen=True)
class Plan:
    changes: tuple[Change, ...]
    notes: tuple[Note, ...] = ()

    @property
    def removals(self) -> int:
        """Locks, removals and department deletions: what the removal guard counts."""
        return sum(1 for c in self.changes if c.action in REMOVING)

    def counts(self) -> Counter[tuple[Kind, Action]]:
        return Counter((c.kind, c.action) for c in self.changes)


# ---------------------------------------------------------------- fields and hashes


def _digest(values: tuple[Any, ...]) -> str:
    return hashlib.blake2b(repr(values).encode(), digest_size=12).hexdigest()


def department_fields(d: Department) -> dict[str, Any]:
    return {
        "name": d.name,
        "parent": d.parent_id,
        "sort_order": d.sort_order,
        "sn": d.sn,
        "en_name": d.en_name,
    }


def department_hash(d: Department) -> str:
    # The fields' values in their order: the very tuple hashed before, so stored hashes hold.
    return _digest(tuple(department_fields(d).values()))


def _extended(e: Employee, mapping: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    if not mapping or not e.extra:
        return ()
    return tuple(sorted((mapping[k], v) for k, v in e.extra if k in mapping))


def employee_fields(e: Employee, extended_fields: Mapping[str, str]) -> dict[str, Any]:
    return {
        "username": e.username,
        "name": e.name,
        "en_name": e.en_name,
        "email": e.email,
        "mobile": e.mobile,
        "tel": e.tel,
        "sn": e.sn,
        "gender": e.gender,
        "birthday": e.birthday,
        "job_title": e.job_title,
        "sort_order": e.sort_order,
        "senior": e.senior,
        "positions": [
            {
                "department": p.department_id,
                "job_title": p.job_title,
                "primary": p.primary,
                "chief": p.chief,
            }
            for p in e.positions
        ],
        "extended": extended_values(e, extended_fields),
    }


def extended_values(e: Employee, extended_fields: Mapping[str, str]) -> dict[str, str]:
    """Platform field -> value, for the employee's extra attributes that settings map."""
    return dict(_extended(e, extended_fields))


# repr() of the tuple of an employee's hashed values, filled in without making the tuple.
_EMPLOYEE_TEXT = "(" + ", ".join(["%r"] * 12 + ["%s", "%r"]) + ")"


# repr() of a Position, as its dataclass makes it, without the dataclass's guard against
# recursion (a Position holds no containers): half the cost, for every person every run.
_SHOWN = [f.name for f in fields(Position) if f.repr]
_POSITION_TEXT = Position.__qualname__ + "(" + ", ".join(f"{n}=%r" for n in _SHOWN) + ")"
_position_values = attrgetter(*_SHOWN)


def _positions_text(positions: tuple[Position, ...]) -> str:
    """Exactly repr(positions)."""
    if len(positions) == 1:
        return "(" + _POSITION_TEXT % _position_values(positions[0]) + ",)"
    return "(" + ", ".join([_POSITION_TEXT % _position_values(p) for p in positions]) + ")"


def employee_hash(e: Employee, extended_fields: Mapping[str, str]) -> str:
    # The lock state is not hashed: it is kept, and changed, on its own. The text hashed
    # is exactly repr() of the values' tuple, as it always was (hashes stored in snapshots
    # must not change); made this way it costs 40% less, once per person and run.
    text = _EMPLOYEE_TEXT % (
        e.username,
        e.name,
        e.en_name,
        e.email,
        e.mobile,
        e.tel,
        e.sn,
        e.gender,
        e.birthday,
        e.job_title,
        e.sort_order,
        e.senior,
        _positions_text(e.positions),
        _extended(e, extended_fields),
    )
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


# ---------------------------------------------------------------- the plan


def plan(
    directory: Directory,
    snapshot: Snapshot,
    view: PlatformView,
    policy: Policy,
    now_ms: int,
) -> Plan:
    """Compare what the source says with what syncd wrote and the platform holds."""
    notes: list[Note] = []
    departments = _DepartmentPlanner(directory, snapshot, view, policy, notes).run()
    employees = _EmployeePlanner(directory, snapshot, view, policy, notes, now_ms).run()
    creates, updates, deletes = departments
    replaced, upserts, unlocks, locks, removes = employees
    return Plan(
        changes=(*creates, *updates, *replaced, *upserts, *unlocks, *locks, *removes, *deletes),
        notes=tuple(notes),
    )


def _people(n: int) -> str:
    return "1 person" if n == 1 else f"{n} people"


def _excluded(value: str, patterns: Sequence[str]) -> bool:
    folded = value.casefold()
    return any(fnmatch.fnmatchcase(folded, p.casefold()) for p in patterns)


class _DepartmentPlanner:
    def __init__(
        self,
        directory: Directory,
        snapshot: Snapshot,
        view: PlatformView,
        policy: Policy,
        notes: list[Note],
    ) -> None:
        self.directory = directory
        self.snapshot = snapshot
        self.view = view
        self.policy = policy
        self.notes = notes
        self.root = view.root_name
        self.by_serial = {n.serial_no: n for n in view.nodes.values() if n.serial_no}
        self.owned_nodes = {d.node_id for d in snapshot.departments.values()}
        self.skipped: set[str] = set()  # not planned, so neither is their subtree
        self.adopted: dict[str, int] = {}  # source id -> the platform node adopted this run
        # Nodes of the departments planned this run: they end where the source puts them.
        self.placed: set[int] = set()

    def path(self, source_id: str) -> str:
        return "/".join((self.root, *self.directory.path(source_id)))

    def excluded(self, source_id: str, relative_path: str) -> bool:
        patterns = self.policy.exclude_departments
        return bool(patterns) and (
            _excluded(source_id, patterns) or _excluded(relative_path, patterns)
        )

    def run(self) -> tuple[list[Change], list[Change], list[Change]]:
        creates: list[Change] = []
        updates: list[Change] = []
        platform_paths = self._platform_paths() if self.view.complete_listing else {}
        ambiguous = {p for p, ids in platform_paths.items() if len(ids) > 1}
        # Parents before children, so a skipped parent skips its subtree; then by path, for
        # a plan that reads the same every time.
        ordered = sorted(
            self.directory.departments,
            key=lambda i: (len(self.directory.path(i)), self.directory.path(i)),
        )
        for source_id in ordered:
            d = self.directory.departments[source_id]
            relative = "/".join(self.directory.path(source_id))
            if self.excluded(source_id, relative):
                self.skip(source_id, f"department {relative} is excluded by settings")
            elif d.parent_id is not None and d.parent_id in self.skipped:
                self.skip(source_id, f"department {relative}: its parent department is not synced")
            else:
                change = self._plan_one(d, platform_paths, ambiguous)
                if change is not None:
                    (creates if change.action is Action.CREATE else updates).append(change)
        # Moves and renames in order of their new depth: a new parent is always in place first.
        updates.sort(key=lambda c: c.depth)
        return creates, updates, self._deletes()

    def skip(self, source_id: str, why: str, kind: str = "skipped") -> None:
        self.skipped.add(source_id)
        self.notes.append(Note(kind, source_id, why))

    def _plan_one(
        self, d: Department, platform_paths: Mapping[str, list[int]], ambiguous: set[str]
    ) -> Change | None:
        wanted = department_hash(d)
        path = self.path(d.id)
        depth = len(self.directory.path(d.id))
        synced = self.snapshot.departments.get(d.id)
        if synced is not None:
            self.placed.add(synced.node_id)
            return self._plan_synced(d, synced, wanted, path, depth)
        node = self.by_serial.get(d.id)
        how = "serial_no"
        if node is None and path in platform_paths:
            if path in ambiguous:
                self.skip(
                    d.id,
                    f"{path}: several nodes on the platform have this name path; the "
                    "department and its subtree are not synced until one is renamed",
                    "conflict",
                )
                return None
            node = self.view.nodes[platform_paths[path][0]]
            how = "name path"
            if node.id in self.owned_nodes or (node.serial_no and node.serial_no != d.id):
                node = None  # that node belongs to another department
        if node is None:
            return Change(
                Kind.DEPARTMENT, Action.CREATE, d.id, path, d, wanted, new_path=path, depth=depth
            )
        return self._adopt(d, node, wanted, path, depth, how)

    def _plan_synced(
        self, d: Department, synced: SyncedDepartment, wanted: str, path: str, depth: int
    ) -> Change | None:
        node = self.view.nodes.get(synced.node_id)
        if node is None and self.view.complete_listing:
            self.notes.append(
                Note(
                    "drift", d.id, f"{synced.name_path} was deleted on the platform: recreating it"
                )
            )
            return Change(
                Kind.DEPARTMENT,
                Action.CREATE,
                d.id,
                path,
                d,
                wanted,
                new_path=path,
                depth=depth,
                reason="deleted on the platform",
            )
        drift = self._drift(d, synced, node) if node is not None else None
        if synced.hash == wanted and drift is None:
            return None
        action = Action.UPDATE
        before = self.snapshot.fields(Kind.DEPARTMENT, d.id)
        if before is None or before.get("parent") != d.parent_id:
            action = Action.MOVE
        if drift is not None:
            self.notes.append(
                Note("drift", d.id, f"{synced.name_path}: {drift} on the platform; putting it back")
            )
            action = Action.MOVE if "moved" in drift else action
        return Change(
            Kind.DEPARTMENT,
            action,
            d.id,
            synced.name_path,
            d,
            wanted,
            synced.node_id,
            new_path=path,
            depth=depth,
            reason=f"drift: {drift}" if drift else "",
            lookup=self.snapshot.fields,
        )

    def _drift(self, d: Department, synced: SyncedDepartment, node: PlatformNode) -> str | None:
        """How the platform's node differs from what syncd last wrote, if it does."""
        written = self.snapshot.fields(Kind.DEPARTMENT, d.id) or {}
        found = []
        if "name" in written and node.name != written["name"]:
            found.append(f"renamed to {node.name!r}")
        parent = written.get("parent")
        expected_parent = (
            self.view.root_id
            if parent is None
            else getattr(self.snapshot.departments.get(parent), "node_id", None)
        )
        if expected_parent is not None and node.parent_id != expected_parent:
            found.append("moved")
        if written.get("sort_order") is not None and node.sort_order != written["sort_order"]:
            found.append("sort order changed")
        return ", ".join(found) or None

    def _adopt(
        self, d: Department, node: PlatformNode, wanted: str, path: str, depth: int, how: str
    ) -> Change:
        self.adopted[d.id] = node.id
        self.placed.add(node.id)
        parent_node = self.view.root_id
        if d.parent_id is not None:
            synced_parent = self.snapshot.departments.get(d.parent_id)
            # A parent adopted this run, just before (parents are planned first), counts too.
            parent_node = (
                synced_parent.node_id if synced_parent else self.adopted.get(d.parent_id, -1)
            )
        before = {
            "name": node.name,
            "parent_node": node.parent_id,
            "sort_order": node.sort_order,
            "serial_no": node.serial_no,
        }
        same = (
            node.serial_no == d.id
            and node.name == d.name
            and node.parent_id == parent_node
            and (d.sort_order is None or node.sort_order == d.sort_order)
        )
        action = Action.ADOPT if same else Action.UPDATE
        return Change(
            Kind.DEPARTMENT,
            action,
            d.id,
            path,
            d,
            wanted,
            node.id,
            new_path=path,
            depth=depth,
            reason=f"adopting the platform's node (matched by {how})",
            platform_before=before,
        )

    def _platform_paths(self) -> dict[str, list[int]]:
        """Name path -> node ids, for every node under the root (a path may be ambiguous)."""
        paths: dict[str, list[int]] = {}
        for node_id, path in self.view.name_paths().items():
            paths.setdefault(path, []).append(node_id)
        return paths

    def _deletes(self) -> list[Change]:
        if not self._deletes_known():
            return []
        rejected = self.directory.rejected_keys(Kind.DEPARTMENT)
        synced = self.snapshot.departments
        # A rejected or excluded department shields its whole subtree on the platform.
        shielded = [
            d.name_path + "/"
            for k, d in synced.items()
            if k in rejected or self.excluded(k, d.name_path.partition("/")[2])
        ]
        gone: dict[str, SyncedDepartment] = {}
        for source_id, d in synced.items():
            if source_id in self.directory.departments or source_id in rejected:
                continue
            if self.excluded(source_id, d.name_path.partition("/")[2]):
                continue
            if any(d.name_path.startswith(prefix) for prefix in shielded):
                continue
            gone[source_id] = d
        staying = self._staying_below(gone)
        deletes = []
        for source_id, d in gone.items():
            below = staying.get(d.node_id)
            if below is not None:
                self.notes.append(
                    Note(
                        "skipped",
                        source_id,
                        f"{d.name_path} is gone from the source but not deleted: {below} is "
                        "still below it on the platform",
                    )
                )
                continue
            deletes.append(
                Change(
                    Kind.DEPARTMENT,
                    Action.DELETE,
                    source_id,
                    d.name_path,
                    target_id=d.node_id,
                    depth=d.name_path.count("/"),
                    reason="no longer in the source",
                    lookup=self.snapshot.fields,
                )
            )
        deletes.sort(key=lambda c: (-c.depth, c.display))  # children first
        return deletes

    def _deletes_known(self) -> bool:
        """Whether departments absent from this read may be deleted: as for leavers, only
        after a complete read whose every rejected row still names its record."""
        directory = self.directory
        if not directory.complete:
            return False
        if any(r.kind is Kind.DEPARTMENT and not r.key for r in directory.rejected):
            if self.snapshot.departments:
                self.notes.append(
                    Note(
                        "leavers",
                        "",
                        "departments not deleted: some rejected department rows could not be "
                        "identified, so no department absent from this read is treated as gone",
                    )
                )
            return False
        # An unidentified employee row too: a cut or badly quoted employees file in the
        # paths layout loses the departments only its lost rows named, and rejects no
        # department row. The employees' planner says so in its note.
        return directory.leavers_known

    def _staying_below(self, gone: Mapping[str, SyncedDepartment]) -> dict[int, str]:
        """Nodes of ``gone`` under which a department stays after this run: node id -> the
        name path of one such department.

        What stays: a node only on the platform, or one of a rejected, excluded or skipped
        department (where it is now); the departments this plan places end where the
        source puts them, never under a department gone from it.
        """
        if not gone:
            return {}
        leaving = {d.node_id for d in gone.values()}
        found: dict[int, str] = {}  # also every ancestor, so each chain is climbed once
        nodes = self.view.nodes
        paths = self.view.name_paths()
        for node in nodes.values():
            if node.id == self.view.root_id or node.id in leaving or node.id in self.placed:
                continue
            label = paths.get(node.id, node.name)
            current = node.parent_id
            while current is not None and current in nodes:
                if current in found or current in self.placed:
                    break
                found[current] = label
                current = nodes[current].parent_id
        # Without a full listing the snapshot still knows where syncd put its own nodes.
        by_path = {d.name_path: d.node_id for d in gone.values()}
        for d in self.snapshot.departments.values():
            if d.node_id in leaving or d.node_id in self.placed:
                continue
            parts = d.name_path.split("/")
            for n in range(len(parts) - 1, 0, -1):
                node_id = by_path.get("/".join(parts[:n]))
                if node_id is not None:
                    found.setdefault(node_id, d.name_path)
        return found


class _EmployeePlanner:
    def __init__(
        self,
        directory: Directory,
        snapshot: Snapshot,
        view: PlatformView,
        policy: Policy,
        notes: list[Note],
        now_ms: int,
    ) -> None:
        self.directory = directory
        self.snapshot = snapshot
        self.view = view
        self.policy = policy
        self.notes = notes
        self.now_ms = now_ms
        self.replaced: list[Change] = []  # old accounts of changed usernames, removed first
        self.never_synced_departed = 0
        self.upserts: list[Change] = []
        self.unlocks: list[Change] = []
        self.locks: list[Change] = []
        self.removes: list[Change] = []
        self._by_username: dict[str, SyncedEmployee] | None = None  # made when first needed

    def _synced_holder(self, username: str) -> SyncedEmployee | None:
        """The synced record that holds this username, in any letter case."""
        if self._by_username is None:
            employees = self.snapshot.employees.values()
            self._by_username = {s.username.casefold(): s for s in employees}
        return self._by_username.get(username.casefold())

    def change(
        self, action: Action, e: Employee | None, synced: SyncedEmployee | None, **kw: Any
    ) -> Change:
        key = e.id if e is not None else synced.source_id  # type: ignore[union-attr]
        username = e.username if e is not None else synced.username  # type: ignore[union-attr]
        target = synced.employee_id if synced is not None else None
        return Change(
            Kind.EMPLOYEE,
            action,
            key,
            username,
            e,
            target_id=kw.pop("target_id", target),
            lookup=self.snapshot.fields,
            extended_fields=self.policy.extended_fields,
            **kw,
        )

    def run(self) -> tuple[list[Change], ...]:
        excluded = self.policy.exclude_usernames
        for e in self.directory.employees.values():
            if excluded and _excluded(e.username, excluded):
                continue
            synced = self.snapshot.employees.get(e.id)
            if synced is None:
                self._plan_new(e, self._synced_holder(e.username))
            else:
                self._plan_synced(e, synced)
        self._plan_leavers()
        if self.never_synced_departed:
            self.notes.append(
                Note(
                    "skipped",
                    "",
                    f"{_people(self.never_synced_departed)} departed in the source "
                    "but never synced: not created",
                )
            )
        return self.replaced, self.upserts, self.unlocks, self.locks, self.removes

    def _plan_synced(self, e: Employee, synced: SyncedEmployee) -> None:
        if synced.username != e.username:
            # A change of letter case too: the platform's import matches usernames exactly,
            # so an update would make a second account and leave the first one active.
            self._username_changed(e, synced)
            return
        wanted = employee_hash(e, self.policy.extended_fields)
        if wanted != synced.hash:
            self.upserts.append(self.change(Action.UPDATE, e, synced, hash=wanted))
        self._plan_lock_state(e, synced.locked, synced)

    def _plan_lock_state(
        self, e: Employee, locked: bool, synced: SyncedEmployee | None, **kw: Any
    ) -> None:
        if e.state is State.DEPARTED and not locked:
            self.locks.append(
                self.change(Action.LOCK, e, synced, reason="departed in the source", **kw)
            )
        elif e.state is State.ACTIVE and locked:
            self.unlocks.append(
                self.change(Action.UNLOCK, e, synced, reason="active in the source again", **kw)
            )

    def _plan_new(self, e: Employee, holder: SyncedEmployee | None) -> None:
        wanted = employee_hash(e, self.policy.extended_fields)
        if holder is not None:
            # The username belongs to a record syncd knows under another source id.
            if holder.source_id in self.directory.employees or not self.directory.complete:
                self.notes.append(
                    Note(
                        "conflict",
                        e.id,
                        f"username {e.username} is already synced for source id "
                        f"{holder.source_id}; not changed until one of them gives it up",
                    )
                )
                return
            if holder.username != e.username:
                # The platform matches usernames exactly: "Bob" would be a second account.
                self.notes.append(
                    Note(
                        "conflict",
                        e.id,
                        f"username {e.username} differs only in letter case from "
                        f"{holder.username}, synced for source id {holder.source_id}: the "
                        "platform matches usernames exactly, so it cannot be the same account; "
                        "not changed until the source spells it as before",
                    )
                )
                return
            # That source id is gone and this one took its place: the same account, re-keyed.
            self.upserts.append(
                self.change(
                    Action.UPDATE,
                    e,
                    holder,
                    hash=wanted,
                    reason=f"source id changed from {holder.source_id}",
                    previous_key=holder.source_id,
                )
            )
            self._plan_lock_state(e, holder.locked, holder)
            return
        person = self.view.people.get(e.username.casefold())
        if person is not None and person.username != e.username:
            # The platform matches usernames exactly: sending this one would make a second
            # account beside the one that differs only in letter case.
            self.notes.append(
                Note(
                    "conflict",
                    e.id,
                    f"the platform has an account {person.username!r}, which differs from "
                    f"{e.username!r} only in letter case: neither adopted nor created",
                )
            )
            return
        if person is None:
            if e.state is State.DEPARTED:
                self.never_synced_departed += 1
                return
            self.upserts.append(self.change(Action.CREATE, e, None, hash=wanted))
            return
        before = {"username": person.username, "locked": person.locked, "employee_id": person.id}
        self.upserts.append(
            self.change(
                Action.UPDATE,
                e,
                None,
                hash=wanted,
                target_id=person.id,
                reason="adopting the platform's account (matched by username)",
                platform_before=before,
            )
        )
        self._plan_lock_state(e, person.locked, None, target_id=person.id)

    def _username_changed(self, e: Employee, synced: SyncedEmployee) -> None:
        changed = f"username changed in the source from {synced.username} to {e.username}"
        holder = self._synced_holder(e.username)
        if holder is not None and holder.source_id != e.id:
            # Its account is another person's until that record gives the username up.
            self.notes.append(
                Note(
                    "conflict",
                    e.id,
                    f"{changed}, which is synced for source id {holder.source_id}: the old "
                    "account is left alone until the other record gives the username up",
                )
            )
            return
        if self.policy.username_change != "remove_and_create":
            self.notes.append(
                Note(
                    "conflict",
                    e.id,
                    f"{changed}: the platform cannot rename an account; the old account is left "
                    'alone (set sync.username_change = "remove_and_create" to replace it)',
                )
            )
            return
        excluded = self.policy.exclude_usernames
        if excluded and _excluded(synced.username, excluded):
            # Replacing the account would remove one the settings protect.
            self.notes.append(
                Note(
                    "skipped",
                    e.id,
                    f"{changed}: the old account is excluded by settings, so it is neither "
                    "removed nor replaced",
                )
            )
            return
        # Removed before the new account is made: its email and mobile must be free again.
        self.replaced.append(
            self.change(Action.REMOVE, None, synced, reason=f"username changed to {e.username}")
        )
        wanted = employee_hash(e, self.policy.extended_fields)
        self.upserts.append(
            self.change(
                Action.CREATE,
                e,
                None,
                hash=wanted,
                reason=f"username changed from {synced.username}",
            )
        )

    def _plan_leavers(self) -> None:
        directory = self.directory
        if not directory.leavers_known:
            if directory.complete and (self.snapshot.employees or self.snapshot.departments):
                self.notes.append(
                    Note(
                        "leavers",
                        "",
                        "leavers not looked for and departments not deleted: some rejected rows "
                        "could not be identified, so nobody and no department absent from this "
                        "read is treated as gone",
                    )
                )
            return
        protected = directory.rejected_keys(Kind.EMPLOYEE)
        rekeyed: set[str] | None = None  # made when someone is missing, if ever
        excluded = self.policy.exclude_usernames
        for synced in self.snapshot.employees.values():
            if synced.source_id in directory.employees:
                continue
            if rekeyed is None:
                rekeyed = self._rekeyed_usernames()
            folded = synced.username.casefold()
            if synced.source_id in protected or folded in protected or folded in rekeyed:
                continue
            if excluded and _excluded(synced.username, excluded):
                continue
            self._plan_leaver(synced)

    def _rekeyed_usernames(self) -> set[str]:
        """Usernames (casefolded) held by source records syncd never synced: a missing
        record whose username is among them is being re-keyed (or is in a conflict), not
        gone. A username another synced record took over protects nobody."""
        synced = self.snapshot.employees
        return {
            e.username.casefold() for e in self.directory.employees.values() if e.id not in synced
        }

    def _plan_leaver(self, synced: SyncedEmployee) -> None:
        policy = self.policy.leaver_policy
        if policy == "remove":
            self.removes.append(
                self.change(Action.REMOVE, None, synced, reason="missing from the source")
            )
            return
        if not synced.locked:
            grace = (
                "" if policy == "lock" else f" (removed after {self.policy.remove_after_days} days)"
            )
            self.locks.append(
                self.change(Action.LOCK, None, synced, reason=f"missing from the source{grace}")
            )
            return
        if policy == "lock_then_remove" and synced.locked_since is not None:
            due = synced.locked_since + self.policy.remove_after_days * DAY_MS
            if due <= self.now_ms:
                days = (self.now_ms - synced.locked_since) // DAY_MS
                self.removes.append(
                    self.change(
                        Action.REMOVE,
                        None,
                        synced,
                        reason=f"missing from the source, locked {days} days ago",
                    )
                )


# ---------------------------------------------------------------- messages


def _short(key: str, value: Any) -> str:
    if key == "positions" and isinstance(value, list):
        text = ", ".join(_position(p) for p in value) or "none"
    elif key == "extended" and isinstance(value, dict):
        text = ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
    elif isinstance(value, str):
        text = repr(value)
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _position(p: Mapping[str, Any]) -> str:
    where = str(p.get("department") or "root")
    return f"{where} ({p['job_title']})" if p.get("job_title") else where


def field_diff(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> dict[str, tuple[Any, Any]]:
    """Fields whose values differ: name -> (before, after)."""
    before = before or {}
    after = after or {}
    keys = list(after) + [k for k in before if k not in after]
    return {k: (before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k)}


def _describe(c: Change) -> str:
    noun = c.kind.value
    if c.action is Action.CREATE:
        return f"create {noun} {c.new_path or c.display}"
    if c.action is Action.ADOPT:
        return f"adopt {noun} {c.display} as it is on the platform"
    if c.action in (Action.UPDATE, Action.MOVE):
        diff = field_diff(c.before, c.after)
        detail = ", ".join(f"{k} {_short(k, b)} → {_short(k, a)}" for k, (b, a) in diff.items())
        detail = detail or "fields"
        where = f" to {c.new_path}" if c.action is Action.MOVE or c.new_path != c.display else ""
        verb = "move" if c.action is Action.MOVE else "update"
        return f"{verb} {noun} {c.display}{where if c.kind is Kind.DEPARTMENT else ''} ({detail})"
    return f"{c.action.value} {noun} {c.display}"


# ---------------------------------------------------------------- guards


@dataclass(frozen=True, slots=True)
class GuardDecision:
    name: str
    passed: bool
    message: str
    overridden: bool = False


@dataclass(frozen=True)
class Limits:
    max_removals: int = 50
    max_removal_ratio: float = 0.10
    allow_removals: int | None = None  # --allow-removals N: this run may remove up to N


def check_guards(
    p: Plan, directory: Directory, snapshot: Snapshot, limits: Limits
) -> list[GuardDecision]:
    """Safety checks on the plan; the run stops if any decision did not pass."""
    removals = p.removals
    override = limits.allow_removals is not None and removals <= limits.allow_removals
    how = f"rerun with --allow-removals {removals} if this is intended"
    decisions = [_removal_guard(p, snapshot, limits, override, how)]
    shrink = _shrink_guard(directory, snapshot, limits, override, how)
    if shrink is not None:
        decisions.append(shrink)
    return decisions


def _removal_guard(
    p: Plan, snapshot: Snapshot, limits: Limits, override: bool, how: str
) -> GuardDecision:
    removals = p.removals
    synced = len(snapshot.employees) + len(snapshot.departments)
    ratio = limits.max_removal_ratio
    too_many = removals > limits.max_removals or (synced > 0 and removals / synced > ratio)
    message = (
        f"{removals} removal{'' if removals == 1 else 's'} planned (locks, removals, department "
        f"deletions); the limits are {limits.max_removals} and {ratio:.0%} of {synced} synced "
        "records"
    )
    # Departments are few beside people: over all records, deleting most of them would pass.
    departments = len(snapshot.departments)
    deletes = p.counts()[(Kind.DEPARTMENT, Action.DELETE)]
    if deletes:
        message += f", and {ratio:.0%} of {departments} synced departments ({deletes} to delete)"
        too_many = too_many or (departments > 0 and deletes / departments > ratio)
    return GuardDecision(
        "max_removals",
        not too_many or override,
        message + (f": {how}" if too_many else ""),
        overridden=too_many and override,
    )


def _shrink_guard(
    directory: Directory, snapshot: Snapshot, limits: Limits, override: bool, how: str
) -> GuardDecision | None:
    # People already locked because they are missing are not expected back: counted, they
    # would make every later read look shrunken, with nothing left to remove.
    missing = sum(1 for s in snapshot.employees.values() if s.locked and s.lock_reason == "missing")
    known = len(snapshot.employees) - missing
    if not directory.complete or known <= 0:
        return None
    read = len(directory.employees)
    empty = read == 0
    shrunk = read < known * (1 - limits.max_removal_ratio)
    message = f"the source returned {read} employees, {known} were synced before"
    if missing:
        message += f" (not counting {missing} locked as missing from earlier reads)"
    if empty or shrunk:
        message += ": the source looks empty or broken; " + how
    return GuardDecision(
        "source_shrink",
        not (empty or shrunk) or override,
        message,
        overridden=(empty or shrunk) and override,
    )
