"""People written to the snapshot, generated, on each engine: whatever the batches (new
people and known ones, the same person twice in a batch, locks, adoption keys), the table
holds what writing each row in turn gives: a known row takes the new fields and keeps its
lock state, and its adoption key unless the new row names one. (On PostgreSQL a batch is
one statement over arrays, not a statement per row.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from syncd import snapshot as store
from syncd.snapshot import sql
from tests.support.examples import examples
from tests.support.snapshot_rows import person

COLUMNS = (
    "source_id", "username", "employee_id", "fields", "hash", "adopted", "locked",
    "lock_reason", "locked_since", "matched_by",
)  # fmt: skip
KEPT_WHEN_KNOWN = ("locked", "lock_reason", "locked_since")


@pytest.fixture
def engine(tmp_path: Path, store_url: str | None) -> Engine:
    return store.open_engine(tmp_path / "syncd.db", store_url)  # each engine in turn


rows = st.builds(
    lambda n, name, fields, adopted, lock, matched: person(
        f"E{n}",
        name,
        employee_id=n * 10**10,  # past 32 bits
        fields=fields,
        hash=f"h{fields}",
        adopted=adopted,
        matched_by=matched,
        **lock,
    ),
    st.integers(0, 6),
    st.sampled_from(["ann", "bob", "李雷", "o'neil", 'say "hi"\\', "tab\tnul\x00"]),
    st.sampled_from(["{}", '{"name": "A"}', '{"mobile": null}', '{"name": "\\u00e9\\""}']),
    st.booleans(),
    st.sampled_from(
        [
            {},
            {"locked": True, "lock_reason": "departed", "locked_since": 2**40},
            {"locked": True, "lock_reason": None, "locked_since": None},
        ]
    ),
    st.sampled_from([None, "email", "mobile"]),
)


def written_in_turn(batches: list[list[dict[str, Any]]]) -> dict[str, tuple[Any, ...]]:
    table: dict[str, dict[str, Any]] = {}
    for batch in batches:
        for row in batch:
            known = table.get(row["source_id"])
            new = {c: row.get(c) for c in COLUMNS}
            if known is not None:
                new |= {c: known[c] for c in KEPT_WHEN_KNOWN}
                new["matched_by"] = row.get("matched_by") or known["matched_by"]
            table[row["source_id"]] = new
    return {k: tuple(v[c] for c in COLUMNS) for k, v in table.items()}


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.lists(rows, max_size=8), max_size=4))
def test_a_batch_of_people_is_written_as_each_row_in_turn(
    engine: Engine, batches: list[list[dict[str, Any]]]
) -> None:
    if engine.dialect.name == "postgresql":  # its text holds no NUL, however it is written
        batches = [
            [{**r, "username": r["username"].replace("\x00", "")} for r in b] for b in batches
        ]
    with store.write(engine) as conn:
        sql.run(conn, "DELETE FROM employees")
    for batch in batches:
        with store.write(engine) as conn:
            store.upsert_employees(conn, batch)
    with engine.connect() as conn:
        found = sql.rows(conn, f"SELECT {', '.join(COLUMNS)} FROM employees")  # noqa: S608
    table = {str(r[0]): (*r[:5], bool(r[5]), bool(r[6]), *r[7:]) for r in found}
    assert table == written_in_turn(batches)
