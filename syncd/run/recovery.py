"""Crash recovery: items a killed run sent without learning the answer, resolved at the next start.

Recovery is not change. Each item is settled by what the platform holds (departments
looked up by serial_no, people by username), and the snapshot is made to say so:

- a create found there as it was sent is recorded with the hash of what was sent, so the
  next plan, from an unchanged source, finds nothing to do for it: no update is planned
  and no guard counts it. One found there otherwise (a value the platform refused, a
  field changed since) is recorded with an empty hash and compared again, which plans
  only what differs; one not found is planned again as a create;
- an update of someone syncd holds, found there with the values it sent where they differ
  from what it replaced, is recorded as written, with its hash; any other (not landed, or
  landing that cannot be told apart, an adoption, a re-key) is settled without writing its
  values, which were never confirmed: the snapshot's older ones make the next plan send it
  again;
- a lock, an unlock, a removal, a deletion: done if the platform shows it done.

An item whose look-up gets an answer no platform should give is marked failed ("could not
be looked up") and planned again: recovery never stops a run.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from syncd import snapshot as store
from syncd.errors import PlatformError, PlatformUnavailable
from syncd.model import Kind, serial_no
from syncd.plan import Action, SyncedEmployee
from syncd.plan.drift import person_drift
from syncd.plan.fields import written_department_hash, written_hash
from syncd.plan.unique_values import UNIQUE
from syncd.platform import PlatformClient
from syncd.platform.schemas import Node
from syncd.survey.records import platform_employee

log = logging.getLogger("syncd.recovery")

UNCONFIRMED = "interrupted before the answer came; compared again next run"
# What the platform holds settles these.
LOOKED_UP_ON_RECOVERY = frozenset(
    a.value for a in (Action.CREATE, Action.UPDATE, Action.LOCK, Action.UNLOCK, Action.REMOVE)
)
T = TypeVar("T")
Verdict = tuple[str, str]  # outcome, and why
Writes = list[Callable[[store.Transaction], None]]


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


def recover(
    client: PlatformClient,
    state: store.StateStore,
    now_ms: int,
    extended_fields: Mapping[str, str] | None = None,
) -> Recovery:
    """Resolve the items killed runs left sent; look-ups that fail leave their item failed.
    ``extended_fields``: the settings' (the planner's hashes count them)."""
    items = state.unsettled_items()
    recovery = Recovery()
    if not items:
        return recovery
    evidence = Evidence(client, state, items, extended_fields or {})
    verdicts: list[tuple[dict[str, Any], str, str]] = []
    writes: Writes = []
    # Departments first: the people placed in a node found here are compared against it.
    for item in sorted(items, key=lambda i: i["kind"] != Kind.DEPARTMENT.value):
        try:
            if item["kind"] == Kind.DEPARTMENT.value:
                verdict = evidence.department(item, writes)
            else:
                verdict = evidence.employee(item, writes, now_ms)
        except (PlatformError, PlatformUnavailable) as exc:
            reason = f"could not be looked up on the platform ({exc}); planned again"
            recovery.unresolved.append(f"{item['kind']} {item['display']}: {exc}")
            verdict = ("failed", reason)
        else:
            recovery.resolved += 1
        verdicts.append((item, *verdict))
    _record(state, verdicts, writes)
    log.info("resolved %d items left unanswered by an interrupted run", recovery.resolved)
    if recovery.note is not None:
        log.warning("%s", recovery.note)
    return recovery


def _record(
    state: store.StateStore, verdicts: list[tuple[dict[str, Any], str, str]], writes: Writes
) -> None:
    """The items' outcomes and the snapshot's rows, in one transaction."""
    with state.transaction() as tx:
        for (run_id,), group in itertools.groupby(
            sorted(verdicts, key=lambda v: v[0]["run_id"]), key=lambda v: (v[0]["run_id"],)
        ):
            tx.settle_items(
                run_id,
                [{"seq": i["seq"], "outcome": o, "error": e} for i, o, e in group],
            )
            tx.forget_answered(run_id)
        for apply_write in writes:
            apply_write(tx)


def _fields(text: str | None) -> dict[str, Any]:
    """A journaled item's before or after (JSON text) as a dict; {} for none."""
    value = json.loads(text) if text else None
    return value if isinstance(value, dict) else {}


