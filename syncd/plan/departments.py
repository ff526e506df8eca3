"""Planning departments: creates parents first, adoptions, renames and moves, drift, deletes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain

from syncd.model import Department, Directory, Employee, Kind, serial_no
from syncd.plan.actions import Action
from syncd.plan.fields import department_hash
from syncd.plan.messages import department_names, unsure_rows
from syncd.plan.values import (
    Change,
    Note,
    PlatformNode,
    PlatformView,
    Policy,
    Snapshot,
    SyncedDepartment,
    matches_any,
)
from syncd.plan.values import people as people_count
from syncd.spelling import look_alike, nfc, spelled


class DepartmentPlanner:
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
        self.names = department_names(directory, snapshot, view.root_name)
        self.policy = policy
        self.notes = notes
        self.root = view.root_name
        self.by_serial = {n.serial_no: n for n in view.nodes.values() if n.serial_no}
        self.owned_nodes = {d.node_id for d in snapshot.departments.values()}
        self.skipped: set[str] = set()  # not planned, so neither is their subtree
        self.adopted: dict[str, int] = {}  # source id -> the platform node adopted this run
        # Nodes of the departments planned this run: they end where the source puts them.
        self.placed: set[int] = set()
        self._alike: dict[str, str] | None = None  # look-alike name path -> a platform path

    def path(self, source_id: str) -> str:
        return "/".join((self.root, *self.directory.path(source_id)))

    def excluded(self, source_id: str, relative_path: str) -> bool:
        patterns = self.policy.exclude_departments
        return bool(patterns) and (
            matches_any(source_id, patterns) or matches_any(relative_path, patterns)
        )

    def run(self) -> tuple[list[Change], list[Change]]:
        """Creates, parents first; then updates and moves, in order of their new depth."""
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
        return creates, updates

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
            if synced.node_id not in self.view.nodes and self.view.complete_listing:
                return self._recreate(d, synced, wanted, path, depth, platform_paths)
            return self._plan_synced(d, synced, wanted, path, depth)
        # An earlier syncd sent the id itself as serial_no, '/' and all: such nodes are ours too.
        node = self.by_serial.get(serial_no(d.id)) or self.by_serial.get(d.id)
        how = "serial_no"
        key = nfc(path)
        if node is None and key not in platform_paths and platform_paths:
            alike = self._look_alike_node(key, platform_paths)
            if alike is not None:
                self.skip(
                    d.id,
                    f"{path}: the platform has a node {alike}, which differs only in letter "
                    "case or invisible characters; the department and its subtree are "
                    "neither adopted nor created until one is renamed",
                    "conflict",
                )
                return None
        if node is None and key in platform_paths:
            if key in ambiguous:
                self.skip(
                    d.id,
                    f"{path}: several nodes on the platform have this name path; the "
                    "department and its subtree are not synced until one is renamed",
                    "conflict",
                )
                return None
            node = self.view.nodes[platform_paths[key][0]]
            how = "name path"
            if node.id in self.owned_nodes:
                node = None  # syncd's own node for another department, moved or renamed
            elif node.serial_no not in (None, serial_no(d.id), d.id):
                # Another record's node (another installation's, or another program's): a
                # second node of one name path would make the tree ambiguous, and the
                # platform places whatever names that path in the older one.
                self.skip(
                    d.id,
                    f"{path}: the platform's node with this name path (id {node.id}) carries "
                    f"serial_no {node.serial_no!r}, another department's; the department and "
                    "its subtree are neither adopted nor created until one is renamed",
                    "conflict",
                )
                return None
        if node is None:
            return self._create(d, wanted, path, depth)
        return self._adopt(d, node, wanted, path, depth, how)

    def _create(
        self, d: Department, wanted: str, path: str, depth: int, reason: str = ""
    ) -> Change:
        return Change(
            Kind.DEPARTMENT,
            Action.CREATE,
            d.id,
            path,
            d,
            wanted,
            new_path=path,
            depth=depth,
            reason=reason,
            departments=self.names,
        )

    def _recreate(
        self,
        d: Department,
        synced: SyncedDepartment,
        wanted: str,
        path: str,
        depth: int,
        platform_paths: Mapping[str, list[int]],
    ) -> Change | None:
        """A synced department whose node was deleted on the platform: made again, unless
        another node holds its name path now (found by exploration, 2026-11-29: a second
        node of one name path was made beside another program's, and the platform places
        what names that path in the older one). Then it is a conflict, as at adoption."""
        key = nfc(path)
        taken = [n for n in platform_paths.get(key, ()) if n not in self.owned_nodes]
        alike = None if taken else self._look_alike_node(key, platform_paths)
        if taken or alike is not None:
            held = f"node id {taken[0]}" if taken else f"node {alike}"
            self.skip(
                d.id,
                f"{synced.name_path} was deleted on the platform, and {held} holds its name "
                "path now: the department and its subtree are neither made again nor adopted "
                "until one is renamed",
                "conflict",
            )
            return None
        self.notes.append(
            Note("drift", d.id, f"{synced.name_path} was deleted on the platform: recreating it")
        )
        return self._create(d, wanted, path, depth, reason="deleted on the platform")

    def _plan_synced(
        self, d: Department, synced: SyncedDepartment, wanted: str, path: str, depth: int
    ) -> Change | None:
        node = self.view.nodes.get(synced.node_id)
        drift = self._drift(d, synced, node) if node is not None else None
        if synced.hash == wanted and drift is None:
            return None
        action = Action.UPDATE
        before = self.snapshot.written(Kind.DEPARTMENT, d.id)
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
            written=before,
            departments=self.names,
        )

    def _drift(self, d: Department, synced: SyncedDepartment, node: PlatformNode) -> str | None:
        """How the platform's node differs from what syncd last wrote, if it does."""
        written = self.snapshot.written(Kind.DEPARTMENT, d.id) or {}
        found = []
        # NFC on both sides: a platform that normalizes what it stores has not renamed it.
        if "name" in written and nfc(node.name) != nfc(written["name"]):
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
            node.serial_no == serial_no(d.id)
            and nfc(node.name) == d.name
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
            departments=self.names,
        )

    def _look_alike_node(self, key: str, platform_paths: Mapping[str, list[int]]) -> str | None:
        """The name path of a node syncd does not hold whose path looks like this one
        (syncd.spelling.look_alike), if one does."""
        if self._alike is None:
            self._alike = {}
            for path, ids in platform_paths.items():
                for node_id in ids:
                    if node_id not in self.owned_nodes:
                        self._alike.setdefault(look_alike(path), path)
        found = self._alike.get(look_alike(key))
        return None if found is None else f"'{spelled(found)}'"

    def _platform_paths(self) -> dict[str, list[int]]:
        """Name path (in NFC, as the source's) -> node ids, for every node under the root (a
        path may be ambiguous: two nodes, or two spellings of one path)."""
        paths: dict[str, list[int]] = {}
        for node_id, path in self.view.name_paths().items():
            paths.setdefault(nfc(path), []).append(node_id)
        return paths

    def placed_in(
        self, creates: list[Change], upserts: Sequence[Change], untouched: set[str]
    ) -> list[Change]:
        """``creates``, but where the departments are the paths people carry, those that
        place nobody in them or below but people the plan leaves ``untouched`` (a row that
        waits, a conflict), does not make (``upserts``: creates and updates; someone
        departed never synced) or cannot read (a row rejected): made, they would stand
        empty, a path a damaged row gives ("Co/Admin" read "Co/Adm") until the export is
        fixed. Each is said; it is made once someone it places is."""
        if not self.directory.departments_from_people or not creates:
            return creates
        employees = self.directory.employees
        held = (employees.get(k) for k in self.snapshot.employees if k not in untouched)
        made = (c.record for c in upserts if isinstance(c.record, Employee))
        records = (e for e in chain(made, held) if e is not None)
        named = self._above({p.department_id for e in records for p in e.positions})
        for c in creates:
            if c.key not in named:
                self.notes.append(
                    Note(
                        "skipped",
                        c.key,
                        f"department {c.display}: not created: nobody planned this run is "
                        "placed in it (the rows that name it wait, or are rejected)",
                    )
                )
        return [c for c in creates if c.key in named]

    def _above(self, ids: set[str | None]) -> set[str]:
        """The departments of ``ids`` in the read, and those above them."""
        departments = self.directory.departments
        found: set[str] = set()
        for at in ids:
            while at is not None and at not in found and at in departments:
                found.add(at)
                at = departments[at].parent_id
        return found

    def deletes(self, people: Sequence[Change]) -> list[Change]:
        """Departments gone from the source, children first, once nothing stays in them.

        ``people`` are the plan's changes to people: who moves out or is removed this run.
        """
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
        occupied = self._occupied(gone, people)
        staying, kept_below = self._below(gone, occupied)
        deletes = []
        for source_id, d in sorted(gone.items(), key=lambda g: -g[1].name_path.count("/")):
            below = staying.get(d.node_id)
            inside = occupied.get(source_id)
            child = kept_below.get(d.node_id)
            why = (
                f"{below} is still below it on the platform"
                if below is not None
                else f"it still holds {inside}; it is deleted once they are moved or removed"
                if inside is not None
                else f"{child}, below it, is kept"
                if child is not None
                else None
            )
            if why is not None:
                self.notes.append(
                    Note(
                        "skipped",
                        source_id,
                        f"{d.name_path} is gone from the source but not deleted: {why}",
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
                    written=self.snapshot.written(Kind.DEPARTMENT, source_id),
                    departments=self.names,
                )
            )
        deletes.sort(key=lambda c: (-c.depth, c.display))  # children first
        return deletes

    def _occupied(
        self, gone: Mapping[str, SyncedDepartment], people: Sequence[Change]
    ) -> dict[str, str]:
        """Gone departments someone stays in after this run: source id -> who, in words.

        syncd's own people are known from what it last wrote (locked leavers and people
        whose rows were rejected stay where they are); anyone else from the platform's
        count of the node's employees. Those deleted on the platform are in neither: the
        count no longer holds them, and an account made again goes where the source says.
        """
        if not gone:  # the usual run: nothing below is needed (100,000 sets on a first sync)
            return {}
        placed = self.snapshot.placed
        removed = {c.key for c in people if c.action in (Action.REMOVE, Action.FORGET)}
        moved = _moved(people)
        changed = self._changed_places()
        adopted = self._adopted_out(gone, people, moved)
        found: dict[str, str] = {}
        for source_id, d in gone.items():
            node_id = d.node_id
            ours = {
                k
                for k in placed.get(source_id, ())
                if self._still_there(k) and node_id in changed.get(k, {node_id})
            }
            ours |= {k for k, nodes in changed.items() if node_id in nodes}
            staying = sorted(
                k for k in ours if k not in removed and source_id in moved.get(k, {source_id})
            )
            node = self.view.nodes.get(node_id)
            counted = len(ours) + adopted.get(node_id, 0)
            others = max(0, node.employees - counted) if node and node.employees else 0
            said = self._who_stays(staying, others)
            if said:
                found[source_id] = said
        return found

    def _adopted_out(
        self,
        gone: Mapping[str, SyncedDepartment],
        people: Sequence[Change],
        moved: Mapping[str, set[str | None]],
    ) -> dict[int, int]:
        """Accounts this run adopts (by username or ``sync.match_by``) out of gone
        departments' nodes, by node: counted in the node's employees, yet none of syncd's
        until this run, which moves them where the source says."""
        nodes = {d.node_id: source_id for source_id, d in gone.items()}
        looked_up = chain(self.view.people.values(), *self.view.by_key.values())
        accounts = {p.id: p for p in looked_up if p.nodes}
        found: dict[int, int] = {}
        for c in people:
            account = accounts.get(c.target_id) if c.target_id is not None else None
            if account is None or c.action is not Action.UPDATE or c.previous_key is not None:
                continue  # not an adoption: a re-key's account is syncd's (``placed``)
            if c.key in self.snapshot.employees:
                continue
            for node_id in account.nodes:
                if node_id in nodes and nodes[node_id] not in moved.get(c.key, {nodes[node_id]}):
                    found[node_id] = found.get(node_id, 0) + 1
        return found

    def _still_there(self, source_id: str) -> bool:
        """Whether the account of one of syncd's people is still on the platform, as this
        run's read found: not among those deleted there."""
        synced = self.snapshot.employees.get(source_id)
        return synced is None or synced.username not in self.view.deleted

    def _changed_places(self) -> dict[str, set[int]]:
        """syncd's people who changed on the platform, by source id: the nodes their record
        there says they are in now (moved in or out behind syncd's back), not what syncd
        last wrote."""
        changes_there = self.view.changed
        if not changes_there:
            return {}
        held = {e.username: k for k, e in self.snapshot.employees.items()}
        return {
            held[username]: {org for org, _, _, _ in found.positions}
            for username, found in changes_there.items()
            if username in held
        }

    def _who_stays(self, staying: Sequence[str], others: int) -> str:
        """Who stays in a gone department, in words ("" for nobody)."""
        parts = []
        if staying:
            names = [self.snapshot.employees[k].username for k in staying[:3]]
            more = ", ..." if len(staying) > 3 else ""
            parts.append(f"{people_count(len(staying))} syncd keeps ({', '.join(names)}{more})")
        if others:
            parts.append(f"{people_count(others)} syncd does not manage")
        return " and ".join(parts)

    def _deletes_known(self) -> bool:
        """Whether departments absent from this read may be deleted: as for leavers, only
        after a complete read whose every rejected row still names its record."""
        directory = self.directory
        if not directory.complete:
            return False
        unsure = [
            r
            for r in directory.rejected
            if r.kind is Kind.DEPARTMENT and (not r.key or r.may_hide_rows)
        ]
        if unsure:
            if self.snapshot.departments:
                self.notes.append(
                    Note(
                        "leavers",
                        "",
                        "departments not deleted: some rejected department rows could not be "
                        f"identified or may hide other rows ({unsure_rows(unsure)}), so no "
                        "department absent from this read is treated as gone",
                    )
                )
            return False
        # An unidentified employee row too: a cut or badly quoted employees file in the
        # paths layout loses the departments only its lost rows named, and rejects no
        # department row. The employees' planner says so in its note.
        return directory.leavers_known

    def _below(
        self, gone: Mapping[str, SyncedDepartment], occupied: Mapping[str, str]
    ) -> tuple[dict[int, str], dict[int, str]]:
        """Nodes of ``gone`` under which something stays after this run, judged on the
        tree as this run leaves it: node id -> the name path of a department that stays
        below (a node only on the platform, or one of a rejected, excluded or skipped
        department, where it is now), and node id -> the name path of a gone department
        below that is kept (``occupied``: it still holds someone). The departments this plan
        places end where the source puts them, never under a department gone from it: a
        subtree this run moves out keeps nothing where it was.
        """
        if not gone:
            return {}, {}
        leaving = {d.node_id for d in gone.values()}
        parents, labels = self._tree_after()
        staying: dict[int, str] = {}
        for node_id in parents:
            if node_id != self.view.root_id and node_id not in leaving:
                _climb(parents, node_id, labels.get(node_id, str(node_id)), staying)
        kept: dict[int, str] = {}
        for source_id in occupied:
            d = gone[source_id]
            _climb(parents, d.node_id, d.name_path, kept)
        return staying, kept

    def _tree_after(self) -> tuple[dict[int, int | None], dict[int, str]]:
        """Each node's parent once this run's moves are made, and a name path to say it by:
        where the platform has it (its listing; the snapshot's name paths for what the
        listing leaves out), but the departments this plan places under their parents in
        the source (a department created this run has no node yet: None)."""
        root = self.view.root_id
        synced = self.snapshot.departments
        by_path = {d.name_path: d.node_id for d in synced.values()}
        by_path[self.root] = root
        parents: dict[int, int | None] = {}
        labels: dict[int, str] = {}
        for d in synced.values():
            parents[d.node_id] = by_path.get(d.name_path.rpartition("/")[0])
            labels[d.node_id] = d.name_path
        paths = self.view.name_paths()
        for node in self.view.nodes.values():
            parents[node.id] = node.parent_id
            labels[node.id] = paths.get(node.id, node.name)

        def node_of(source_id: str) -> int | None:
            found = synced.get(source_id)
            return found.node_id if found is not None else self.adopted.get(source_id)

        for source_id, department in self.directory.departments.items():
            node_id = node_of(source_id)
            if node_id is not None and node_id in self.placed:
                parent = department.parent_id
                parents[node_id] = root if parent is None else node_of(parent)
                labels[node_id] = self.path(source_id)
        parents.pop(root, None)
        return parents, labels


def _climb(
    parents: Mapping[int, int | None], start: int, label: str, found: dict[int, str]
) -> None:
    """Mark every ancestor of ``start`` with ``label``, up to one marked already (its own
    ancestors are); a cycle in a broken tree ends the climb."""
    current = parents.get(start)
    steps = 0
    while current is not None and current not in found and steps <= len(parents):
        found[current] = label
        current = parents.get(current)
        steps += 1


def _moved(people: Sequence[Change]) -> dict[str, set[str | None]]:
    """The departments each created or updated person is placed in by this run, under
    their key and the key they had before (a re-keyed person)."""
    moved: dict[str, set[str | None]] = {}
    for c in people:
        if isinstance(c.record, Employee) and c.action in (Action.CREATE, Action.UPDATE):
            places = {p.department_id for p in c.record.positions}
            moved[c.key] = places
            if c.previous_key is not None:
                moved[c.previous_key] = places
    return moved
