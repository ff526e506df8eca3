"""The JSON shapes the platform answers with: node, employee (list and create form), user."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from syncd.emulator.people import NOT_IN_PROFILE, Employee, Staff
from syncd.emulator.tree import Node, OrgTree

Record = dict[str, Any]
# Employee fields the list form always carries; any other field given is echoed as well.
LIST_FORM_FIELDS = ("name", "email", "mobile", "sn", "sort_order", "senior")
LIST_FORM_DEFAULTS = tuple(
    (k, {"sort_order": 0, "senior": False}.get(k, "")) for k in LIST_FORM_FIELDS
)


def node_record(tree: OrgTree, node: Node) -> Record:
    record: Record = {
        "id": node.id,
        "domain_id": tree.domain_id,
        "org_code": tree.org_code,
        "type": node.type,
        "path": node.path,
        "name": node.name,
        "en_name": node.en_name,
        "sort_order": node.sort_order,
        "level": node.level,
        "sn": node.sn,
        "serial_no": node.serial_no,
        "created": node.created,
        "last_modified": node.last_modified,
        "disabled": False,
        "employee_count": tree.employee_count(node),
        "all_employee_count": tree.all_employee_count(node),
        **node.extra,
    }
    if node.parent_id is not None:
        record["parent_org_id"] = node.parent_id
    return record


def node_with_lists(tree: OrgTree, staff: Staff, node: Node, view: bool = False) -> Record:
    """A node with its direct ``children`` and ``employees``; ``view`` adds the view fields."""
    record = node_record(tree, node)
    record["children"] = [node_record(tree, child) for child in tree.children(node)]
    members = sorted(tree.members(node))
    record["employees"] = [employee_list_record(tree, e) for e in map(staff.get, members)]
    if view:
        parent = tree.parent(node)
        record["parent_org_name"] = parent.name if parent else ""
        record["full_name_path"] = node.name_path
        record["directly_corp"] = display_node(tree.root)
    return record


def display_node(node: Node) -> Record:
    return {"id": node.id, "name": node.name, "type": node.type, "path": node.path, "display": True}


def position_record(tree: OrgTree, employee: Employee, index: int) -> Record:
    position = employee.positions[index]
    node = tree.find(position.org_id)
    return {
        "id": f"{employee.id}-{index + 1}",
        "domain_id": tree.domain_id,
        "code": tree.org_code,
        "employee_id": employee.id,
        "org_id": position.org_id,
        "path": node.path if node else "",
        "type": node.type if node else "",
        "level": node.level if node else 0,
        "job_title": position.job_title,
        "primary": position.primary,
        "chief": position.chief,
        "org_name": node.name if node else "",
        "full_name_path": node.name_path if node else "",
    }


def employee_list_record(tree: OrgTree, employee: Employee) -> Record:
    profile = employee.profile
    record: Record = {
        "id": employee.id,
        "type": "EMPLOYEE",
        "domain_id": tree.domain_id,
        "org_code": tree.org_code,
        "user_id": employee.user_id,
        "username": employee.username,
        "display_name": employee.field("name"),
        "status": "ACTIVATED",
        "locked": employee.locked,
        **{key: profile.get(key, default) for key, default in LIST_FORM_DEFAULTS},
        "positions": [position_record(tree, employee, i) for i in range(len(employee.positions))],
        # Section G's list form: tags (integer ids) and tag_names (each one's tag).
        "tags": [t.id for t in employee.tags],
        "tag_names": [t.tag for t in employee.tags],
        "created": employee.created,
        "last_modified": employee.last_modified,
    }
    for key, value in profile.items():
        record.setdefault(key, value)
    return record


class ListForms:
    """Employees' list-form records, encoded once until the employee or the tree changes:
    a listing of 100,000 built every record again, seconds of the emulator's time."""

    def __init__(self) -> None:
        self._encoded: dict[int, tuple[int, int, orjson.Fragment]] = {}

    def of(self, tree: OrgTree, employees: Iterable[Employee]) -> list[orjson.Fragment]:
        found = []
        for employee in employees:
            cached = self._encoded.get(employee.id)
            if cached is None or cached[:2] != (employee.last_modified, tree.version):
                record = orjson.dumps(employee_list_record(tree, employee))
                cached = (employee.last_modified, tree.version, orjson.Fragment(record))
                self._encoded[employee.id] = cached
            found.append(cached[2])
        return found


def employee_detail_record(tree: OrgTree, employee: Employee) -> Record:
    """The create/update/detail form."""
    employee_key = {"domain_id": tree.domain_id, "code": tree.org_code, "id": employee.id}
    positions = []
    for index, position in enumerate(employee.positions):
        node = tree.find(position.org_id)
        positions.append(
            {
                "position_id": {**employee_key, "id": f"{employee.id}-{index + 1}"},
                "employee_id": employee.id,
                "org_id": position.org_id,
                "path": node.path if node else "",
                "type": "O",
                "job_title": position.job_title,
                "primary": position.primary,
                "chief": position.chief,
            }
        )
    profile = employee.profile
    record: Record = {
        "employee_id": employee_key,
        "name": employee.field("name"),
        "sn": profile.get("sn", ""),
        "email": profile.get("email", ""),
        "mobile": profile.get("mobile", ""),
        "sort_order": profile.get("sort_order", 0),
        "senior": profile.get("senior", False),
        "user": {
            "id": employee.user_id,
            "username": employee.username,
            "name": employee.field("name"),
            "gender": profile.get("gender", ""),
            "status": "confirmed",
        },
        "positions": positions,
        "tags": [t.id for t in employee.tags],
        "tag_names": [t.as_name() for t in employee.tags],  # the body's Tag: group and tag
        "disabled": employee.locked,
        "locked": employee.locked,
        "deleted": False,
        "create_time": employee.created,
        "modify_time": employee.last_modified,
    }
    for key, value in profile.items():
        if key not in NOT_IN_PROFILE:
            record.setdefault(key, value)
    return record


def user_record(tree: OrgTree, employee: Employee) -> Record:
    """D-group user record, built from the employee."""
    profile = employee.profile
    record: Record = {
        "user_id": employee.user_id,
        "domain_id": tree.domain_id,
        "username": employee.username,
        "name": employee.field("name"),
        "email": profile.get("email", ""),
        "phone": profile.get("mobile", ""),
        "gender": profile.get("gender", ""),
        "status": "ACTIVATED",
        "state": "NORMAL",
        "disabled": employee.locked,
        "last_modified": employee.last_modified,
    }
    if "birthday" in profile:
        record["birthday"] = profile["birthday"]
    return record