class Evidence:
    """What the platform holds of an interrupted run's items, asked once for all of them,
    and what the snapshot says of the people and departments they name."""

    def __init__(
        self,
        client: PlatformClient,
        state: store.StateStore,
        items: list[dict[str, Any]],
        extended_fields: Mapping[str, str],
    ) -> None:
        self.client = client
        self.extended_fields = extended_fields
        head = state.load_snapshot(everyone=False)
        self.node_ids = {k: d.node_id for k, d in head.departments.items()}
        people = [i for i in items if i["kind"] == Kind.EMPLOYEE.value]
        keys = {i["key"] for i in people}
        self.synced: Mapping[str, SyncedEmployee] = (
            state.with_people(head, keys).employees if keys else {}
        )
        self._usernames = [i["display"] for i in people if i["action"] in LOOKED_UP_ON_RECOVERY]
        self._people: dict[str, dict[str, Any]] | None = None
        self._root_id: int | None = None
        self._failure: PlatformError | PlatformUnavailable | None = None  # asked once

    # ------------------------------------------------------------ what the platform holds

    def person(self, username: str) -> dict[str, Any] | None:
        """The platform's record holding this username (any letter case), if any; the
        records of every person the items name are asked for at once, the first time."""
        if self._people is None:
            found = self._asked(lambda: list(self.client.employee_records(self._usernames)))
            self._people = {
                str(r.get("username") or "").casefold(): r
                for r in found
                if r.get("deleted") is not True
            }
        return self._people.get(username.casefold())

    @property
    def root_id(self) -> int:
        if self._root_id is None:
            self._root_id = self._asked(lambda: self.client.root().id)
        return self._root_id

    def _asked(self, ask: Callable[[], T]) -> T:
        """The platform's answer; once it failed, every item that needs one fails with it
        (it is not asked again, item by item, through the client's retries)."""
        if self._failure is not None:
            raise self._failure
        try:
            return ask()
        except (PlatformError, PlatformUnavailable) as exc:
            self._failure = exc
            raise

    def holds(self, record: Mapping[str, Any], written: Mapping[str, Any]) -> bool:
        """Whether the platform's record holds these fields, as people drift compares them
        (the lock state apart)."""
        found = platform_employee(record)
        if found is None:
            return False
        return not person_drift(written, found, self.node_ids.get, self.root_id)

    # ------------------------------------------------------------ departments

    def department(self, item: dict[str, Any], writes: Writes) -> Verdict:
        key, action = item["key"], item["action"]
        if action not in (Action.CREATE.value, Action.DELETE.value):
            # A rename or move, sent or not: the snapshot keeps what it last confirmed.
            return "failed", UNCONFIRMED
        node = self.client.node_by_serial(serial_no(key))
        if action == Action.DELETE.value:
            if node is None:
                writes.append(lambda tx: tx.delete_departments([key]))
                return "recovered", "interrupted; the node is gone from the platform"
            return "failed", "interrupted before the node was deleted"
        if node is None:
            return "failed", "interrupted before the node was written"
        after = _fields(item["after"])
        same = self._node_holds(node, after)
        row = {
            "source_id": key,
            "node_id": node.id,
            "name_path": item["display"],
            "fields": item["after"] or "{}",
            "hash": written_department_hash(after) if same else "",
            "adopted": False,
        }
        self.node_ids[key] = node.id
        writes.append(lambda tx: tx.upsert_departments([row]))
        found = "as sent" if same else "and is compared again"
        return "recovered", f"interrupted; the node was found on the platform {found}"

    def _node_holds(self, node: Node, written: Mapping[str, Any]) -> bool:
        """Whether the node is as these fields say: its name, its parent, and each optional
        field that was sent."""
        parent = written.get("parent")
        parent_node = self.root_id if parent is None else self.node_ids.get(parent)
        if (node.name or "").strip() != str(written.get("name") or "").strip():
            return False
        if parent_node is None or node.parent_org_id != parent_node:
            return False
        return all(
            written.get(name) in (None, "") or getattr(node, name) == written[name]
            for name in ("sort_order", "sn", "en_name")
        )

    # ------------------------------------------------------------ people

    def employee(self, item: dict[str, Any], writes: Writes, now_ms: int) -> Verdict:
        action = item["action"]
        if action not in LOOKED_UP_ON_RECOVERY:
            return "failed", UNCONFIRMED  # a photo: its digest is compared again
        key, username = item["key"], item["display"]
        person = self.person(username)
        if action == Action.REMOVE.value:
            if person is None:
                writes.append(lambda tx: tx.delete_employees([(key, username)]))
                return "recovered", "interrupted; the account is gone from the platform"
            return "failed", "interrupted before the account was removed"
        if person is None:
            return "failed", "interrupted before the account was written"
        if action in (Action.LOCK.value, Action.UNLOCK.value):
            return _recover_lock(person, item, writes, now_ms)
        if action == Action.UPDATE.value:
            return self._update(person, item, writes)
        return self._create(person, item, writes)

    def _create(self, person: dict[str, Any], item: dict[str, Any], writes: Writes) -> Verdict:
        """A create found on the platform: recorded as sent when it holds what was sent."""
        key, after = item["key"], _fields(item["after"])
        same = self.holds(person, after)
        row = {
            "source_id": key,
            "username": person.get("username") or item["display"],
            "employee_id": person["id"],
            "fields": item["after"] or "{}",
            "hash": written_hash(key, after, self.extended_fields) if same else "",
            "adopted": False,
            "locked": False,
            "lock_reason": None,
            "locked_since": None,
        }
        recreated = key in self.synced  # made again after a deletion there: active, as new

        def write(tx: store.Transaction) -> None:
            tx.upsert_employees([row])
            if recreated:
                tx.set_locked([key], False, None, None)
            if same:
                tx.resolve_problems(_problems_of(key))

        writes.append(write)
        found = "as sent" if same else "and is compared again"
        return "recovered", f"interrupted; the account was found on the platform {found}"

    def _update(self, person: dict[str, Any], item: dict[str, Any], writes: Writes) -> Verdict:
        """An update recorded as written when the platform holds what it sent, where that
        differs from what it replaced; else planned again, as unconfirmed."""
        key, username = item["key"], item["display"]
        synced = self.synced.get(key)
        if synced is None or synced.username != username:
            return "failed", UNCONFIRMED  # an adoption or a re-key: planned again whole
        after, before = _fields(item["after"]), _fields(item["before"])
        if not self.holds(person, after) or (before and self.holds(person, before)):
            return "failed", UNCONFIRMED
        row = (item["after"], written_hash(key, after, self.extended_fields), key, username)

        frees = item["frees"]  # it wrote values held back: it settles no known problem

        def write(tx: store.Transaction) -> None:
            tx.set_written([row])
            if not frees:
                tx.resolve_problems(_problems_of(key))

        writes.append(write)
        return "recovered", "interrupted; the platform holds what the update sent"


def _problems_of(key: str) -> list[tuple[str, str]]:
    """A person's known problems that a write the platform holds whole has settled: it
    holds the values the person wants now, so none is refused or wanted any more (as the
    executor resolves them when it settles the write's answer)."""
    return [(key, name) for name in UNIQUE]


def _recover_lock(
    person: Mapping[str, Any], item: dict[str, Any], writes: Writes, now_ms: int
) -> Verdict:
    key, lock = item["key"], item["action"] == Action.LOCK.value
    there = person.get("locked") is True or person.get("disabled") is True
    if there != lock:
        return "failed", f"interrupted before the account was {'locked' if lock else 'unlocked'}"
    # A departed person's lock is journaled with their record; a missing one's without.
    reason = ("departed" if item["after"] else "missing") if lock else None
    writes.append(lambda tx: tx.set_locked([key], lock, reason, now_ms))
    return "recovered", f"interrupted; the account is {'locked' if lock else 'active'}"
