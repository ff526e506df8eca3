"""The snapshot's people, read as they are asked about, answer as the whole load does."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine

from syncd import snapshot as store
from tests.support.snapshot_rows import person


@pytest.fixture
def engine(tmp_path: Path, store_url: str | None) -> Engine:
    engine = store.open_engine(tmp_path / "syncd.db", store_url)  # each engine in turn
    people = [person(f"E{i}", f"user{i}") for i in range(600)]
    people.append(person("E900", "gone", locked=True, lock_reason="missing", locked_since=5))
    with store.write(engine) as conn:
        store.upsert_employees(conn, people)
    return engine


def people(engine: Engine) -> store.SyncedEmployees:
    """syncd's people as the platform reader asks about them (its own queries)."""
    head = store.load_snapshot(engine, everyone=False)
    return store.Held(engine, head.departments, head.headcount).employees


def test_people_read_as_asked_are_those_of_the_whole_load(engine: Engine) -> None:
    whole = people(engine).load()
    asked = people(engine)

    assert len(asked) == len(whole) == 601
    assert asked["E900"] == whole["E900"]
    assert asked["E900"].locked is True and asked["E900"].lock_reason == "missing"
    assert asked.get("E3") == whole["E3"]
    assert "E4" in asked and "nobody" not in asked
    assert asked.get("nobody") is None
    with pytest.raises(KeyError):
        asked["nobody"]
    assert sorted(store.usernames(asked)) == sorted(store.usernames(whole))
    assert dict(asked.items()) == whole


def test_many_look_ups_read_everyone_at_once(engine: Engine) -> None:
    asked = people(engine)
    with store.write(engine) as conn:  # what the next look-ups read from the database
        store.upsert_employees(conn, [person("E1000", "late")])

    found = [asked.get(f"E{i}") for i in range(300)]

    assert all(e is not None for e in found)
    # Past a few look-ups everyone was read in one query: the person written after the
    # snapshot was made is there, as the load would have found them.
    assert len(asked) == 602 and "E1000" in asked


def test_usernames_held_are_found_without_reading_everyone(engine: Engine) -> None:
    asked = people(engine)
    with store.write(engine) as conn:
        store.forget_employees(conn, ["E5"])  # look-ups by name read the database as it is

    names = ["user1", "gone", "stranger", "user5"]
    assert store.holding(asked, names) == {"user1", "gone"}
    assert len(asked) == 601  # the count of when it was made: nobody was loaded
    loaded = asked.load()
    assert len(asked) == 600
    assert store.holding(asked, names) == store.holding(loaded, names) == {"user1", "gone"}
