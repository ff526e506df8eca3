"""Crash recovery: items a killed run sent without learning the answer, resolved at the next start.

Each is looked up on the platform (departments by serial_no, people by username) and the
snapshot is made to say what the platform holds. A create found there is recorded with
an empty hash, so the next plan compares it again; an update is settled without writing
its values, which were never confirmed: the snapshot's older ones make the next plan
send it again. An item whose look-up gets an answer no platform should give is marked
failed ("could not be looked up") and planned again: recovery never stops a run.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine

from syncd import snapshot as store
from syncd.errors import PlatformError, PlatformUnavailable
from syncd.model import Kind, serial_no
from syncd.plan import Action
from syncd.platform import PlatformClient
from syncd.platform.schemas import EmployeeRecord

log = logging.getLogger(__name__)

UNCONFIRMED = "interrupted before the answer came; compared again next run"
# What the platform holds settles these; an update is planned again whatever it holds.
LOOKED_UP_ON_RECOVERY = frozenset(
    a.value for a in (Action.CREATE, Action.LOCK, Action.UNLOCK, Action.REMOVE)
)


@dataclass
class Recovery:
    """What the start of a run resolved of an interrupted run's items."""

    resolved: int = 0
    unresolved: list[str] = field(default_factory=list)  # "what: why", one per item

    @property
    def note(self) -> str | None:
        """The sentence a run's report carries when some items could not be resolved."""
        n = len(self.unresolved)
        if not n:
            return None
        first = "; ".join(self.unresolved[:3]) + ("; ..." if n > 3 else "")
        return (
            f"{n} item{'' if n == 1 else 's'} of an interrupted run could not be looked up on "
            f"the platform and will be planned again: {first}"
        )


def recover(client: PlatformClient, engine: Engine, now_ms: int) -> Recovery:
    """Resolve the items killed runs left sent; look-ups that fail leave their item failed."""
    items = store.unsettled_items(engine)
    recovery = Recovery()
    if not items:
        return recovery
    usernames = [
        i["display"]
        for i in items
        if i["kind"] == Kind.EMPLOYEE.value and i["action"] in LOOKED_UP_ON_RECOVERY
    ]
    people: dict[str, EmployeeRecord] | None = None
    people_error = ""
    try:
        found = client.employees_by_username(usernames)
        people = {(p.username or "").casefold(): p for p in found}
    except (PlatformError, PlatformUnavailable) as exc:
        people_error = str(exc)
    verdicts: list[tuple[dict[str, Any], str, str]] = []
    writes: list[Callable[[Connection], None]] = []
    for item in items:
        try:
            if item["kind"] == Kind.DEPARTMENT.value:
                verdict = _recover_department(client, item, writes)
            elif people is None and item["action"] in LOOKED_UP_ON_RECOVERY:
                raise PlatformUnavailable(people_error)
            else:
                person = (people or {}).get(item["display"].casefold())
                verdict = _recover_employee(person, item, writes, now_ms)
        except (PlatformError, PlatformUnavailable) as exc:
            reason = f"could not be looked up on the platform ({exc}); planned again"
            recovery.unresolved.append(f"{item['kind']} {item['display']}: {exc}")
            verdict = ("failed", reason)
        else:
            recovery.resolved += 1
        verdicts.append((item, *verdict))
    with store.write(engine) as conn:
        for (run_id,), group in itertools.groupby(
            sorted(verdicts, key=lambda v: v[0]["run_id"]), key=lambda v: (v[0]["run_id"],)
        ):
            store.settle_items(
                conn,
                run_id,
                [{"seq": i["seq"], "outcome": o, "error": e} for i, o, e in group],
            )
        for apply_write in writes:
            apply_write(conn)
    log.info("resolved %d items left unanswered by an interrupted run", recovery.resolved)
    if recovery.note is not None:
        log.warning("%s", recovery.note)
    return recovery


def _recover_department(
    client: PlatformClient, item: dict[str, Any], writes: list[Callable[[Connection], None]]
) -> tuple[str, str]:
    key, action = item["key"], item["action"]
    if action not in (Action.CREATE.value, Action.DELETE.value):
        # A rename or move, sent or not: the snapshot keeps what it last confirmed.
        return "failed", UNCONFIRMED
    node = client.node_by_serial(serial_no(key))
    if action == Action.DELETE.value:
        if node is None:
            writes.append(lambda conn: store.delete_departments(conn, [key]))
            return "recovered", "interrupted; the node is gone from the platform"
        return "failed", "interrupted before the node was deleted"
    if node is None:
        return "failed", "interrupted before the node was written"
    row = {
        "source_id": key,
        "node_id": node.id,
        "name_path": item["display"],
        "fields": item["after"] or "{}",
        "hash": "",
        "adopted": False,
    }
    writes.append(lambda conn: store.upsert_departments(conn, [row]))
    return "recovered", "interrupted; the node was found on the platform and is compared again"


def _recover_employee(
    person: EmployeeRecord | None,
    item: dict[str, Any],
    writes: list[Callable[[Connection], None]],
    now_ms: int,
) -> tuple[str, str]:
    key, username, action = item["key"], item["display"], item["action"]
    if action not in LOOKED_UP_ON_RECOVERY:
        # An update or adoption: its values were never confirmed, so they are not recorded.
        return "failed", UNCONFIRMED
    if action == Action.REMOVE.value:
        if person is None:
            writes.append(lambda conn: store.delete_employees(conn, [(key, username)]))
            return "recovered", "interrupted; the account is gone from the platform"
        return "failed", "interrupted before the account was removed"
    if person is None:
        return "failed", "interrupted before the account was written"
    if action in (Action.LOCK.value, Action.UNLOCK.value):
        return _recover_lock(person, item, writes, now_ms)
    row = {
        "source_id": key,
        "username": person.username,
        "employee_id": person.id,
        "fields": item["after"] or "{}",
        "hash": "",
        "adopted": False,
        "locked": False,
        "lock_reason": None,
        "locked_since": None,
    }
    writes.append(lambda conn: store.upsert_employees(conn, [row]))
    return "recovered", "interrupted; the account was found on the platform and is compared again"


def _recover_lock(
    person: EmployeeRecord,
    item: dict[str, Any],
    writes: list[Callable[[Connection], None]],
    now_ms: int,
) -> tuple[str, str]:
    key, lock = item["key"], item["action"] == Action.LOCK.value
    if bool(person.locked or person.disabled) != lock:
        return "failed", f"interrupted before the account was {'locked' if lock else 'unlocked'}"
    # A departed person's lock is journaled with their record; a missing one's without.
    reason = ("departed" if item["after"] else "missing") if lock else None
    writes.append(lambda conn: store.set_locked(conn, [key], lock, reason, now_ms))
    return "recovered", f"interrupted; the account is {'locked' if lock else 'active'}"
