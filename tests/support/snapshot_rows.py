"""Rows of the state database (its employees table, a run's journal), as syncd.snapshot's writers
take them."""

from __future__ import annotations

from sqlalchemy import Engine

from syncd import snapshot as store

# The journal's items crash recovery would look up: sent, their answer not recorded.
IN_FLIGHT_ITEMS = f"SELECT * FROM run_items WHERE {store.IN_FLIGHT}"  # noqa: S608


def person(source_id: str, username: str, **kw: object) -> dict[str, object]:
    """syncd's record of one person it synced (source ids like ``E12``: employee id 12)."""
    return {
        "source_id": source_id,
        "username": username,
        "employee_id": int(source_id[1:]),
        "fields": "{}",
        "hash": f"h{source_id}",
        "adopted": False,
        "locked": False,
        "lock_reason": None,
        "locked_since": None,
        **kw,
    }


def planned_run(engine: Engine, count: int) -> int:
    """A new run whose journal holds ``count`` planned creates (seq 0 on, keys ``E<seq>``)."""
    run_id = store.start_run(
        engine, trigger="shell", mode="apply", read="full", source="test", started_at=0
    )
    rows = [
        {
            "seq": seq,
            "kind": "employee",
            "key": f"E{seq}",
            "display": f"user{seq}",
            "action": "create",
            "message": f"create employee user{seq}",
            "before": None,
            "after": "{}",
            "outcome": "planned",
        }
        for seq in range(count)
    ]
    with store.write(engine) as conn:
        store.insert_items(conn, run_id, rows)
    return run_id
