"""The application's one access token, shared by every syncd process using the database.

A renewal never waits for the database's write lock. The run that renews may hold that
lock itself (a batch's transaction, settled while a look-up is sent), and a renewal that
waited for it waited out the busy timeout and failed the run with "database is locked".
So renewals are serialized between processes by a lock of their own (``token.lock``
beside the SQLite database; on PostgreSQL a session advisory lock, for every host), the
token in use is the one in memory, and the
database gets it as soon as its write lock is free: at once when it is, else from a
thread that waits for it (``flush``), compare-and-set against the token it replaces, so
a newer token another process stored meanwhile is never overwritten by an older one.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from syncd.access_token import CachedToken as CachedToken  # re-exported: syncd.snapshot.CachedToken
from syncd.errors import StateError
from syncd.snapshot import postgres, sqlite
from syncd.snapshot.tables import BUSY_TIMEOUT_MS

log = logging.getLogger(__name__)

TOKEN_LOCK = "token.lock"  # noqa: S105 - a file name, beside the database
_LOCK_POLL_S = 0.05


@dataclass(frozen=True, slots=True)
class _Pending:
    token: CachedToken
    # The tokens it replaces: the one stored when it was fetched (None: none stored) and
    # those this process fetched before it and has not stored yet. Whichever of them the
    # database holds when it is written, it is older: the newest is written over it.
    replaces: tuple[str | None, ...]


class TokenStore:
    """The application's one token, shared by every syncd process using this database.

    The platform keeps one token per application and a new one invalidates the old, so a
    renewal first looks whether another process already replaced the refused token (it
    takes that one), and fetches only if not, under ``token.lock``.

    ``app`` keys carry a digest of the application's secret (``platform.app_key``): a
    token fetched with another secret is another key's, and is never used for this one.
    """

    def __init__(self, engine: Engine) -> None:
        from syncd.snapshot.engine import describe, state_dir
        from syncd.snapshot.sql import is_postgresql

        self._table: sqlite.Tokens | postgres.Tokens
        if is_postgresql(engine):
            self._table = postgres.Tokens(engine, describe(engine))
        else:
            database = engine.url.database
            if not database:
                raise StateError("the token store needs a state database file")
            self._table = sqlite.Tokens(Path(database))
            self._lock_path = state_dir(engine) / TOKEN_LOCK
        self._place = describe(engine)
        self._pending: dict[str, _Pending] = {}
        self._mutex = threading.Lock()  # guards _pending
        self._renewing = threading.Lock()  # one renewal at a time in this process
        self._writers: list[threading.Thread] = []

    # ------------------------------------------------------------ what the keeper asks

    def get(self, app: str) -> CachedToken | None:
        """This process's newest token for ``app`` if the database has not had it yet,
        else the stored one."""
        return self._newest(app, self._read(app))

    def renew(
        self, app: str, stale: str | None, fetch: Callable[[], CachedToken], now_ms: int
    ) -> CachedToken:
        """The token another process (or thread) already put in place of ``stale``, else
        a fetched one; the database gets it without this call waiting for its lock."""
        with self._renewing, self._renewal_lock():
            stored = self._read(app)
            newest = self._newest(app, stored)
            if newest is not None and newest.access_token != stale and newest.expire_time > now_ms:
                return newest
            fresh = fetch()
            with self._mutex:
                replaces: tuple[str | None, ...] = (
                    stored.access_token if stored is not None else None,
                )
                if (earlier := self._pending.get(app)) is not None:
                    replaces += (earlier.token.access_token, *earlier.replaces)
                self._pending[app] = _Pending(fresh, replaces)
            if not self._write(app, timeout=0):
                self._write_later(app)
            return fresh

    def _newest(self, app: str, stored: CachedToken | None) -> CachedToken | None:
        """The newest token known: this process's not yet stored one, unless another
        process stored one since it was fetched (then that one, and ours is let go of)."""
        with self._mutex:
            pending = self._pending.get(app)
            if pending is None:
                return stored
            if stored is None or stored.access_token in (
                *pending.replaces,
                pending.token.access_token,
            ):
                return pending.token
            del self._pending[app]
            return stored

    def flush(self, timeout: float | None = None) -> None:
        """Wait for the tokens being written to the database (tests, a clean exit)."""
        for writer in list(self._writers):
            writer.join(timeout)

    # ------------------------------------------------------------ the database

    def _read(self, app: str) -> CachedToken | None:
        row = self._table.read(app)
        return None if row is None else CachedToken(*row)

    def _write(self, app: str, *, timeout: float) -> bool:
        """Store the pending token for ``app`` unless a newer one is stored; whether done
        (False: the write lock was not free within ``timeout`` seconds)."""
        with self._mutex:
            pending = self._pending.get(app)
        if pending is None:
            return True
        token = pending.token
        # Another process stored a token after this one was fetched: it is the newer
        # (renewals take turns under the renewal lock), so it stays.
        expected = (*pending.replaces, token.access_token)
        row = (token.access_token, token.expire_time, token.issued_time)
        if not self._table.compare_and_set(app, expected, row, timeout):
            return False
        with self._mutex:
            if self._pending.get(app) is pending:
                del self._pending[app]
        return True

    def _write_later(self, app: str) -> None:
        writer = threading.Thread(
            target=self._write,
            args=(app,),
            kwargs={"timeout": BUSY_TIMEOUT_MS / 1000},
            name="token-writer",
            daemon=True,
        )
        self._writers = [w for w in self._writers if w.is_alive()] + [writer]
        writer.start()

    # ------------------------------------------------------------ between processes

    @contextlib.contextmanager
    def _renewal_lock(self) -> Iterator[None]:
        """Held while a token is fetched: ``token.lock`` in the state directory (SQLite),
        an advisory lock on the server (PostgreSQL, every host's syncd)."""
        if isinstance(self._table, postgres.Tokens):
            with self._table.renewal_lock():
                yield
            return
        with self._file_lock():
            yield

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        """``token.lock``, held while a token is fetched; waited for at most the busy
        timeout (a process stuck holding it must not stop every other one)."""
        try:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StateError(f"lock {self._lock_path}: {exc.strerror}") from exc
        try:
            deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
            held = False
            while not held:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    held = True
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        log.warning(
                            "%s: another process renews the token for too long; renewing anyway",
                            self._lock_path,
                        )
                        break
                    time.sleep(_LOCK_POLL_S)
            yield
        finally:
            os.close(fd)  # releases the lock

    def __repr__(self) -> str:
        return f"TokenStore({self._place})"
