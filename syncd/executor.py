"""Applies a Plan to the platform, batch by batch, journaled so a crash loses nothing.

Before a batch is sent its items are marked ``sent``; when the answer comes, one
transaction marks each item ``ok`` or ``failed`` (with the platform's text) and writes
the snapshot rows of the successes. A process killed in between leaves items ``sent``:
``syncd.recovery`` resolves them against the platform at the next start, by serial_no
for departments and by username for people, so nothing is created twice or forgotten.

One failed item never stops the others. A run-level failure (the platform unreachable
after retries, credentials refused) stops sending; what was done stays recorded.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection, Engine

from syncd import snapshot as store
from syncd.errors import PlatformError, PlatformUnavailable, SyncdError, TokenError
from syncd.model import Department, Employee, Kind, Photo, State, serial_no
from syncd.photos import EXTENSIONS, MIME_TYPES, PhotoUnavailable
from syncd.plan import Action, Change, Plan, Snapshot, extended_values
from syncd.platform import ImportResult, Node, PlatformClient

log = logging.getLogger(__name__)

T = TypeVar("T")

NODE_GONE = 208502
OPTIONAL_TEXT = ("en_name", "email", "mobile", "tel", "sn", "gender")
NOT_SYNCED = "this person's account is not synced: not created or adopted"
USER_LOOKUP = 100  # photos whose people's user ids are looked up in one call


class NotSent(Exception):
    """An item that could not be sent (its parent or department is missing): it fails alone."""


# What sending an item may raise that is recorded against it (see Executor._failed).
ITEM_FAILURES = (PlatformError, PlatformUnavailable, NotSent)


class Progress(Protocol):
    """How a run tells what it does: steps before anything is sent, then the apply's phases."""

    def step(self, doing: str, read: int | None = None) -> None: ...
    def phase(self, name: str, total: int) -> None: ...
    def advance(self, n: int) -> None: ...


class NoProgress:
    def step(self, doing: str, read: int | None = None) -> None:
        pass

    def phase(self, name: str, total: int) -> None:
        pass

    def advance(self, n: int) -> None:
        pass


@dataclass
class Item:
    seq: int
    change: Change
    key: str = ""  # the platform's key for this item in an import answer
    body: dict[str, Any] = field(default_factory=dict)


@dataclass
class ApplyResult:
    counts: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # kind, action, outcome
    interrupted: bool = False
    error: SyncdError | None = None

    @property
    def failed(self) -> int:
        return sum(n for (_, _, outcome), n in self.counts.items() if outcome == "failed")


def item_rows(changes: Sequence[Change]) -> Iterator[dict[str, Any]]:
    """Journal rows for a plan's changes, in plan order (seq is the index)."""
    for seq, c in enumerate(changes):
        yield {
            "seq": seq,
            "kind": c.kind.value,
            "key": c.key,
            "display": c.new_path or c.display,
            "action": c.action.value,
            "message": c.message,
            "before": _json(c.before),
            "after": _json(c.after),
            "outcome": "planned",
        }


# One encoder for every journal and snapshot value: json.dumps with options builds a new
# one per call, a sixth of the cost of encoding a person's fields.
_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True)


def _json(value: Mapping[str, Any] | None) -> str | None:
    return None if value is None else _ENCODER.encode(value)


def _phase(c: Change) -> str:
    if c.kind is Kind.DEPARTMENT:
        if c.action is Action.CREATE:
            return "create departments"
        return "delete departments" if c.action is Action.DELETE else "update departments"
    if c.action in (Action.CREATE, Action.UPDATE):
        return "create and update employees"
    if c.action is Action.PHOTO:
        return "set photos"
    return {
        Action.UNLOCK: "unlock employees",
        Action.LOCK: "lock employees",
        Action.FORGET: "forget employees",
    }.get(c.action, "remove employees")


def birthday_ms(iso: str) -> int:
    """An ISO date as the platform's 13-digit timestamp (midnight UTC)."""
    day = date.fromisoformat(iso)
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


