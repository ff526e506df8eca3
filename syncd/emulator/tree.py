"""The organization tree: nodes, their id and name paths, and who is counted where.

Pure in-memory structure with indexes kept up to date on every change, so reads never
walk the whole tree: children per node, serial_no -> node, name path -> nodes, and per
node the employees placed there and the number of distinct employees in its subtree.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from syncd.emulator.codes import (
    INVALID_MOVE,
    ORGANIZATION_HAS_CHILDREN,
    ORGANIZATION_HAS_EMPLOYEES,
    SERIAL_NO_EXISTS,
    ApiError,
    no_matching_organization,
)

ROOT_TYPE = "CORP"
NODE_TYPES = ("CORP", "DEPT")


@dataclass(slots=True)
class Node:
    """One node as stored; ``lineage``, ``path``, ``level`` and ``name_path`` are derived."""

    id: int
    parent_id: int | None
    type: str
    name: str
    created: int
    last_modified: int
    en_name: str = ""
    sort_order: int = 0
    sn: str = ""
    serial_no: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    lineage: tuple[int, ...] = ()
    path: str = ""
    level: int = 0
    name_path: str = ""


def normalize_name_path(text: str) -> str:
    """``/Acme/R&D/`` and ``Acme/R&D`` name the same node."""
    return text.strip().strip("/")


class OrgTree:
    """The nodes of one organization, rooted at a single CORP node."""

    def __init__(self, org_code: str, domain_id: str, nodes: Iterable[Node], next_id: int) -> None:
        self.org_code = org_code
        self.domain_id = domain_id
        self.next_id = next_id
        # Moves on with every change employees' records show (a node's name, type, place).
        self.version = 0
        self._nodes: dict[int, Node] = {}
        self._children: dict[int, list[int]] = {}
        self._by_serial: dict[str, int] = {}
        self._by_name_path: dict[str, list[int]] = {}
        self._members: dict[int, set[int]] = {}
        self._memberships: dict[int, frozenset[int]] = {}
        self._subtree_counts: dict[int, int] = {}
        self._root_id = self._load(sorted(nodes, key=lambda n: n.id))

    @classmethod
    def new(
        cls, org_code: str, domain_id: str, root_name: str, root_id: int, stamp: int
    ) -> OrgTree:
        root = Node(root_id, None, ROOT_TYPE, root_name, stamp, stamp)
        return cls(org_code, domain_id, [root], root_id + 1)

    def _load(self, nodes: list[Node]) -> int:
        roots = [n for n in nodes if n.parent_id is None]
        if len(roots) != 1:
            raise ValueError(f"an organization needs exactly one root node, found {len(roots)}")
        for node in nodes:
            self._nodes[node.id] = node
            self._children[node.id] = []
            self._subtree_counts[node.id] = 0
            if node.serial_no:
                self._by_serial[node.serial_no] = node.id
        for node in nodes:
            if node.parent_id is not None:
                if node.parent_id not in self._nodes:
                    raise ValueError(f"node {node.id} has an unknown parent {node.parent_id}")
                self._children[node.parent_id].append(node.id)
        root = roots[0]
        self._derive_subtree(root, parent=None)
        if len(self._by_name_path_ids()) != len(nodes):
            raise ValueError("some nodes are not reachable from the root")
        self.next_id = max(self.next_id, max(self._nodes) + 1)
        return root.id

    def _by_name_path_ids(self) -> set[int]:
        return {node_id for ids in self._by_name_path.values() for node_id in ids}

    # --- lookups -------------------------------------------------------------------

    @property
    def root(self) -> Node:
        return self._nodes[self._root_id]

    def __len__(self) -> int:
        return len(self._nodes)

    def nodes(self) -> Iterator[Node]:
        """All nodes in id order (creation order)."""
        return iter(self._nodes.values())

    def find(self, node_id: int) -> Node | None:
        return self._nodes.get(node_id)

    def get(self, node_id: int) -> Node:
        node = self._nodes.get(node_id)
        if node is None:
            raise no_matching_organization()
        return node

    def find_by_serial(self, serial_no: str) -> Node | None:
        node_id = self._by_serial.get(serial_no)
        return None if node_id is None else self._nodes[node_id]

    def resolve_name_path(self, name_path: str) -> Node | None:
        """The node a name path names; of same-named siblings, the oldest (lowest id)."""
        ids = self._by_name_path.get(normalize_name_path(name_path))
        return self._nodes[ids[0]] if ids else None

    def children(self, node: Node) -> list[Node]:
        """Direct children, by sort_order then id."""
        kids = [self._nodes[i] for i in self._children[node.id]]
        kids.sort(key=lambda n: (n.sort_order, n.id))
        return kids

    def has_children(self, node: Node) -> bool:
        return bool(self._children[node.id])

    def parent(self, node: Node) -> Node | None:
        return None if node.parent_id is None else self._nodes[node.parent_id]

    def subtree(self, node: Node) -> Iterator[Node]:
        """The node and all its descendants, parents before children."""
        stack = [node.id]
        while stack:
            current = self._nodes[stack.pop()]
            yield current
            stack.extend(reversed(self._children[current.id]))

    # --- changes -------------------------------------------------------------------

    def add(self, parent: Node, node_type: str, name: str, stamp: int, **fields: Any) -> Node:
        """Create a child of ``parent``; ``fields`` are further Node attributes."""
        serial_no = str(fields.get("serial_no") or "")
        if serial_no and serial_no in self._by_serial:
            raise ApiError(SERIAL_NO_EXISTS, "serial_no already exists")
        node = Node(self.next_id, parent.id, node_type, name, stamp, stamp, **fields)
        self.next_id += 1
        self._nodes[node.id] = node
        self._children[node.id] = []
        self._children[parent.id].append(node.id)
        self._subtree_counts[node.id] = 0
        if serial_no:
            self._by_serial[serial_no] = node.id
        self._derive(node, parent)
        return node

    def set_serial_no(self, node: Node, serial_no: str) -> None:
        owner = self._by_serial.get(serial_no) if serial_no else None
        if owner is not None and owner != node.id:
            raise ApiError(SERIAL_NO_EXISTS, "serial_no already exists")
        if node.serial_no:
            self._by_serial.pop(node.serial_no, None)
        node.serial_no = serial_no
        if serial_no:
            self._by_serial[serial_no] = node.id

    def rename(self, node: Node, name: str) -> None:
        """Change a node's name; the name paths of its whole subtree follow."""
        node.name = name
        self._derive_subtree(node, self.parent(node))

    def check_move(self, node: Node, new_parent: Node) -> None:
        if node.parent_id is None:
            raise ApiError(INVALID_MOVE, "the root organization cannot be moved")
        if node.id in new_parent.lineage:
            raise ApiError(INVALID_MOVE, "cannot move an organization under itself")

    def move(self, node: Node, new_parent: Node, stamp: int) -> None:
        """Re-parent a node with its subtree: id paths, levels, name paths and counts follow."""
        self.check_move(node, new_parent)
        if node.parent_id == new_parent.id:
            return
        moved = list(self.subtree(node))
        affected = set().union(*(self._members.get(n.id, set()) for n in moved))
        before = {e: self._counted_in(self._memberships[e]) for e in affected}
        assert node.parent_id is not None
        self._children[node.parent_id].remove(node.id)
        self._children[new_parent.id].append(node.id)
        node.parent_id = new_parent.id
        self._derive_subtree(node, new_parent)
        for each in moved:
            each.last_modified = stamp
        for employee_id in affected:
            self._recount(before[employee_id], self._counted_in(self._memberships[employee_id]))

    def remove(self, node: Node) -> None:
        """Delete a node that has neither employees (anywhere below) nor children."""
        if node.parent_id is None:
            raise ApiError(INVALID_MOVE, "the root organization cannot be deleted")
        if self._subtree_counts[node.id]:
            raise ApiError(ORGANIZATION_HAS_EMPLOYEES, "organization still has employees")
        if self._children[node.id]:
            raise ApiError(ORGANIZATION_HAS_CHILDREN, "organization still has child organizations")
        self._children[node.parent_id].remove(node.id)
        self._unindex_name_path(node)
        if node.serial_no:
            self._by_serial.pop(node.serial_no, None)
        del self._nodes[node.id], self._children[node.id], self._subtree_counts[node.id]
        self._members.pop(node.id, None)

    # --- employees placed in nodes -------------------------------------------------

    def place(self, employee_id: int, node_ids: Iterable[int]) -> None:
        """Record the nodes an employee holds positions in (empty: none, e.g. removed)."""
        new = frozenset(node_ids)
        old = self._memberships.get(employee_id, frozenset())
        if new == old:
            return
        before = self._counted_in(old)
        for node_id in old - new:
            self._members[node_id].discard(employee_id)
        for node_id in new - old:
            self._members.setdefault(node_id, set()).add(employee_id)
        if new:
            self._memberships[employee_id] = new
        else:
            self._memberships.pop(employee_id, None)
        self._recount(before, self._counted_in(new))

    def employee_count(self, node: Node) -> int:
        return len(self._members.get(node.id, ()))

    def all_employee_count(self, node: Node) -> int:
        """Distinct employees with a position in the node or any descendant."""
        return self._subtree_counts[node.id]

    def members(self, node: Node) -> set[int]:
        return self._members.get(node.id, set())

    def members_within(self, node: Node) -> set[int]:
        """Employees with a position anywhere in the node's subtree."""
        found: set[int] = set()
        for each in self.subtree(node):
            found |= self._members.get(each.id, set())
        return found

    def _counted_in(self, node_ids: Iterable[int]) -> set[int]:
        """Every node whose all_employee_count includes someone placed in ``node_ids``."""
        counted: set[int] = set()
        for node_id in node_ids:
            counted.update(self._nodes[node_id].lineage)
        return counted

    def _recount(self, before: set[int], after: set[int]) -> None:
        for node_id in before - after:
            self._subtree_counts[node_id] -= 1
        for node_id in after - before:
            self._subtree_counts[node_id] += 1

    # --- derived fields ------------------------------------------------------------

    def _derive_subtree(self, top: Node, parent: Node | None) -> None:
        self._derive(top, parent)
        for node in self.subtree(top):
            for child_id in self._children[node.id]:
                self._derive(self._nodes[child_id], node)

    def changed(self) -> None:
        """Something employees' records show changed: their cached list forms are stale."""
        self.version += 1

    def _derive(self, node: Node, parent: Node | None) -> None:
        self.changed()
        if node.name_path:
            self._unindex_name_path(node)
        node.lineage = (*parent.lineage, node.id) if parent else (node.id,)
        node.path = "/" + "/".join(map(str, node.lineage)) + "/"
        node.level = len(node.lineage)
        node.name_path = f"{parent.name_path}/{node.name}" if parent else node.name
        bisect.insort(self._by_name_path.setdefault(node.name_path, []), node.id)

    def _unindex_name_path(self, node: Node) -> None:
        ids = self._by_name_path.get(node.name_path)
        if ids and node.id in ids:
            ids.remove(node.id)
            if not ids:
                del self._by_name_path[node.name_path]
