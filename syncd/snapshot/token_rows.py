"""The tokens table's statements, for both engines (``?`` placeholders): each engine's
``Tokens`` (``sqlite``, ``postgres``) runs them in its own transaction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

StoredToken = tuple[str, int, int | None]  # the access token, its expiry, when issued (ms)


def read_token(execute: Callable[..., Any], app: str) -> StoredToken | None:
    """The token stored for ``app``, on either engine (``execute`` runs one ``?``-style
    statement: a sqlite3 connection's, or ``sql.run`` bound to a connection)."""
    row = execute(
        "SELECT access_token, expire_time, issued_time FROM tokens WHERE app = ?", (app,)
    ).fetchone()
    return None if row is None else (str(row[0]), int(row[1]), row[2])


def store_token(
    execute: Callable[..., Any], app: str, expected: tuple[str | None, ...], row: StoredToken
) -> None:
    """Store ``row`` for ``app`` if the token stored now is one of ``expected`` (a newer one
    another process stored stays), in the caller's write transaction; either engine."""
    found = execute("SELECT access_token FROM tokens WHERE app = ?", (app,)).fetchone()
    if (None if found is None else str(found[0])) in expected:
        for sql, params in upsert_token(app, row):
            execute(sql, params)


def upsert_token(app: str, row: StoredToken) -> list[tuple[str, tuple[Any, ...]]]:
    """The statements (``?`` style, for both engines) that store a token for ``app``."""
    statements: list[tuple[str, tuple[Any, ...]]] = [
        (
            "INSERT INTO tokens (app, access_token, expire_time, issued_time) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (app) DO UPDATE SET "
            "access_token = excluded.access_token, expire_time = excluded.expire_time, "
            "issued_time = excluded.issued_time",
            (app, *row),
        )
    ]
    # The same application's token under another secret's digest: the secret changed.
    base = app.rpartition("#")[0]
    if base:
        statements.append(
            (
                "DELETE FROM tokens WHERE app != ? AND substr(app, 1, ?) = ?",
                (app, len(base) + 1, base + "#"),
            )
        )
    return statements
