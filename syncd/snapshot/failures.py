"""The state database's failures as the StateError an operator reads: the database named
as messages name it (never the URL's password), with the advice for its engine (SQLite: the
file; PostgreSQL: the server's dump).

Below ``sql`` and ``engine``, which both translate the driver's own failures through it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import Connection, Engine

from syncd.errors import StateError
from syncd.snapshot import postgres, sqlite
from syncd.snapshot.postgres import is_postgresql

P = ParamSpec("P")
R = TypeVar("R")


def describe(engine: Engine) -> str:
    """The state database as messages name it: the SQLite file, or the PostgreSQL database
    and its server (never the URL's password)."""
    if is_postgresql(engine):
        return postgres.where(engine.url)
    return str(engine.url.database)


def state_problem(path: object, exc: BaseException) -> StateError:
    """The engine's failure as the error an operator reads (``path``: what ``describe`` says)."""
    if postgres_failure(exc):
        return postgres.state_problem(str(path), exc)
    return sqlite.state_problem(path, exc)


def postgres_failure(exc: BaseException) -> bool:
    original = getattr(exc, "orig", None) or exc
    return type(original).__module__.startswith("psycopg") and postgres.is_failure(original)


def driver_failure(engine: Engine, exc: BaseException) -> StateError | None:
    """A failure of the driver's own cursor as a StateError (None: not the database's)."""
    if isinstance(exc, StateError):
        return exc
    if postgres_failure(exc):
        return postgres.state_problem(
            describe(engine), exc, engine.url.password and str(engine.url.password)
        )
    if isinstance(exc, sqlite.DatabaseError) and not isinstance(exc, sqlite.IntegrityError):
        return sqlite.state_problem(describe(engine), exc)
    return None


def translated(function: Callable[P, R]) -> Callable[P, R]:
    """``function``, a read of the state database through the driver's own connection, its
    failures raised as StateError naming the database, with the advice for its engine
    (SQLite: the file; PostgreSQL: the server's dump)."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except sqlite.IntegrityError:
            raise
        except (sqlite.DatabaseError, ValueError) as exc:  # ValueError: a garbled value
            engine = _engine_of(args)
            if engine is not None and is_postgresql(engine):
                raise postgres.damaged(describe(engine), exc) from exc
            place = describe(engine) if engine is not None else "(state database)"
            raise sqlite.state_problem(place, exc) from exc

    return wrapper


def _engine_of(args: tuple[Any, ...]) -> Engine | None:
    for arg in args:
        engine = arg if isinstance(arg, Engine) else getattr(arg, "_engine", None)
        if isinstance(arg, Connection):
            engine = arg.engine
        if isinstance(engine, Engine):
            return engine
    return None
