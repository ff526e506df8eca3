"""The employees' phases: upserts (and their bodies), locks, removes and forgets."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import Connection

from syncd import snapshot as store
from syncd.executor.pipeline import Item, Pipeline, _json
from syncd.model import Employee, State
from syncd.plan import Action, Change, extended_values
from syncd.platform import ImportResult

OPTIONAL_TEXT = ("en_name", "email", "mobile", "tel", "sn", "gender")
NOT_SYNCED = "this person's account is not synced: not created or adopted"


def birthday_ms(iso: str) -> int:
    """An ISO date as the platform's 13-digit timestamp (midnight UTC)."""
    day = date.fromisoformat(iso)
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


class Employees(Pipeline):
    """Accounts created or updated in bulk, locked, unlocked, removed and forgotten."""

    def _upsert_employees(self, items: list[Item]) -> None:
        # Bodies are built batch by batch as they are sent, so they never all exist at once;
        # stopped early, what was never prepared stays planned, like every unsent item.
        self._pipeline(
            self._ready_batches(iter(items), self._prepare_employee),
            self._send_import_employees,
            self._settle_upserts,
        )

    def _prepare_employee(self, item: Item) -> bool:
        e = item.change.record
        assert isinstance(e, Employee)
        positions = []
        primary = next((n for n, p in enumerate(e.positions) if p.primary), 0)
        held = next(
            (p.department_id for p in e.positions if p.department_id in self.pending_creates), None
        )
        if held is not None:
            self._fail([item], self._held_back(held))
            return False
        for n, p in enumerate(e.positions):
            position: dict[str, Any] = {"primary": n == primary, "chief": p.chief}
            title = p.job_title or (e.job_title if n == primary else None)
            if title:
                position["job_title"] = title
            if p.department_id is None:
                position["org_id"] = self.root_id
            elif (node_id := self.node_ids.get(p.department_id)) is not None:
                position["org_id"] = node_id
            elif (path := self.department_path(p.department_id)) is not None:
                position["org_path"] = path
            else:
                self._fail([item], f"department {p.department_id} is not on the platform")
                return False
            positions.append(position)
        if not positions:
            positions = [{"org_id": self.root_id, "primary": True, "job_title": e.job_title}]
        item.key = e.username
        item.body = self._employee_body(item.change, e, positions)
        return True

    def _employee_body(
        self, c: Change, e: Employee, positions: list[dict[str, Any]]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "username": e.username,
            "name": e.name,
            "extension_id": e.id,
            "positions": positions,
            "senior": e.senior,
        }
        # A field the source has emptied, or the platform filled behind syncd's back: cleared.
        cleared = c.before if c.action is Action.UPDATE else None
        for name in OPTIONAL_TEXT:
            value = getattr(e, name)
            if value:
                body[name] = value
            elif cleared and cleared.get(name):
                body[name] = ""  # the source cleared it: clear it on the platform too
        if e.birthday:
            body["birthday"] = birthday_ms(e.birthday)
        if e.sort_order is not None:
            body["sort_order"] = e.sort_order
        body.update(extended_values(e, c.extended_fields or {}))  # as in c.after["extended"]
        wanted = dict(e.properties)
        # A property the source no longer gives is cleared: sent with no values.
        dropped = [k for k in (cleared or {}).get("properties") or {} if k not in wanted]
        if wanted or dropped:
            body["properties"] = [
                {"data_schema_id": k, "values": [v] if k in wanted else []}
                for k, v in [*wanted.items(), *((k, "") for k in dropped)]
            ]
        return body

    def _send_import_employees(self, batch: list[Item]) -> ImportResult:
        return self.client.import_employees([i.body for i in batch])

    def _settle_upserts(self, batch: list[Item], answer: ImportResult) -> None:
        outcomes: list[tuple[Item, str, str | None, int | None]] = []
        rows: list[tuple[Item, dict[str, Any]]] = []
        rekeyed: list[str] = []
        for item in batch:
            employee_id = _lookup(answer.successes, item.key)
            if employee_id is None:
                error = (
                    _lookup(answer.failures, item.key) or "the answer did not mention this person"
                )
                outcomes.append((item, "failed", error, None))
                continue
            c = item.change
            self.employee_ids[c.key] = employee_id
            outcomes.append((item, "ok", None, None))
            row = {
                "source_id": c.key,
                "username": item.key,
                "employee_id": employee_id,
                "hash": c.hash,
                "adopted": c.platform_before is not None,
                "matched_by": (c.platform_before or {}).get("matched_by"),
                **self._lock_state(c),
            }
            rows.append((item, row))
            if c.previous_key:
                rekeyed.append(c.previous_key)

        # Accounts made again after someone deleted them on the platform: active, as new.
        recreated = [
            c.key
            for item, _ in rows
            if (c := item.change).action is Action.CREATE and c.key in self.synced_employees
        ]

        def writes(conn: Connection) -> None:
            # The snapshot keeps the very JSON text the journal holds for each item: read
            # back in one query rather than encoded a second time.
            journaled = store.journaled_after(conn, self.run_id, batch[0].seq, batch[-1].seq)
            for item, row in rows:
                row["fields"] = journaled.get(item.seq) or _json(item.change.after) or "{}"
            store.forget_employees(conn, rekeyed)  # by source id: the row is the old key's
            store.upsert_employees(conn, [row for _, row in rows])
            store.set_locked(conn, recreated, False, None, None)

        self._record(outcomes, writes)

    def _lock_state(self, c: Change) -> dict[str, Any]:
        """The lock state a new snapshot row starts with (an existing row keeps its own)."""
        if c.previous_key is not None:
            old = self.synced_employees.get(c.previous_key)
            if old is not None:
                return {
                    "locked": old.locked,
                    "lock_reason": old.lock_reason,
                    "locked_since": old.locked_since,
                }
        elif c.platform_before is not None and c.platform_before.get("locked"):
            # An adopted account locked on the platform: unlocked by the plan if active.
            departed = isinstance(c.record, Employee) and c.record.state is State.DEPARTED
            return {
                "locked": True,
                "lock_reason": "departed" if departed else None,
                "locked_since": self.now_ms(),
            }
        return {"locked": False, "lock_reason": None, "locked_since": None}

    def _set_locks(self, items: list[Item], *, lock: bool) -> None:
        ready = []
        for item in items:
            # Only an account syncd owns: the platform's account of a person whose
            # adoption failed this run is not syncd's to lock or unlock (retried next run).
            employee_id = self.employee_ids.get(item.change.key)
            if employee_id is None:
                self._fail([item], NOT_SYNCED)
                continue
            item.body = {"id": employee_id}
            ready.append(item)
        send = self._send_lock if lock else self._send_unlock
        self._pipeline(([i] for i in ready), send, lambda b, _: self._settle_lock(b, lock))

    def _send_lock(self, batch: list[Item]) -> None:
        self.client.depart(batch[0].body["id"])

    def _send_unlock(self, batch: list[Item]) -> None:
        self.client.reinstate(batch[0].body["id"])

    def _settle_lock(self, batch: list[Item], lock: bool) -> None:
        (item,) = batch
        c = item.change
        reason = ("departed" if c.record is not None else "missing") if lock else None
        since = self.now_ms()
        self._record(
            [(item, "ok", None, None)],
            lambda conn: store.set_locked(conn, [c.key], lock, reason, since),
        )

    def _remove_employees(self, items: list[Item]) -> None:
        for item in items:
            item.key = item.change.display
            name = (item.change.before or {}).get("name") or item.key
            item.body = {"username": item.key, "name": name}
        self._pipeline(self._batches(items), self._send_remove, self._settle_removes)

    def _forget_employees(self, items: list[Item]) -> None:
        """People gone from the platform and not wanted back: the snapshot lets them go."""
        gone = [(i.change.key, i.change.display) for i in items]
        for item in items:
            self.employee_ids.pop(item.change.key, None)
        self._record(
            [(i, "ok", None, None) for i in items],
            lambda conn: store.delete_employees(conn, gone),
        )
        self.progress.advance(len(items))

    def _send_remove(self, batch: list[Item]) -> ImportResult:
        return self.client.import_employees([i.body for i in batch], remove=True)

    def _settle_removes(self, batch: list[Item], answer: ImportResult) -> None:
        failed = [i for i in batch if _lookup(answer.successes, i.key) is None]
        still_there = set()
        if failed:  # "not found" means already gone; anything else, ask the platform
            found = self.client.employees_by_username([i.key for i in failed])
            still_there = {(p.username or "").casefold() for p in found}
        outcomes: list[tuple[Item, str, str | None, int | None]] = []
        gone = []
        for item in batch:
            if item.key.casefold() in still_there:
                error = (
                    _lookup(answer.failures, item.key) or "the answer did not mention this person"
                )
                outcomes.append((item, "failed", error, None))
            else:
                outcomes.append((item, "ok", None, None))
                gone.append((item.change.key, item.key))
                self.employee_ids.pop(item.change.key, None)
        self._record(outcomes, lambda conn: store.delete_employees(conn, gone))


def _lookup(answer: Mapping[str, Any], username: str) -> Any:
    """An import answer's entry for this username, tolerating a platform that changes case."""
    if username in answer:
        return answer[username]
    folded = username.casefold()
    for key, value in answer.items():
        if key.casefold() == folded:
            return value
    return None
