"""One run's shared state and the journaled pipeline every phase sends its items through.

The phases (``departments``, ``employees``, ``photos``) are objects of their own, each
holding this ``Pipeline``: what they share is declared here, and nowhere else.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import orjson

from syncd.errors import (
    Fenced,
    PlatformError,
    PlatformUnavailable,
    StateError,
    SyncdError,
    TokenError,
)
from syncd.executor.writer import JournalWriter, Write
from syncd.model import Kind
from syncd.plan import Change, KnownProblem, Snapshot
from syncd.platform import PlatformClient
from syncd.snapshot import StateStore, Transaction

log = logging.getLogger("syncd.executor")  # the package's name, as the run log shows it

T = TypeVar("T")


class NotSent(Exception):
    """An item that could not be sent (its parent or department is missing): it fails alone."""


# What sending an item may raise that is recorded against it (see Pipeline._failed).
ITEM_FAILURES = (PlatformError, PlatformUnavailable, NotSent)


class Lease(Protocol):
    """A real run's right to write (leadership.Turn), which alone judges it lost."""

    def may_send(self) -> bool:
        """False, for the rest of the run, once the lease is not surely this run's."""
        ...

    def ended_by(self, exc: BaseException) -> bool:
        """Whether a failure of the run is the lease lost rather than a fault."""
        ...


def lease_lost(lease: Lease | None, exc: BaseException) -> bool:
    """Whether a failure of a run is its lease lost: the lease judges (``Lease.ended_by``);
    a run without one only by the store's own refusal (Fenced)."""
    return lease.ended_by(exc) if lease is not None else isinstance(exc, Fenced)


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
    sent: int = 0  # times it was sent in this run (a value refused is sent again without it)


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


# What orjson refuses (a key that is not text, an integer past 64 bits) goes through the
# json module, one encoder for all: json.dumps with options builds a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True)


def _json(value: Mapping[str, Any] | None) -> str | None:
    """A journal or snapshot value as JSON text, keys sorted, written once at plan time.

    orjson (a dependency already, for the platform's answers): a person's fields in about a
    fifth of the json module's time, the text compact (no spaces after ``,`` and ``:``).
    Every reader parses the text (recovery, reports, the snapshot), so older rows written
    by the json module, with spaces, read the same.
    """
    if value is None:
        return None
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONEncodeError:
        return _ENCODER.encode(value)