class Executor:
    def __init__(
        self,
        client: PlatformClient,
        engine: Engine,
        run_id: int,
        snapshot: Snapshot,
        *,
        root_id: int,
        root_name: str,
        paths: Mapping[str, str],
        department_path: Callable[[str], str | None],
        batch_size: int,
        concurrency: int,
        now_ms: Callable[[], int],
        progress: Progress | None = None,
        stop: threading.Event | None = None,
        photos: Callable[[Photo], tuple[Photo, bytes]] | None = None,
    ) -> None:
        self.client = client
        self.engine = engine
        self.run_id = run_id
        self.root_id = root_id
        self.root_name = root_name
        self.department_path = department_path  # full name path of a source department
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.now_ms = now_ms
        self.progress = progress or NoProgress()
        self.stop = stop or threading.Event()
        self.node_ids = {k: d.node_id for k, d in snapshot.departments.items()}
        self.paths = dict(paths)  # source id -> the node's name path on the platform, kept current
        # Accounts syncd may lock or unlock: the snapshot's, and those upserted this run.
        self.employee_ids = {
            k: e.employee_id for k, e in snapshot.employees.items() if e.employee_id is not None
        }
        self.synced_employees = snapshot.employees  # a re-keyed record keeps its lock state
        self.failed_deletes: list[str] = []  # name paths of nodes this run could not delete
        # Departments this run creates, until the platform confirms each: what is placed in
        # one still here when it is sent is held back, rather than refused by the platform.
        self.pending_creates: set[str] = set()
        self.result = ApplyResult()
        # Reads a photo's bytes from the source when it is sent (sources.photos.PhotoReader).
        self.photos = photos
        self.media: dict[str, str] = {}  # digest -> media id uploaded this run
        self._uploading: dict[str, threading.Lock] = {}  # digest -> held while it uploads
        self._uploads_lock = threading.Lock()

    # ------------------------------------------------------------ driving

    def apply(self, plan: Plan) -> ApplyResult:
        """Send the plan's changes in order; their journal rows must already exist."""
        phases = itertools.groupby(enumerate(plan.changes), key=lambda sc: _phase(sc[1]))
        handlers: dict[str, Callable[[list[Item]], None]] = {
            "create departments": self._create_departments,
            "update departments": self._update_departments,
            "create and update employees": self._upsert_employees,
            "set photos": self._set_photos,
            "unlock employees": lambda items: self._set_locks(items, lock=False),
            "lock employees": lambda items: self._set_locks(items, lock=True),
            "remove employees": self._remove_employees,
            "forget employees": self._forget_employees,
            "delete departments": self._delete_departments,
        }
        self.pending_creates = {
            c.key for c in plan.changes if c.kind is Kind.DEPARTMENT and c.action is Action.CREATE
        }
        try:
            for name, group in phases:
                if self.stop.is_set():
                    self.result.interrupted = True
                    break
                items = [Item(seq, change) for seq, change in group]
                self.progress.phase(name, len(items))
                handlers[name](items)
        except (PlatformUnavailable, TokenError) as exc:
            self.result.error = exc
        return self.result

    def _pipeline(
        self,
        batches: Iterable[list[Item]],
        send: Callable[[list[Item]], Any],
        settle: Callable[[list[Item], Any], None],
    ) -> None:
        """Send batches, up to `concurrency` at a time; answers are settled in this thread."""
        pending = iter(batches)
        in_flight: dict[Future[Any], list[Item]] = {}
        fatal: Exception | None = None  # ends the run once the batches in flight settle
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="send") as pool:
            while True:
                while fatal is None and len(in_flight) < self.concurrency:
                    if self.stop.is_set():
                        self.result.interrupted = True
                        break
                    batch = next(pending, None)
                    if batch is None:
                        break
                    with store.write(self.engine) as conn:
                        store.mark_sent(conn, self.run_id, [i.seq for i in batch])
                    in_flight[pool.submit(send, batch)] = batch
                if not in_flight:
                    break
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    batch = in_flight.pop(future)
                    try:
                        answer = future.result()
                    except ITEM_FAILURES as exc:
                        if self._failed(batch, exc):
                            fatal = fatal or exc
                    else:
                        settle(batch, answer)
                    for item in batch:
                        item.body = {}  # sent and settled: let it go before the phase ends
                    self.progress.advance(len(batch))
        if fatal is not None:
            raise fatal

    def _send_one(
        self, item: Item, send: Callable[[Item], T], settle: Callable[[Item, T], None]
    ) -> bool:
        """Send one item in this thread, journaled as a batch is; whether it succeeded."""
        with store.write(self.engine) as conn:
            store.mark_sent(conn, self.run_id, [item.seq])
        try:
            answer = send(item)
        except ITEM_FAILURES as exc:
            if self._failed([item], exc):
                raise
            return False
        finally:
            self.progress.advance(1)
        settle(item, answer)
        return True

    def _failed(self, items: list[Item], exc: Exception) -> bool:
        """Record why these items failed; whether the error ends the run (platform gone,
        credentials refused) rather than these items alone."""
        fatal = isinstance(exc, PlatformUnavailable | TokenError)
        if isinstance(exc, PlatformError) and not fatal:
            self._fail(items, exc.message, exc.status)
        else:
            self._fail(items, str(exc))
        return fatal

    def _record(
        self,
        outcomes: Sequence[tuple[Item, str, str | None, int | None]],
        writes: Callable[[Connection], None] | None = None,
    ) -> None:
        """Settle (item, outcome, error, status) and write the snapshot, in one transaction."""
        with store.write(self.engine) as conn:
            store.settle_items(
                conn,
                self.run_id,
                [{"seq": i.seq, "outcome": o, "error": e, "status": s} for i, o, e, s in outcomes],
            )
            if writes is not None:
                writes(conn)
        for item, outcome, error, _ in outcomes:
            c = item.change
            self.result.counts[(c.kind.value, c.action.value, outcome)] += 1
            if outcome == "failed":  # the run's log groups failures by reason: detail at DEBUG
                log.debug(
                    "%s failed: %s",
                    c.message,
                    error,
                    extra={
                        "run_id": self.run_id,
                        "action": c.action.value,
                        ("department" if c.kind is Kind.DEPARTMENT else "username"): c.display,
                    },
                )

    def _fail(self, items: Sequence[Item], error: str, status: int | None = None) -> None:
        self._record([(i, "failed", error, status) for i in items])

    def _batches(self, items: Sequence[Item]) -> Iterator[list[Item]]:
        for start in range(0, len(items), self.batch_size):
            yield list(items[start : start + self.batch_size])

    # ------------------------------------------------------------ departments

    def _create_departments(self, items: list[Item]) -> None:
        # One import per depth level at most: every parent exists before its children are sent.
        for _, level in itertools.groupby(items, key=lambda i: i.change.depth):
            if self.stop.is_set():  # the levels below stay unsent, as planned
                self.result.interrupted = True
                return
            ready: list[Item] = []
            for item in level:
                if self._prepare_create(item):
                    ready.append(item)
            self._pipeline(self._batches(ready), self._send_import_orgs, self._settle_import_orgs)

    def _prepare_create(self, item: Item) -> bool:
        d = item.change.record
        assert isinstance(d, Department)
        if d.parent_id in self.pending_creates:
            self._fail([item], self._held_back(d.parent_id))
            return False
        parent_path = self.root_name if d.parent_id is None else self.paths.get(d.parent_id)
        if parent_path is None:
            self._fail([item], f"parent department {d.parent_id} is not on the platform")
            return False
        item.key = f"{parent_path}/{d.name}"
        item.body = _node_body(d) | {"type": "DEPT", "parent_path": parent_path}
        return True

    def _send_import_orgs(self, batch: list[Item]) -> ImportResult:
        return self.client.import_orgs([i.body for i in batch])

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
            self.node_ids[item.change.key] = node_id
            self.paths[item.change.key] = item.key
            self.pending_creates.discard(item.change.key)
            outcomes.append((item, "ok", note, None))
            row = self._department_row(item.change, node_id, item.key)
            if not confirmed:
                row["hash"] = ""  # not as this run sent it: compared again next run
            rows.append(row)
        self._record(outcomes, lambda conn: store.upsert_departments(conn, rows))

    def _held_back(self, department_id: str) -> str:
        """Why an item placed under a department whose creation failed is not sent."""
        where = self.department_path(department_id) or department_id
        return f"held back: department {where} was not created in this run"

    def _existing_node(self, source_id: str) -> Node | None:
        try:
            return self.client.node_by_serial(serial_no(source_id))
        except (PlatformError, PlatformUnavailable):
            return None  # the item fails with the import's own reason, and is planned again

    def _as_sent(self, item: Item, node: Node) -> bool:
        """Whether a node found by serial_no is the one this run's body describes (an
        earlier run, killed, may have created it with other values)."""
        d = item.change.record
        assert isinstance(d, Department)
        parent = self.root_id if d.parent_id is None else self.node_ids.get(d.parent_id)
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

    def _update_departments(self, items: list[Item]) -> None:
        # One at a time, in the plan's order (by new depth): a new parent is in place first.
        for item in items:
            if self.stop.is_set():
                self.result.interrupted = True
                return
            self._send_one(item, self._send_node_update, self._settle_node_update)

    def _send_node_update(self, item: Item) -> str:
        c = item.change
        d = c.record
        assert isinstance(d, Department) and c.target_id is not None
        parent_path = self.root_name if d.parent_id is None else self.paths.get(d.parent_id)
        parent_id = self.root_id if d.parent_id is None else self.node_ids.get(d.parent_id)
        if parent_path is None or parent_id is None:
            raise NotSent(f"parent department {d.parent_id} is not on the platform")
        new_path = f"{parent_path}/{d.name}"
        if c.action is not Action.ADOPT:
            body = _node_body(d)
            if c.action is Action.MOVE or c.platform_before is not None:
                body["new_parentId"] = parent_id
            self.client.update_node(c.target_id, body)
        return new_path

    def _settle_node_update(self, item: Item, new_path: str) -> None:
        c = item.change
        assert c.target_id is not None
        old_path = self.paths.get(c.key)
        self.node_ids[c.key] = c.target_id
        moved = self._rename_subtree(old_path, new_path) if old_path else {}
        self.paths[c.key] = new_path
        row = self._department_row(c, c.target_id, new_path)

        def writes(conn: Connection) -> None:
            store.upsert_departments(conn, [row])
            store.set_department_paths(conn, moved)

        self._record([(item, "ok", None, None)], writes)

    def _rename_subtree(self, old: str, new: str) -> dict[str, str]:
        """Descendants' name paths after their ancestor was renamed or moved."""
        if old == new:
            return {}
        prefix = old + "/"
        moved = {k: new + p[len(old) :] for k, p in self.paths.items() if p.startswith(prefix)}
        self.paths.update(moved)
        return moved

    def _delete_departments(self, items: list[Item]) -> None:
        for item in items:  # children first, as planned
            if self.stop.is_set():
                self.result.interrupted = True
                return
            if not self._send_one(item, self._send_node_delete, self._settle_node_delete):
                self.failed_deletes.append(self._path_of(item))

    def _path_of(self, item: Item) -> str:
        return self.paths.get(item.change.key) or item.change.display

    def _send_node_delete(self, item: Item) -> str:
        # A node whose child could not be deleted still has it: never ask the platform to
        # delete it anyway (one that allowed it would take the child along).
        prefix = self._path_of(item) + "/"
        child = next((p for p in self.failed_deletes if p.startswith(prefix)), None)
        if child is not None:
            raise NotSent(f"a child department is still there: {child} could not be deleted")
        assert item.change.target_id is not None
        try:
            self.client.delete_node(item.change.target_id)
        except PlatformError as exc:
            if exc.status != NODE_GONE:
                raise
            return "already gone from the platform"
        return ""

    def _settle_node_delete(self, item: Item, note: str) -> None:
        self.node_ids.pop(item.change.key, None)
        self.paths.pop(item.change.key, None)
        self._record(
            [(item, "ok", note or None, None)],
            lambda conn: store.delete_departments(conn, [item.change.key]),
        )

    # ------------------------------------------------------------ employees

    def _upsert_employees(self, items: list[Item]) -> None:
        # Bodies are built batch by batch as they are sent, so they never all exist at once;
        # stopped early, what was never prepared stays planned, like every unsent item.
        self._pipeline(
            self._ready_batches(iter(items), self._prepare_employee),
            self._send_import_employees,
            self._settle_upserts,
        )

    def _ready_batches(
        self, items: Iterator[Item], prepare: Callable[[Item], bool]
    ) -> Iterator[list[Item]]:
        """Batches of the items ``prepare`` readies, in order, each prepared when needed."""
        batch: list[Item] = []
        for item in items:
            if prepare(item):
                batch.append(item)
                if len(batch) == self.batch_size:
                    yield batch
                    batch = []
        if batch:
            yield batch

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

    # ------------------------------------------------------------ photos

    def _set_photos(self, items: list[Item]) -> None:
        """Each photo read from the source when its turn comes (so never all in memory),
        uploaded unless this run uploaded the same bytes already, and set as the avatar."""
        self._pipeline(self._ready_photos(items), self._send_photo, self._settle_photo)

    def _ready_photos(self, items: list[Item]) -> Iterator[list[Item]]:
        """One photo per batch, ready to send; user ids looked up USER_LOOKUP at a time."""
        for start in range(0, len(items), USER_LOOKUP):
            chunk = items[start : start + USER_LOOKUP]
            synced = [i for i in chunk if i.change.key in self.employee_ids]
            unsynced = [i for i in chunk if i.change.key not in self.employee_ids]
            if unsynced:
                self._fail(unsynced, NOT_SYNCED)
            try:
                user_ids = self._user_ids([i.change.display for i in synced])
            except PlatformError as exc:
                self._fail(synced, f"the user id could not be looked up: {exc.message}", exc.status)
                continue
            for item in synced:
                if self._prepare_photo(item, user_ids):
                    yield [item]

    def _user_ids(self, usernames: list[str]) -> dict[str, str]:
        """Username (casefolded) -> user id: the avatar is set on the user, not the employee."""
        if not usernames:
            return {}
        found = self.client.employees_by_username(usernames, batch=USER_LOOKUP)
        return {p.username.casefold(): p.user_id for p in found if p.username and p.user_id}

    def _prepare_photo(self, item: Item, user_ids: Mapping[str, str]) -> bool:
        c = item.change
        user_id = user_ids.get(c.display.casefold())
        if user_id is None:
            self._fail([item], f"the platform has no account {c.display} to set the photo on")
            return False
        assert isinstance(c.record, Photo) and self.photos is not None
        try:
            photo, data = self.photos(c.record)
        except PhotoUnavailable as exc:
            self._fail([item], f"the photo cannot be sent: {exc}")
            return False
        item.key = user_id
        item.body = {"photo": photo, "data": data}
        return True

    def _send_photo(self, batch: list[Item]) -> tuple[str, str]:
        (item,) = batch
        photo: Photo = item.body["photo"]
        with self._uploads_lock:
            uploading = self._uploading.setdefault(photo.digest, threading.Lock())
        with uploading:  # people sharing a photo: the first uploads it, the others wait
            media_id = self.media.get(photo.digest)
            if media_id is None:
                media_id = self.client.upload_image(
                    f"{item.change.display}.{EXTENSIONS[photo.type]}",
                    item.body["data"],
                    digest=photo.digest,
                    mime_type=MIME_TYPES[photo.type],
                )
                self.media[photo.digest] = media_id
        self.client.set_avatar(item.key, media_id)
        return photo.digest, media_id

    def _settle_photo(self, batch: list[Item], answer: tuple[str, str]) -> None:
        (item,) = batch
        row = (item.change.key, *answer)
        self._record([(item, "ok", None, None)], lambda conn: store.set_photos(conn, [row]))


def _node_body(d: Department) -> dict[str, Any]:
    body: dict[str, Any] = {"name": d.name, "serial_no": serial_no(d.id)}
    if d.sort_order is not None:
        body["sort_order"] = d.sort_order
    if d.sn:
        body["sn"] = d.sn
    if d.en_name:
        body["en_name"] = d.en_name
    return body


def _lookup(answer: Mapping[str, Any], username: str) -> Any:
    """An import answer's entry for this username, tolerating a platform that changes case."""
    if username in answer:
        return answer[username]
    folded = username.casefold()
    for key, value in answer.items():
        if key.casefold() == folded:
            return value
    return None
