"""One run's state and the journaled pipeline every phase sends its items through."""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection, Engine

from syncd import snapshot as store
from syncd.errors import PlatformError, PlatformUnavailable, SyncdError, TokenError
from syncd.model import Kind, Photo
from syncd.plan import Change, KnownProblem, Snapshot
from syncd.platform import PlatformClient

log = logging.getLogger("syncd.executor")  # the package's name, as the run log shows it

T = TypeVar("T")


class NotSent(Exception):
    """An item that could not be sent (its parent or department is missing): it fails alone."""


# What sending an item may raise that is recorded against it (see Pipeline._failed).
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


@dataclass(slots=True)  # one per change: 100,000 on a first sync
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
    # Values another account holds, found for the first time in this run: the people were
    # written without them (known problems, told once).
    new_problems: list[tuple[KnownProblem, str]] = field(default_factory=list)

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


class Pipeline:
    """The executor's state, shared by its phases, and the one path they send through."""

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
        may_send: Callable[[], bool] | None = None,
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
        self.problems = snapshot.problems  # known problems, as the run started
        self.problem_keys = set(snapshot.problems)  # people with one, this run's included
        self.holders: dict[tuple[str, str], str | None] = {}  # (field, value key) -> username
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
        self._open = threading.local()  # .conn: the write transaction this thread has open
        # Asked before each batch leaves (leadership.Turn): False, and nothing more is sent.
        self.may_send = may_send or (lambda: True)

    # ------------------------------------------------------------ the journaled pipeline

    def _pipeline(
        self,
        batches: Iterable[list[Item]],
        send: Callable[[list[Item]], Any],
        settle: Callable[[list[Item], Any], None],
    ) -> None:
        """Send batches, up to `concurrency` at a time; answers are settled in this thread.

        A batch's answer is settled, and the batch that takes its place journaled as sent,
        in one transaction: committed before that batch leaves, as a crash needs.
        """
        pending = iter(batches)
        in_flight: dict[Future[Any], list[Item]] = {}
        fatal: Exception | None = None  # ends the run once the batches in flight settle
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="send") as pool:
            with self._transaction() as conn:
                leaving = self._next_batches(conn, pending, len(in_flight))
            while True:
                for batch in leaving:
                    in_flight[pool.submit(send, batch)] = batch
                if not in_flight:
                    break
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                with self._transaction() as conn:
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
                    leaving = [] if fatal else self._next_batches(conn, pending, len(in_flight))
        if fatal is not None:
            raise fatal

    def _next_batches(
        self, conn: Connection, pending: Iterator[list[Item]], in_flight: int
    ) -> list[list[Item]]:
        """The batches that fill the free slots, journaled as sent in ``conn``."""
        leaving: list[list[Item]] = []
        while in_flight + len(leaving) < self.concurrency:
            if self.stop.is_set() or not self.may_send():
                self.result.interrupted = True
                break
            batch = next(pending, None)
            if batch is None:
                break
            store.mark_sent(conn, self.run_id, [i.seq for i in batch])
            leaving.append(batch)
        return leaving

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """A write transaction, or the one this thread has open (joined, committed with it)."""
        joined: Connection | None = getattr(self._open, "conn", None)
        if joined is not None:
            yield joined
            return
        with store.write(self.engine) as conn:
            self._open.conn = conn
            try:
                yield conn
            finally:
                self._open.conn = None

    def _send_one(
        self, item: Item, send: Callable[[Item], T], settle: Callable[[Item, T], None]
    ) -> bool:
        """Send one item in this thread, journaled as a batch is; whether it succeeded."""
        if not self.may_send():
            self.result.interrupted = True
            return False
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
        with self._transaction() as conn:
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

    def _held_back(self, department_id: str) -> str:
        """Why an item placed under a department whose creation failed is not sent."""
        where = self.department_path(department_id) or department_id
        return f"held back: department {where} was not created in this run"
