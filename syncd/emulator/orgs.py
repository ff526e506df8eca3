"""Organization operations as the platform applies them: create, update, delete, import."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from syncd.emulator.codes import (
    NO_MATCHING_ORGANIZATION,
    SERIAL_NO_EXISTS,
    ApiError,
    bad_request,
    no_matching_organization,
)
from syncd.emulator.fields import Body, is_blank, require_object, required_text, text, to_int
from syncd.emulator.tree import NODE_TYPES, Node, OrgTree, normalize_name_path

# Rejects an import item with a message, or lets it through with None.
Rejector = Callable[[Body], str | None]
EXTRA_FIELDS = ("tw_name", "logo", "tel", "contact")
ROOT_NOT_FOUND = "root organization not found"


def node_type(body: Body) -> str:
    value = required_text(body, "type")
    if value not in NODE_TYPES:
        raise bad_request("type must be DEPT or CORP")
    return value


def node_name(body: Body) -> str:
    value = required_text(body, "name")
    if "/" in value:
        # Name paths join names with "/": such a name could never be addressed.
        raise bad_request("name must not contain '/'")
    return value


def find_parent(tree: OrgTree, body: Body) -> Node:
    """The parent named by ``parent_id`` (preferred) or by ``parent_path``."""
    if not is_blank(body.get("parent_id")):
        try:
            parent = tree.find(to_int(body["parent_id"], "parent_id"))
        except ApiError:
            parent = None
    elif not is_blank(body.get("parent_path")):
        parent = tree.resolve_name_path(text(body, "parent_path"))
    else:
        raise bad_request("parent_path or parent_id is required")
    if parent is None:
        raise ApiError(NO_MATCHING_ORGANIZATION, ROOT_NOT_FOUND)
    return parent


def create_node(tree: OrgTree, body: Body, stamp: int) -> Node:
    name = node_name(body)
    kind = node_type(body)
    parent = find_parent(tree, body)
    sort_order = 0 if is_blank(body.get("sort_order")) else to_int(body["sort_order"], "sort_order")
    return tree.add(
        parent,
        kind,
        name,
        stamp,
        en_name=text(body, "en_name"),
        sort_order=sort_order,
        sn=text(body, "sn"),
        serial_no=text(body, "serial_no"),
        extra={key: text(body, key) for key in EXTRA_FIELDS if key in body},
    )


@dataclass
class NodeUpdate:
    """A checked update body: plain field changes, a new serial_no and a new parent."""

    fields: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    serial_no: str | None = None
    new_parent: Node | None = None


def check_update(tree: OrgTree, node: Node, body: Body) -> NodeUpdate:
    update = NodeUpdate()
    if "name" in body:
        update.name = node_name(body)
    if "type" in body:
        update.fields["type"] = node_type(body)
        if node.parent_id is None and update.fields["type"] != "CORP":
            raise bad_request("the root organization must stay CORP")
    if not is_blank(body.get("sort_order")):
        update.fields["sort_order"] = to_int(body["sort_order"], "sort_order")
    for key in ("en_name", "sn"):
        if key in body:
            update.fields[key] = text(body, key)
    if "serial_no" in body:
        update.serial_no = text(body, "serial_no")
        owner = tree.find_by_serial(update.serial_no) if update.serial_no else None
        if owner is not None and owner.id != node.id:
            raise ApiError(SERIAL_NO_EXISTS, "serial_no already exists")
    if not is_blank(body.get("new_parentId")):
        update.new_parent = tree.find(to_int(body["new_parentId"], "new_parentId"))
        if update.new_parent is None:
            raise no_matching_organization()
        tree.check_move(node, update.new_parent)
    return update


def update_node(tree: OrgTree, node: Node, body: Body, stamp: int) -> Node:
    """Apply an update body; everything is checked before anything changes."""
    update = check_update(tree, node, body)
    extra = {key: text(body, key) for key in EXTRA_FIELDS if key in body}
    changed = False
    if update.name is not None and update.name != node.name:
        tree.rename(node, update.name)
        changed = True
    for key, value in update.fields.items():
        if getattr(node, key) != value:
            setattr(node, key, value)
            tree.changed()  # a type shows in the positions of its people's records
            changed = True
    if update.serial_no is not None and update.serial_no != node.serial_no:
        tree.set_serial_no(node, update.serial_no)
        changed = True
    if any(node.extra.get(key) != value for key, value in extra.items()):
        node.extra.update(extra)
        changed = True
    if update.new_parent is not None and update.new_parent.id != node.parent_id:
        tree.move(node, update.new_parent, stamp)  # stamps the whole subtree
    elif changed:
        node.last_modified = stamp
    return node


def import_key(tree: OrgTree, item: Any, index: int) -> str:
    """The key of an import item in the result: its full name path, or ``#<index>``."""
    if (
        not isinstance(item, dict)
        or is_blank(item.get("name"))
        or not isinstance(item["name"], str)
    ):
        return f"#{index}"
    parent_part = ""
    if not is_blank(item.get("parent_id")):
        try:
            parent = tree.find(to_int(item["parent_id"], "parent_id"))
        except ApiError:
            parent = None
        parent_part = parent.name_path if parent else str(item["parent_id"])
    elif isinstance(item.get("parent_path"), str):
        parent_part = normalize_name_path(item["parent_path"])
    name = item["name"].strip()
    return f"{parent_part}/{name}" if parent_part else name


def import_orgs(tree: OrgTree, items: list[Any], stamp: int, reject: Rejector) -> dict[str, Any]:
    """Create nodes in the order given; an item whose parent is not there yet fails."""
    successes: dict[str, int] = {}
    failures: dict[str, str] = {}
    for index, item in enumerate(items):
        key = import_key(tree, item, index)
        try:
            body = require_object(item)
            rejection = reject(body)
            if rejection is not None:
                raise bad_request(rejection)
            if text(body, "serial_no") and tree.find_by_serial(text(body, "serial_no")):
                raise bad_request("serial_no already exists")
            successes[key] = create_node(tree, body, stamp).id
            failures.pop(key, None)
        except ApiError as error:
            failures[key] = error.message
    return {"successes": successes, "failures": failures}
