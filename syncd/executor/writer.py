"""The run's journal and snapshot writes, committed in order by a thread of their own.

The applying thread queues each write (a batch marked sent, a batch's answers with its
snapshot rows) and goes on preparing and sending; the writer commits them in the order
they were queued, all those handed over (``hand_over``) in one transaction, so a round of
batches costs one commit rather than one per write. Each write gets a ticket;
``wait(ticket)`` hands over all queued and returns once that write, and every one before it, is
committed. That is how a batch leaves only after its sent mark is durable: the pipeline
waits for the mark's ticket, and nothing else, before sending (``Pipeline._release``).

A write that fails (a full disk, a damaged file: the engine's StateError) stops the
writer: the writes after it are dropped, never committed out of order, and every
``wait`` from then on raises that error, so nothing more is sent.

A real run's store is fenced (``StateStore.fenced``: a real run's ``leadership.Turn.fence``
runs in every transaction, after its writes and before its commit): when the lease no
longer names this instance and epoch, it raises errors.Fenced, the transaction rolls back,
and the writer stops as above. So the commit of a batch's sent mark is the store's fence
for that batch: no extra round trip.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from syncd.snapshot import Transaction

log = logging.getLogger("syncd.executor")

Write = Callable[[Transaction], None]

# Writes committed in one transaction at most: more than a round of batches in flight
# produces, few enough that a transaction stays short.
GROUP = 256


class Transactions(Protocol):
    """Where the writer's transactions come from: the run's StateStore (fenced, for a real
    run)."""

    def transaction(self) -> AbstractContextManager[Transaction]: ...


class JournalWriter:
    """Commits writes in the order given, from its own thread, a group per transaction."""

    def __init__(self, state: Transactions) -> None:
        self._state = state
        self._changed = threading.Condition()
        self._waiting: deque[tuple[int, Write]] = deque()
        self._given = 0  # the last ticket given
        self._handed = 0  # the writes up to this ticket may be committed
        self._committed = 0  # every write up to this ticket is committed
        self._error: BaseException | None = None
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="journal", daemon=True)
        self._thread.start()

    def submit(self, write: Write) -> int:
        """Queue ``write`` (committed once handed over); its ticket, for ``wait``. Raises
        the writer's error, if any."""
        with self._changed:
            self._raise_error()
            if self._closing:
                raise RuntimeError("the journal writer is closed")
            self._given += 1
            self._waiting.append((self._given, write))
            return self._given

    def hand_over(self) -> None:
        """Let the writer commit every write queued so far (the applying thread calls this
        before it waits for answers)."""
        with self._changed:
            if self._handed < self._given:
                self._handed = self._given
                self._changed.notify_all()

    def wait(self, ticket: int) -> None:
        """Until the write of ``ticket`` (and every one before it) is committed; raises the
        error that stopped the writer instead."""
        with self._changed:
            if self._handed < self._given:  # what was queued before: committed with it
                self._handed = self._given
                self._changed.notify_all()
            while self._committed < ticket:
                self._raise_error()
                self._changed.wait()

    def flush(self) -> None:
        """Until every write queued so far is committed."""
        with self._changed:
            ticket = self._given
        self.wait(ticket)

    def close(self) -> None:
        """Commit what is queued, then end the thread; raises the writer's error, if any."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join()
        with self._changed:
            self._raise_error()

    @property
    def failed(self) -> bool:
        with self._changed:
            return self._error is not None

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error  # as the statement raised it: a StateError naming the database

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._closing and not (self._waiting and self._handed > self._committed):
                    self._changed.wait()
                if not self._waiting:
                    return  # closing, and everything committed
                handed = self._handed if not self._closing else self._given
                group: list[tuple[int, Write]] = []
                while self._waiting and self._waiting[0][0] <= handed and len(group) < GROUP:
                    group.append(self._waiting.popleft())
            try:
                with self._state.transaction() as tx:
                    for _, write in group:
                        write(tx)
            except BaseException as exc:  # handed to the applying thread, which raises it
                log.debug("the journal writer stopped: %s", exc)
                with self._changed:
                    self._error = exc
                    self._waiting.clear()  # never committed after a write that failed
                    self._changed.notify_all()
                return
            with self._changed:
                self._committed = group[-1][0]
                self._changed.notify_all()
