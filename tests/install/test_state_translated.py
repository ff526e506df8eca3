"""A stored value that no longer reads as written is told with the advice for the engine in
use: a PostgreSQL database is restored from its dump, never "moved aside" as a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import SecretStr

from syncd import snapshot as store
from syncd.errors import StateError
from syncd.snapshot.engine import translated


@translated
def garbled_read(engine: object) -> object:
    """A read whose stored JSON was cut (as a damaged row would give it)."""
    return json.loads('{"name": "Ad')


def test_a_garbled_value_on_postgresql_is_told_with_postgresql_advice(
    tmp_path: Path, postgres_url: str
) -> None:
    engine = store.open_engine(tmp_path / "syncd.db", SecretStr(postgres_url))
    try:
        with pytest.raises(StateError) as caught:
            garbled_read(engine)
    finally:
        engine.dispose()
    told = str(caught.value)
    assert "(PostgreSQL): a stored value cannot be read" in told, told
    assert "pg_restore" in told and "syncd state rebuild" in told, told
    assert "move the file aside" not in told and "SQLite" not in told, told


def test_a_garbled_value_on_sqlite_keeps_the_file_advice(tmp_path: Path) -> None:
    engine = store.open_engine(tmp_path / "syncd.db")
    try:
        with pytest.raises(StateError) as caught:
            garbled_read(engine)
    finally:
        engine.dispose()
    assert "move the file aside" in str(caught.value)
