"""The employees' phases: upserts (and their bodies), locks, removes and forgets."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime
from typing import Any

from syncd.executor.holders import find_holders, malformed_field, refused_field
from syncd.executor.pipeline import ITEM_FAILURES, Item, Pipeline, _json, log
from syncd.model import Employee, State
from syncd.plan import Action, Change, KnownProblem, Snapshot, employee_fields, extended_values
from syncd.plan.tags import Tag, tag_names, tag_pairs, tags_to_send
from syncd.plan.unique_values import UNIQUE, value_key, with_values
from syncd.plan.values import DEPARTED
from syncd.platform import ImportResult
from syncd.platform.schemas import EmployeeRecord
from syncd.snapshot import Transaction

OPTIONAL_TEXT = ("en_name", "email", "mobile", "tel", "sn", "gender")
NOT_SYNCED = "this person's account is not synced: not created or adopted"


def birthday_ms(iso: str) -> int:
    """An ISO date as the platform's 13-digit timestamp (midnight UTC)."""
    day = date.fromisoformat(iso)
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


class Employees:
    """Accounts created or updated in bulk, locked, unlocked, removed and forgotten."""

    def __init__(self, run: Pipeline, snapshot: Snapshot) -> None:
        self.run = run
        self.synced_employees = snapshot.employees  # a re-keyed record keeps its lock state
        self.problems = snapshot.problems  # known problems, as the run started
        self.problem_keys = set(snapshot.problems)  # people with one, this run's included
        self.holders: dict[tuple[str, str], str | None] = {}  # (field, value key) -> username
        self._left_out: dict[int, tuple[str, ...]] = {}  # seq -> fields sent without
        self._refused: list[Item] = []  # refused for a value another account holds
        # (seq, field) -> the platform's words, of the values refused for their form
        self._malformed: dict[tuple[int, str], str] = {}

    def upsert(self, items: list[Item]) -> None:
        # Bodies are built batch by batch as they are sent, so they never all exist at once;
        # stopped early, what was never prepared stays planned, like every unsent item.
        self._left_out = {}
        self._refused = []
        self._malformed = {}
        self._platform_tags = self._read_platform_tags(items)
        self.run.pipeline(
            self.run.ready_batches(iter(items), self._prepare_employee),
            self._send_import_employees,
            self._settle_upserts,
        )
        # A value another account holds, or refused for its form, does not fail the person:
        # sent again without it (once more per field at most: each refusal names one), then
        # recorded as a known problem.
        for _ in UNIQUE:
            refused, self._refused = self._refused, []
            if not refused or self.run.stop.is_set():
                self._refused += refused
                break
            self._name_holders(refused)  # recorded with each person, when written
            self.run.pipeline(
                self.run.ready_batches(iter(refused), self._prepare_employee),
                self._send_import_employees,
                self._settle_upserts,
            )
        if self._refused:  # stopped before they were sent again: planned again next run
            self.run.fail(self._refused, "a value another account holds: not sent again (stopped)")

    def _prepare_employee(self, item: Item) -> bool:
        e = item.change.record
        assert isinstance(e, Employee)
        positions = []
        # As a rule one position, and no department still waiting for the platform's word.
        primary = 0
        if len(e.positions) > 1:
            primary = next((n for n, p in enumerate(e.positions) if p.primary), 0)
        if pending := self.run.pending_creates:
            held = next((p.department_id for p in e.positions if p.department_id in pending), None)
            if held is not None:
                self.run.fail([item], self.run.held_back(held))
                return False
        for n, p in enumerate(e.positions):
            position: dict[str, Any] = {"primary": n == primary, "chief": p.chief}
            title = p.job_title or (e.job_title if n == primary else None)
            if title:
                position["job_title"] = title
            if p.department_id is None:
                position["org_id"] = self.run.root_id
            elif (node_id := self.run.node_ids.get(p.department_id)) is not None:
                position["org_id"] = node_id
            elif (path := self.run.department_path(p.department_id)) is not None:
                position["org_path"] = path
            else:
                self.run.fail([item], f"department {p.department_id} is not on the platform")
                return False
            positions.append(position)
        if not positions:
            positions = [{"org_id": self.run.root_id, "primary": True, "job_title": e.job_title}]
        item.key = e.username
        item.body = self._employee_body(item.change, e, positions)
        if not self._with_tags(item, e):
            return False
        for name in self._left_out.get(item.seq, ()):
            if item.change.action is Action.CREATE:
                item.body.pop(name, None)
            else:
                item.body[name] = ""  # not what the source says: not kept either
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

    def _with_tags(self, item: Item, e: Employee) -> bool:
        """Add ``tag_names`` to the body when the tags syncd sets change (plan/tags.py):
        sent with the person's tags as the platform holds them (read beforehand,
        ``_read_platform_tags``), so that those another admin set stay. False: they could
        not be read, and the item fails with it."""
        c = item.change
        wanted = set(e.tags)
        had = tag_pairs((c.before or {}).get("tags") or ())
        if wanted == had:
            return True  # no tag field sent: the platform keeps the person's tags
        found = self._platform_tags.get(item.seq, frozenset())  # a new account: none
        if isinstance(found, str):
            self.run.fail([item], found)
            return False
        item.body["tag_names"] = tag_names(tags_to_send(found, had, wanted))
        return True

    def _read_platform_tags(self, items: list[Item]) -> dict[int, frozenset[Tag] | str]:
        """Item seq -> the tags the platform holds for the person (or why they could not
        be read), for the existing accounts whose syncd-set tags change. The list form
        says who has any tags (100 people a call); only they are read whole (the detail
        form names each tag's group), ``concurrency`` at a time."""
        needing = _tags_changing(items)
        if not needing:
            return {}
        try:
            records = self._listed(needing)
        except (*ITEM_FAILURES, ValueError) as exc:  # ValueError: a username with a comma
            return dict.fromkeys(needing, f"the person's tags could not be read: {exc}")
        found: dict[int, frozenset[Tag] | str] = {}
        whole: dict[int, int] = {}  # seq -> employee id, for those holding tags
        for seq, record in records.items():
            if record is None or not record.tags:
                found[seq] = frozenset()  # no account, or no tags: none to keep
            else:
                whole[seq] = record.id
        with ThreadPoolExecutor(
            max_workers=self.run.concurrency, thread_name_prefix="tags"
        ) as pool:
            found.update(zip(whole, pool.map(self._tag_detail, whole.values()), strict=True))
        return found

    def _listed(self, needing: Mapping[int, Item]) -> dict[int, EmployeeRecord | None]:
        """Item seq -> the person's list-form record (None: no account), by employee id where
        syncd knows it, else by username."""
        by_id = {seq: i.change.target_id for seq, i in needing.items()}
        client = self.run.client
        listed = {r.id: r for r in client.employees_by_id([t for t in by_id.values() if t])}
        missing = [i.change.display for i in needing.values() if i.change.target_id is None]
        named = {r.username: r for r in client.employees_by_username(missing)}
        return {
            seq: listed.get(by_id[seq] or -1) or named.get(item.change.display)
            for seq, item in needing.items()
        }

    def _tag_detail(self, employee_id: int) -> frozenset[Tag] | str:
        """The tags of one person, from the detail form (or why they could not be read)."""
        try:
            names = self.run.client.employee(employee_id).get("tag_names")
        except ITEM_FAILURES as exc:
            return f"the person's tags could not be read: {exc}"
        if not isinstance(names, list):
            return "the platform's record gives no tag_names: tags left as they are"
        return frozenset(tag_pairs(names))

    def _send_import_employees(self, batch: list[Item]) -> ImportResult:
        return self.run.client.import_employees([i.body for i in batch])

    def _settle_upserts(self, batch: list[Item], answer: ImportResult) -> None:
        outcomes: list[tuple[Item, str, str | None, int | None]] = []
        rows: list[tuple[Item, dict[str, Any]]] = []
        rekeyed: list[str] = []
        stripped: dict[int, str] = {}  # seq -> the fields written, without a refused value
        found: list[tuple[Item, str]] = []  # written without this field's value
        solved: list[tuple[str, str]] = []  # (source id, field) written as wanted at last
        for item in batch:
            employee_id = _lookup(answer.successes, item.key)
            if employee_id is None:
                error = (
                    _lookup(answer.failures, item.key) or "the answer did not mention this person"
                )
                if self._refusable(item, error):
                    continue  # sent again without the value (see _upsert_employees)
                outcomes.append((item, "failed", error, None))
                continue
            c = item.change
            left_out = self._left_out.get(item.seq, ())
            if left_out and isinstance(c.record, Employee):
                without = with_values(c.record, dict.fromkeys(left_out))
                stripped[item.seq] = _json(employee_fields(without, c.extended_fields or {})) or ""
                found += [(item, name) for name in left_out]
            if not c.frees:  # a freeing update writes values held back: it settles nothing
                solved += [
                    (c.key, name)
                    for name in UNIQUE
                    if name not in left_out and c.key in self.problem_keys
                ]
            self.run.employee_ids[c.key] = employee_id
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

        problems = self._problems(found)  # before the next batch is settled
        run_id, now = self.run.run_id, self.run.now_ms()

        def writes(tx: Transaction) -> None:  # in the journal writer's thread
            # The snapshot keeps the very JSON text the journal holds for each item: read
            # back in one query rather than encoded a second time.
            journaled = tx.journaled_after(run_id, batch[0].seq, batch[-1].seq)
            for item, row in rows:
                row["fields"] = (
                    stripped.get(item.seq)
                    or journaled.get(item.seq)
                    or _json(item.change.after)
                    or "{}"
                )
            tx.forget_employees(rekeyed)  # by source id: the row is the old key's
            tx.upsert_employees([row for _, row in rows])
            tx.set_locked(recreated, False, None, None)
            if problems or solved:  # with the people written: a crash loses neither
                self._write_problems(tx, problems, solved, run_id, now)

        self.run.record(outcomes, writes)

    def _refusable(self, item: Item, error: str) -> bool:
        """Whether the platform refused a unique value another account holds, or a value for
        its form (a malformed mobile), one this item still sends: then it is sent again
        without it, and the person's other fields are written."""
        name = refused_field(error)
        malformed = name is None and (name := malformed_field(error)) is not None
        e = item.change.record
        if name is None or name in self._left_out.get(item.seq, ()) or not isinstance(e, Employee):
            return False
        if not (getattr(e, name) or "").strip():
            return False
        if malformed:
            self._malformed[(item.seq, name)] = error
        elif value_key(name, getattr(e, name)) is None:
            return False
        self._left_out[item.seq] = (*self._left_out.get(item.seq, ()), name)
        self._refused.append(item)
        return True

    def _known(self, c: Change, name: str) -> KnownProblem | None:
        """The known problem recorded for this person's value, if the same value."""
        value = getattr(c.record, name)
        return next(
            (p for p in self.problems.get(c.key, ()) if p.field == name and p.value == value),
            None,
        )

    def _name_holders(self, refused: list[Item]) -> None:
        """Ask the platform who holds the values refused for the first time (see holders)."""
        unknown = set()
        for item in refused:
            for name in self._left_out.get(item.seq, ()):
                if (item.seq, name) in self._malformed:
                    continue  # refused for its form: nobody holds it
                pair = (name, value_key(name, getattr(item.change.record, name)) or "")
                if pair not in self.holders and self._known(item.change, name) is None:
                    unknown.add(pair)
        if not unknown:
            return
        self.holders.update(dict.fromkeys(unknown))
        try:
            self.holders.update(find_holders(self.run.client, unknown, self.run.concurrency))
        except ITEM_FAILURES as exc:  # the people are written all the same, the holder unnamed
            log.warning("the holders of %d refused values were not found: %s", len(unknown), exc)

    def _problems(self, found: list[tuple[Item, str]]) -> list[tuple[KnownProblem, str]]:
        """The known problems of the values these people are written without, with the
        username of each: the one recorded if the value is the same, else a new one."""
        problems: list[tuple[KnownProblem, str]] = []
        for item, name in found:
            c = item.change
            known = self._known(c, name)
            refusal = self._malformed.get((item.seq, name))
            if known is None and refusal is not None:
                known = KnownProblem(c.key, name, getattr(c.record, name), refusal=refusal)
            elif known is None:
                value = getattr(c.record, name)
                holder = self.holders.get((name, value_key(name, value) or ""))
                known = KnownProblem(c.key, name, value, holder, None)
            problems.append((known, item.key))
        self.problem_keys.update(p.source_id for p, _ in problems)
        return problems

    def _write_problems(
        self,
        tx: Transaction,
        problems: list[tuple[KnownProblem, str]],
        solved: list[tuple[str, str]],
        run_id: int,
        now: int,
    ) -> None:
        """Known problems for the values these people were written without; those written
        at last are solved. The new ones are told by the run (ApplyResult.new_problems,
        which the applying thread reads once the writer is closed)."""
        tx.resolve_problems(solved)
        tx.forget_gone()
        # The holder's source id, when syncd holds that account (as of this run's writes).
        owned = tx.source_ids([p.holder for p, _ in problems if p.holder])
        problems = [(p._replace(holder_key=owned.get(p.holder or "")), u) for p, u in problems]
        new = tx.record_problems(run_id, now, problems)
        names = {(p.source_id, p.field): u for p, u in problems}
        self.run.result.new_problems += [(p, names[(p.source_id, p.field)]) for p in new]

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
                "lock_reason": DEPARTED if departed else None,
                "locked_since": self.run.now_ms(),
            }
        # A hire made before the start day starts "not_started", unlocked until the lock
        # planned with it settles (syncd.plan.schedule: a failed one is planned again).
        return {"locked": False, "lock_reason": c.lock_reason, "locked_since": None}

    def set_locks(self, items: list[Item], *, lock: bool) -> None:
        ready = []
        for item in items:
            # Only an account syncd owns: the platform's account of a person whose
            # adoption failed this run is not syncd's to lock or unlock (retried next run).
            employee_id = self.run.employee_ids.get(item.change.key)
            if employee_id is None:
                self.run.fail([item], NOT_SYNCED)
                continue
            item.body = {"id": employee_id}
            ready.append(item)
        send = self._send_lock if lock else self._send_unlock
        self.run.pipeline(([i] for i in ready), send, lambda b, _: self._settle_lock(b, lock))

    def _send_lock(self, batch: list[Item]) -> None:
        self.run.client.depart(batch[0].body["id"])

    def _send_unlock(self, batch: list[Item]) -> None:
        self.run.client.reinstate(batch[0].body["id"])

    def _settle_lock(self, batch: list[Item], lock: bool) -> None:
        (item,) = batch
        c = item.change
        reason = (
            (c.lock_reason or (DEPARTED if c.record is not None else "missing")) if lock else None
        )
        since = self.run.now_ms()
        self.run.record(
            [(item, "ok", None, None)],
            lambda tx: tx.set_locked([c.key], lock, reason, since),
        )

    def remove(self, items: list[Item]) -> None:
        for item in items:
            item.key = item.change.display
            name = (item.change.before or {}).get("name") or item.key
            item.body = {"username": item.key, "name": name}
        self.run.pipeline(self.run.batches(items), self._send_remove, self._settle_removes)

    def forget(self, items: list[Item]) -> None:
        """People gone from the platform and not wanted back: the snapshot lets them go."""
        gone = [(i.change.key, i.change.display) for i in items]
        for item in items:
            self.run.employee_ids.pop(item.change.key, None)
        self.run.record(
            [(i, "ok", None, None) for i in items],
            lambda tx: tx.delete_employees(gone),
        )
        self.run.progress.advance(len(items))

    def _send_remove(self, batch: list[Item]) -> ImportResult:
        return self.run.client.import_employees([i.body for i in batch], remove=True)

    def _settle_removes(self, batch: list[Item], answer: ImportResult) -> None:
        failed = [i for i in batch if _lookup(answer.successes, i.key) is None]
        still_there = set()
        if failed:  # "not found" means already gone; anything else, ask the platform
            found = self.run.client.employees_by_username([i.key for i in failed])
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
                self.run.employee_ids.pop(item.change.key, None)
        self.run.record(outcomes, lambda tx: tx.delete_employees(gone))


def _tags_changing(items: list[Item]) -> dict[int, Item]:
    """The items (by seq) of existing accounts whose syncd-set tags change."""
    return {
        item.seq: item
        for item in items
        if item.change.action is not Action.CREATE
        and isinstance(e := item.change.record, Employee)
        and set(e.tags) != tag_pairs((item.change.before or {}).get("tags") or ())
    }


def _lookup(answer: Mapping[str, Any], username: str) -> Any:
    """An import answer's entry for this username, tolerating a platform that changes case."""
    if username in answer:
        return answer[username]
    folded = username.casefold()
    for key, value in answer.items():
        if key.casefold() == folded:
            return value
    return None
