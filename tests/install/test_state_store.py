"""The state database's one owner in a process (``StateStore``), on both engines: opened
once, a run recorded and read back through it, its lease store and tokens its own, all of
it let go when it closes."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncd.errors import StateError
from syncd.snapshot import SCHEMA_VERSION, StateStore


def test_a_run_recorded_through_the_store_reads_back(tmp_path: Path, store_url: str | None) -> None:
    with StateStore.open(tmp_path / "syncd.db", store_url) as state:
        run_id = state.start_run(
            trigger="manual", mode="full", read="full", source="csv", started_at=1_000
        )
        state.finish_run(run_id, outcome="ok", exit_code=0, finished_at=2_000, summary='{"a": 1}')
        with state.transaction() as tx:
            tx.set_cursor("probe", "kept")
        assert state.run_summary(run_id) == {"a": 1}
        assert state.cursor("probe") == "kept"
        assert state.last_run_given() == run_id
        assert state.dialect == ("sqlite" if store_url is None else "postgresql")
        assert state.tokens is state.tokens  # one token store per process
        assert state.leases.holder() is None  # nobody has taken the lease yet
    # Reopened: what the first store wrote is there, the schema migrated once.
    with StateStore.open(tmp_path / "syncd.db", store_url, migrate=False) as again:
        assert again.run_summary(run_id) == {"a": 1}
        with again.read() as conn:
            assert conn.exec_driver_sql("SELECT COUNT(*) FROM runs").scalar() == 1
    assert SCHEMA_VERSION > 0


def test_a_closed_store_lets_its_lease_store_go(tmp_path: Path) -> None:
    state = StateStore.open(tmp_path / "syncd.db")
    leases = state.leases
    state.close()
    # Closing let it go: asked again, the store opens a new one (closed again below).
    assert state.leases is not leases
    state.close()


def test_a_store_that_cannot_be_opened_says_where(tmp_path: Path) -> None:
    (tmp_path / "syncd.db").write_bytes(b"not a database at all, but long enough " * 200)
    with pytest.raises(StateError, match=r"syncd\.db"):
        StateStore.open(tmp_path / "syncd.db")


def test_the_store_names_its_database(tmp_path: Path) -> None:
    with StateStore.open(tmp_path / "syncd.db") as state:
        assert str(tmp_path / "syncd.db") in repr(state)
        assert state.state_dir == tmp_path
