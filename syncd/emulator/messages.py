"""Message push (POST /app/mbox): delivered to employees by username and kept for inspection."""

from __future__ import annotations

import uuid
from typing import Any

from syncd.emulator.codes import bad_request, no_matching_employee
from syncd.emulator.fields import Body, require_object, required_text
from syncd.emulator.people import Staff

MESSAGE_TYPES = ("TEXT", "IMAGE", "VOICE", "VIDEO", "FILE", "ARTICLE")
REQUIRED_BODY_FIELDS = {
    "TEXT": ("content",),
    "IMAGE": ("media_id", "content"),
    "VOICE": ("media_id", "played", "duration"),
    "FILE": ("media_id", "name", "size"),
    "ARTICLE": ("articles",),
    "VIDEO": (),
}


def check_push(body: Body) -> tuple[str, Body, list[str]]:
    """The message type, its body and the target usernames, or a parameter error."""
    message_type = required_text(body, "type").upper()
    if message_type not in MESSAGE_TYPES:
        raise bad_request(f"type must be one of {', '.join(MESSAGE_TYPES)}")
    content = require_object(body.get("body") or {})
    dest_type = required_text(content, "dest_type")
    if dest_type == "DISCUSSION":
        raise bad_request("dest_type DISCUSSION is not emulated")
    if dest_type != "P2P":
        raise bad_request("dest_type must be P2P or DISCUSSION")
    for key in REQUIRED_BODY_FIELDS[message_type]:
        if content.get(key) in (None, "", []):
            raise bad_request(f"body.{key} is required")
    targets = body.get("client_ids")
    if not isinstance(targets, list) or not targets or not all(isinstance(t, str) for t in targets):
        raise bad_request("client_ids is required: a list of usernames")
    return message_type, content, targets


def push(staff: Staff, body: Body, app_id: str, org_id: str, now: int) -> dict[str, Any]:
    """Deliver to the known, unlocked usernames; a message nobody can receive is an error."""
    message_type, content, targets = check_push(body)
    delivered = []
    for username in targets:
        employee = staff.find_by_username(username)
        if employee is not None and not employee.locked:
            delivered.append(username)
    if not delivered:
        raise no_matching_employee()
    plan = {
        "id": uuid.uuid4().hex,
        "domain_id": staff.tree.domain_id,
        "org_id": org_id,
        "app_id": app_id,
        "tenant_id": staff.tree.domain_id,
        "material_id": uuid.uuid4().hex,
        "expects": len(targets),
        "oks": len(delivered),
        "fails": len(targets) - len(delivered),
        "scopes": [],
        "client_ids": list(targets),
        "create_time": now,
        "refresh_time": now,
        "expect_time": now,
    }
    return {"plan": plan, "type": message_type, "body": dict(content), "delivered_to": delivered}
