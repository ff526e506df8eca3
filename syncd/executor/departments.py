"""The departments' phases: create (level by level), update and move, delete."""

from __future__ import annotations

import itertools
from typing import Any

from syncd.errors import PlatformError, PlatformUnavailable
from syncd.executor.pipeline import Item, NotSent, Pipeline, _json
from syncd.model import Department, serial_no
from syncd.plan import Action, Change
from syncd.platform import ImportResult, Node
from syncd.snapshot import Transaction

NODE_GONE = 208502


class Departments:
    """Nodes created, updated, moved and deleted, each settled in the journal."""

    def __init__(self, run: Pipeline) -> None:
        self.run = run
        self.failed_deletes: list[str] = []  # name paths of nodes this run could not delete

    def create(self, items: list[Item]) -> None:
        # One import per depth level at most: every parent exists before its children are sent.
        for _, level in itertools.groupby(items, key=lambda i: i.change.depth):
            if self.run.stop.is_set():  # the levels below stay unsent, as planned
                self.run.result.interrupted = True
                return
            ready: list[Item] = []
            for item in level:
                if self._prepare_create(item):
                    ready.append(item)
            self.run.pipeline(
                self.run.batches(ready), self._send_import_orgs, self._settle_import_orgs
            )

    def _prepare_create(self, item: Item) -> bool:
        d = item.change.record
        assert isinstance(d, Department)
        if d.parent_id in self.run.pending_creates:
            self.run.fail([item], self.run.held_back(d.parent_id))
            return False
        parent_path = self.run.root_name if d.parent_id is None else self.run.paths.get(d.parent_id)
        if parent_path is None:
            self.run.fail([item], f"parent department {d.parent_id} is not on the platform")
            return False
        item.key = f"{parent_path}/{d.name}"
        item.body = _node_body(d) | {"type": "DEPT", "parent_path": parent_path}
        return True

    def _send_import_orgs(self, batch: list[Item]) -> ImportResult:
        return self.run.client.import_orgs([i.body for i in batch])

    def _settle_import_orgs(self, batch: list[Item], answer: ImportResult) -> None:
        outcomes: list[tuple[Item, str, str | None, int | None]] = []
        rows = []
        for item in batch:
            node_id = answer.successes.get(item.key)
            note = None
            confirmed = True
            if node_id is None:
                # A resent batch whose first answer was lost finds its own nodes already there.
                found = self._existing_node(item.change.key)
                node_id = None if found is None else found.id
                confirmed = found is not None and self._as_sent(item, found)
                note = "already on the platform (created by an earlier attempt)"
            if node_id is None:
                error = answer.failures.get(item.key, "the answer did not mention this node")
                outcomes.append((item, "failed", error, None))
                continue
            self.run.node_ids[item.change.key] = node_id
            self.run.paths[item.change.key] = item.key
            self.run.pending_creates.discard(item.change.key)
            outcomes.append((item, "ok", note, None))
            row = self._department_row(item.change, node_id, item.key)
            if not confirmed:
                row["hash"] = ""  # not as this run sent it: compared again next run
            rows.append(row)
        self.run.record(outcomes, lambda tx: tx.upsert_departments(rows))

    def _existing_node(self, source_id: str) -> Node | None:
        try:
            return self.run.client.node_by_serial(serial_no(source_id))
        except (PlatformError, PlatformUnavailable):
            return None  # the item fails with the import's own reason, and is planned again

    def _as_sent(self, item: Item, node: Node) -> bool:
        """Whether a node found by serial_no is the one this run's body describes (an
        earlier run, killed, may have created it with other values)."""
        d = item.change.record
        assert isinstance(d, Department)
        parent = self.run.root_id if d.parent_id is None else self.run.node_ids.get(d.parent_id)
        return (
            node.name == d.name
            and node.parent_org_id == parent
            and (d.sort_order is None or str(node.sort_order) == str(d.sort_order))
        )

    def _department_row(self, c: Change, node_id: int, path: str) -> dict[str, Any]:
        return {
            "source_id": c.key,
            "node_id": node_id,
            "name_path": path,
            "fields": _json(c.after) or "{}",
            "hash": c.hash,
            "adopted": c.platform_before is not None,
        }

    def update(self, items: list[Item]) -> None:
        # One at a time, in the plan's order (by new depth): a new parent is in place first.
        for item in items:
            if self.run.stop.is_set():
                self.run.result.interrupted = True
                return
            self.run.send_one(item, self._send_node_update, self._settle_node_update)

    def _send_node_update(self, item: Item) -> str:
        c = item.change
        d = c.record
        assert isinstance(d, Department) and c.target_id is not None
        parent_path = self.run.root_name if d.parent_id is None else self.run.paths.get(d.parent_id)
        parent_id = self.run.root_id if d.parent_id is None else self.run.node_ids.get(d.parent_id)
        if parent_path is None or parent_id is None:
            raise NotSent(f"parent department {d.parent_id} is not on the platform")
        new_path = f"{parent_path}/{d.name}"
        if c.action is not Action.ADOPT:
            body = _node_body(d)
            if c.action is Action.MOVE or c.platform_before is not None:
                body["new_parentId"] = parent_id
            self.run.client.update_node(c.target_id, body)
        return new_path

    def _settle_node_update(self, item: Item, new_path: str) -> None:
        c = item.change
        assert c.target_id is not None
        old_path = self.run.paths.get(c.key)
        self.run.node_ids[c.key] = c.target_id
        moved = self._rename_subtree(old_path, new_path) if old_path else {}
        self.run.paths[c.key] = new_path
        row = self._department_row(c, c.target_id, new_path)

        def writes(tx: Transaction) -> None:
            tx.upsert_departments([row])
            tx.set_department_paths(moved)

        self.run.record([(item, "ok", None, None)], writes)

    def _rename_subtree(self, old: str, new: str) -> dict[str, str]:
        """Descendants' name paths after their ancestor was renamed or moved."""
        if old == new:
            return {}
        prefix = old + "/"
        moved = {k: new + p[len(old) :] for k, p in self.run.paths.items() if p.startswith(prefix)}
        self.run.paths.update(moved)
        return moved

    def delete(self, items: list[Item]) -> None:
        for item in items:  # children first, as planned
            if self.run.stop.is_set():
                self.run.result.interrupted = True
                return
            if not self.run.send_one(item, self._send_node_delete, self._settle_node_delete):
                self.failed_deletes.append(self._path_of(item))

    def _path_of(self, item: Item) -> str:
        return self.run.paths.get(item.change.key) or item.change.display

    def _send_node_delete(self, item: Item) -> str:
        # A node whose child could not be deleted still has it: never ask the platform to
        # delete it anyway (one that allowed it would take the child along).
        prefix = self._path_of(item) + "/"
        child = next((p for p in self.failed_deletes if p.startswith(prefix)), None)
        if child is not None:
            raise NotSent(f"a child department is still there: {child} could not be deleted")
        assert item.change.target_id is not None
        try:
            self.run.client.delete_node(item.change.target_id)
        except PlatformError as exc:
            if exc.status != NODE_GONE:
                raise
            return "already gone from the platform"
        return ""

    def _settle_node_delete(self, item: Item, note: str) -> None:
        self.run.node_ids.pop(item.change.key, None)
        self.run.paths.pop(item.change.key, None)
        self.run.record(
            [(item, "ok", note or None, None)],
            lambda tx: tx.delete_departments([item.change.key]),
        )


def _node_body(d: Department) -> dict[str, Any]:
    body: dict[str, Any] = {"name": d.name, "serial_no": serial_no(d.id)}
    if d.sort_order is not None:
        body["sort_order"] = d.sort_order
    if d.sn:
        body["sn"] = d.sn
    if d.en_name:
        body["en_name"] = d.en_name
    return body
