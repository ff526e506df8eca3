"""The application's one access token, shared by every syncd process using the database."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import OperationalError

from syncd.errors import StateError
from syncd.snapshot.engine import write


@dataclass(frozen=True, slots=True)
class CachedToken:
    access_token: str
    expire_time: int  # ms since the epoch
    issued_time: int | None = None

    def __repr__(self) -> str:  # never show the token itself
        return f"CachedToken(expire_time={self.expire_time})"


class TokenStore:
    """The application's one token, shared by every syncd process using this database.

    The platform keeps one token per application and a new one invalidates the old, so
    renewal happens under the database's write lock: a process that finds a token newer
    than the one that failed it takes that token instead of asking for another.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def get(self, app: str) -> CachedToken | None:
        try:
            with self._engine.connect() as conn:
                return self._read(conn, app)
        except OperationalError as exc:
            raise StateError(f"state database: reading the shared token: {exc.orig}") from None

    def renew(
        self, app: str, stale: str | None, fetch: Callable[[], CachedToken], now_ms: int
    ) -> CachedToken:
        """The stored token if another process already replaced ``stale``, else a fetched one."""
        try:
            return self._renew(app, stale, fetch, now_ms)
        except OperationalError as exc:
            raise StateError(f"state database: renewing the shared token: {exc.orig}") from None

    def _renew(
        self, app: str, stale: str | None, fetch: Callable[[], CachedToken], now_ms: int
    ) -> CachedToken:
        with write(self._engine) as conn:
            current = self._read(conn, app)
            if (
                current is not None
                and current.access_token != stale
                and current.expire_time > now_ms
            ):
                return current
            fresh = fetch()
            conn.execute(
                text(
                    "INSERT INTO tokens (app, access_token, expire_time, issued_time) "
                    "VALUES (:app, :tok, :exp, :iss) ON CONFLICT (app) DO UPDATE SET "
                    "access_token = excluded.access_token, expire_time = excluded.expire_time, "
                    "issued_time = excluded.issued_time"
                ),
                {
                    "app": app,
                    "tok": fresh.access_token,
                    "exp": fresh.expire_time,
                    "iss": fresh.issued_time,
                },
            )
            return fresh

    @staticmethod
    def _read(conn: Connection, app: str) -> CachedToken | None:
        row = conn.execute(
            text("SELECT access_token, expire_time, issued_time FROM tokens WHERE app = :app"),
            {"app": app},
        ).first()
        return None if row is None else CachedToken(row[0], int(row[1]), row[2])