class Pipeline:
    """What a run's phases share, declared here, and the one journaled path they send through.

    Each phase (``Departments``, ``Employees``, ``Photos``) holds this object; the state
    below is all they share: the client, the run, the ids and name paths the platform
    gave (kept current as answers come), the departments still being created, the result.
    Journal and snapshot writes go through ``writer`` (a thread of its own) while
    ``journaling``; every batch leaves through ``_release``.
    """

    def __init__(
        self,
        client: PlatformClient,
        state: StateStore,
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
        lease: Lease | None = None,
    ) -> None:
        self.client = client
        self.state = state  # the journal writer's transactions
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
        # Accounts syncd may lock or unlock, or set a photo on: the snapshot's, and those
        # upserted this run.
        self.employee_ids = {
            k: e.employee_id for k, e in snapshot.employees.items() if e.employee_id is not None
        }
        # Departments this run creates, until the platform confirms each: what is placed in
        # one still here when it is sent is held back, rather than refused by the platform.
        self.pending_creates: set[str] = set()
        self.result = ApplyResult()
        self._writer: JournalWriter | None = None
        # Asked before each batch leaves and before each attempt of a write (may_send):
        # False, and nothing more is sent. A real run's journal transactions are fenced by
        # its store itself (StateStore.fenced).
        self.lease = lease
        self._fenced = False

    # ------------------------------------------------------------ the journal writer

    @property
    def writer(self) -> JournalWriter:
        """The thread that commits this run's journal and snapshot writes (``journaling``)."""
        if self._writer is None:
            raise RuntimeError("the executor writes only while journaling")
        return self._writer

    @contextmanager
    def journaling(self) -> Iterator[None]:
        """A journal writer for the block, and the client's writes guarded by ``may_send``;
        at its end every write queued is committed (the writer's error, if one stopped it,
        is raised then). Fenced (the store refused a journal transaction, or a request's
        attempt found the deadline passed) ends the block: the run is interrupted, and what
        it left ``sent`` is for the instance holding the lease to resolve. So does a state
        database error once the lease is surely not this run's (``Lease.ended_by``)."""
        writer = self._writer = JournalWriter(self.state)
        try:
            with self.client.guarded(self.lease.may_send if self.lease is not None else None):
                yield
        except Fenced:
            self._fenced = self.result.interrupted = True
            with suppress(Exception):
                writer.close()
            return
        except BaseException as exc:
            # What was answered is still recorded; the block's own error is the one raised.
            with suppress(Exception):
                writer.close()
            if not lease_lost(self.lease, exc):
                raise
            self._fenced = self.result.interrupted = True
            return
        finally:
            self._writer = None
        try:
            writer.close()
        except (Fenced, StateError) as exc:
            if not lease_lost(self.lease, exc):
                raise
            self._fenced = self.result.interrupted = True

    def may_send(self) -> bool:
        return self.lease is None or self.lease.may_send()

    # ------------------------------------------------------------ the journaled pipeline

    def pipeline(
        self,
        batches: Iterable[list[Item]],
        send: Callable[[list[Item]], Any],
        settle: Callable[[list[Item], Any], None],
    ) -> None:
        """Send batches, up to `concurrency` at a time; answers are settled in this thread.

        Up to `concurrency` batches are journaled as sent ahead, while those before them
        are on the wire; each leaves only once its mark is committed (``_release``). A
        batch's answer is settled here and its writes handed to the writer, committed in
        order with the marks after them. Batches marked ahead that a stop or a run-level
        failure keeps from leaving are journaled as planned again.
        """
        pending = iter(batches)
        marked: deque[tuple[int, list[Item]]] = deque()  # journaled as sent, not yet sent
        in_flight: dict[Future[Any], list[Item]] = {}
        fatal: Exception | None = None  # ends the run once the batches in flight settle
        try:
            with ThreadPoolExecutor(self.concurrency, thread_name_prefix="send") as pool:
                while True:
                    while fatal is None and len(in_flight) < self.concurrency:
                        self._mark_ahead(pending, marked)
                        if not marked or self._stopped():
                            break
                        ticket, batch = marked[0]
                        if not self._release(ticket):
                            break  # fenced: it stays marked, planned again below
                        marked.popleft()
                        for item in batch:
                            item.sent += 1
                        in_flight[pool.submit(send, batch)] = batch
                    if not in_flight:
                        break
                    self.writer.hand_over()  # committed while the answers are awaited
                    done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                    for future in done:
                        batch = in_flight.pop(future)
                        try:
                            answer = future.result()
                        except ITEM_FAILURES as exc:
                            if self.failed(batch, exc):
                                fatal = fatal or exc
                        else:
                            settle(batch, answer)
                        for item in batch:
                            item.body = {}  # sent and settled: let it go before the phase ends
                        self.progress.advance(len(batch))
        finally:
            self._unsent(marked)
        if fatal is not None:
            raise fatal

    def _unsent(self, marked: deque[tuple[int, list[Item]]]) -> None:
        """Batches marked ahead and never sent (a stop, a run-level failure, an error while
        settling): planned again, as every unsent item. Unless the writer failed: then
        what it committed of them is left marked sent, for recovery to look up."""
        if marked and not self.writer.failed:
            unsent = [[i.seq for i in b] for _, b in marked]
            run_id = self.run_id

            def unmark(tx: Transaction) -> None:
                for seqs in unsent:
                    tx.unmark(run_id, seqs)

            self.writer.submit(unmark)
        if not self.writer.failed:
            self.writer.hand_over()

    def _mark_ahead(
        self, pending: Iterator[list[Item]], marked: deque[tuple[int, list[Item]]]
    ) -> None:
        """Journal the next batches as sent, up to `concurrency` ahead of those sent."""
        while len(marked) < self.concurrency and not self._stopped():
            batch = next(pending, None)
            if batch is None:
                return
            marked.append((self.writer.submit(self._marking(batch)), batch))

    def _marking(self, batch: list[Item]) -> Write:
        """The write that journals ``batch`` as sent."""
        run_id, seqs = self.run_id, [i.seq for i in batch]
        return lambda tx: tx.mark_sent(run_id, seqs)

    def _stopped(self) -> bool:
        if self.stop.is_set() or self._fenced:
            self.result.interrupted = True
            return True
        return False

    def _release(self, ticket: int) -> bool:
        """The one point every batch passes just before it is sent, in the applying thread:
        whether it may leave.

        Its sent mark (``ticket``) is committed first, and that commit checked the lease
        in the store (the writer's fence): a crash from here on leaves it ``sent``, which
        recovery resolves. Then the local fence (``may_send``: the lease's deadline by this
        host's monotonic clock, leadership.Turn): once it says no, nothing more is sent
        and the run ends interrupted; the batch is planned again, never sent.
        """
        if self._fenced or not self.may_send():  # a pause: said before the commit's wait
            self._fenced = self.result.interrupted = True
            return False
        try:
            self.writer.wait(ticket)
        except Fenced:
            self._fenced = self.result.interrupted = True
            return False
        if self.may_send():
            return True
        self._fenced = self.result.interrupted = True
        return False

    def send_one(
        self, item: Item, send: Callable[[Item], T], settle: Callable[[Item, T], None]
    ) -> bool:
        """Send one item in this thread, journaled as a batch is; whether it succeeded."""
        ticket = self.writer.submit(self._marking([item]))
        if not self._release(ticket):
            self._unsent(deque([(ticket, [item])]))
            return False
        item.sent += 1
        try:
            answer = send(item)
        except ITEM_FAILURES as exc:
            if self.failed([item], exc):
                raise
            return False
        finally:
            self.progress.advance(1)
        settle(item, answer)
        return True

    def failed(self, items: list[Item], exc: Exception) -> bool:
        """Record why these items failed; whether the error ends the run (platform gone,
        credentials refused) rather than these items alone."""
        fatal = isinstance(exc, PlatformUnavailable | TokenError)
        if isinstance(exc, PlatformError) and not fatal:
            self.fail(items, exc.message, exc.status)
        else:
            self.fail(items, str(exc))
        return fatal

    def record(
        self,
        outcomes: Sequence[tuple[Item, str, str | None, int | None]],
        writes: Write | None = None,
    ) -> None:
        """Settle (item, outcome, error, status) and write the snapshot, in one transaction
        (committed by the writer, in order)."""
        rows = [
            {"seq": i.seq, "outcome": o, "error": e, "status": s, "attempts": i.sent}
            for i, o, e, s in outcomes
        ]
        run_id = self.run_id

        def write(tx: Transaction) -> None:
            tx.settle_items(run_id, rows)
            if writes is not None:
                writes(tx)

        self.writer.submit(write)
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

    def fail(self, items: Sequence[Item], error: str, status: int | None = None) -> None:
        self.record([(i, "failed", error, status) for i in items])

    def batches(self, items: Sequence[Item]) -> Iterator[list[Item]]:
        for start in range(0, len(items), self.batch_size):
            yield list(items[start : start + self.batch_size])

    def ready_batches(
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

    def held_back(self, department_id: str) -> str:
        """Why an item placed under a department whose creation failed is not sent."""
        where = self.department_path(department_id) or department_id
        return f"held back: department {where} was not created in this run"
