"""A takeover at any write of a run, generated: nothing the run writes after it is kept,
and nothing leaves that was not marked sent before it (issue 33: the store trusted
whoever wrote, and a run taken over still recorded what it applied).

Each example is an initial sync of a small company (some of it departed), or the sync
after it once one person left and another moved (a lock, an update), with a random batch
size and concurrency. At a random one of the run's write statements (the plan's journal,
a batch's sent mark or answers, the snapshot's rows, the dates, the departures, the
cursors), another instance takes the lease over in the store, and the run's local
deadline passes, as after a pause; on PostgreSQL the takeover also ends the run's
sessions. What the state database held at that moment is read first. Then:

- the run ends ``interrupted`` (exit 1), as fenced, never ``failed`` or ``ok``;
- the state others go on from is exactly as it was at the takeover: the write under way
  rolled back, none after it committed (only the run's own row in ``runs`` is written);
- every person and department on the platform was in a batch marked sent before it.
"""

from __future__ import annotations

import re
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, event, text

from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_PARTIAL
from syncd.run.leadership import SHELL, Lease
from syncd.run.runner import RunRequest, run_sync
from syncd.snapshot import StateStore
from tests.engine.company import employee
from tests.ha.support import rival_lease, take_over
from tests.reliability.support import Rig, big_company
from tests.support.examples import examples
from tests.support.postgres import ENGINES, PostgresServer

WRITE = re.compile(r"\s*(INSERT|UPDATE|DELETE|COPY)\b", re.IGNORECASE)
# The plan's record: its items (COPY on PostgreSQL, through the driver: no event), then
# the run's summary, in one transaction. The run's own row otherwise is not counted.
RECORD = re.compile(r"\s*UPDATE runs SET summary\b")
OWN_ROW = re.compile(r"\s*(INSERT INTO|UPDATE) runs\b")
# What others go on from, as read at the takeover and after the run (``runs`` is the run's
# own record, the lease's tables the new holder's).
KEPT = {
    "run_items": "SELECT run_id, seq, outcome, attempts FROM run_items ORDER BY 1, 2",
    "sent_batches": "SELECT run_id, first_seq, last_seq FROM sent_batches ORDER BY 1, 2, 3",
    "employees": "SELECT source_id, username, employee_id, locked FROM employees ORDER BY 1",
    "departments": "SELECT source_id, node_id FROM departments ORDER BY 1",
    "cursors": "SELECT name, value FROM cursors ORDER BY 1",
    "effective_dates": "SELECT source_id, start_date, end_date FROM effective_dates ORDER BY 1",
    "departures": "SELECT source_id, why FROM departures ORDER BY 1",
}
# The fewest write statements a run of these companies makes from its plan's record on
# (the summary, one department batch and three of people, each marked, answered and kept,
# the dates, the cursors): a takeover at any of them happens. A run after a first one,
# with one person leaving and one moving: the summary, a batch of updates and a lock, each
# marked, answered and kept, the dates, a cursor.
FEWEST_WRITES = 17
FEWEST_AFTER_CHURN = 9


def read_kept(state: StateStore) -> dict[str, list[tuple[Any, ...]]]:
    with state.engine.connect() as conn:
        return {name: [tuple(r) for r in conn.execute(text(q))] for name, q in KEPT.items()}


@dataclass
class Takeover:
    """At the ``at``-th write statement of the run from its plan's record on: what the
    store held is read, the lease's row expires and ``rival`` claims it, and the run's
    local deadline passes."""

    state: StateStore
    lease: Lease
    rival: Lease
    at: int
    seen: int = 0
    counting: bool = False
    kept: dict[str, list[tuple[Any, ...]]] | None = None
    statement: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def before(self, conn: Connection, cursor: Any, statement: str, *args: object) -> None:
        recording = bool(RECORD.match(statement))
        if not WRITE.match(statement) or (OWN_ROW.match(statement) and not recording):
            return
        with self._lock:
            self.counting = self.counting or recording
            if not self.counting or self.kept is not None:
                return
            self.seen += 1
            if self.seen < self.at:
                return
            self.kept, self.statement = read_kept(self.state), statement
            take_over(self.state, self.rival)
            self.lease.deadline = time.monotonic() - 0.001


@contextmanager
def database(server: PostgresServer, engine: str) -> Iterator[str | None]:
    if engine == "sqlite":
        yield None
        return
    name = server.create_database()
    try:
        yield server.url(name)
    finally:
        server.drop_database(name)


SCENARIOS = st.fixed_dictionaries(
    {
        "engine": st.sampled_from(ENGINES),
        "batch_size": st.integers(2, 5),
        "concurrency": st.integers(1, 3),
        "departed": st.integers(0, 3),
        "at": st.integers(1, FEWEST_WRITES),
        "churn": st.booleans(),  # taken over in a second run (a lock, an update), not the first
    }
)


@settings(
    max_examples=examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(SCENARIOS)
def test_a_takeover_at_any_write_keeps_nothing_after_it_and_sends_nothing_unmarked(
    emulator_server: RunningEmulator, postgres_server: PostgresServer, scenario: dict[str, Any]
) -> None:
    emulator_server.reset(data=True)
    with (
        tempfile.TemporaryDirectory() as folder,
        database(postgres_server, scenario["engine"]) as url,
    ):
        rig = Rig(Path(folder), emulator_server, big_company(12, departments=3), database_url=url)
        rig.platform_options.update(
            batch_size=scenario["batch_size"], concurrency=scenario["concurrency"]
        )
        rig.company.employees += [
            employee(f"E{n}", f"user{n}", "D1", status="departed")
            for n in range(50, 50 + scenario["departed"])
        ]
        rig.company.write(rig.folder)
        settings_ = rig.settings()
        state = StateStore.open(settings_.database, settings_.database_url)
        lease = Lease.for_settings(state, settings_, SHELL)
        rival = rival_lease(state)
        at = scenario["at"]
        try:
            assert lease.claim()
            if scenario["churn"]:
                at = 1 + (at - 1) % FEWEST_AFTER_CHURN
                assert run_sync(settings_, RunRequest(), state=state, lease=lease).exit_code == 0
                churn(rig)
            takeover = Takeover(state, lease, rival, at)
            event.listen(state.engine, "before_cursor_execute", takeover.before)
            result = run_sync(settings_, RunRequest(), state=state, lease=lease)
            event.remove(state.engine, "before_cursor_execute", takeover.before)
            after = read_kept(state)
        finally:
            rival.close()
            lease.close()
            state.close()
        assert takeover.kept is not None, f"only {takeover.seen} writes: {scenario}"
        marked = {  # in a batch marked sent, or answered (a mark let go of once answered)
            *(
                (r, seq)
                for r, first, last in takeover.kept["sent_batches"]
                for seq in range(first, last + 1)
            ),
            *((r, seq) for r, seq, _, attempts in takeover.kept["run_items"] if attempts),
        }
        sent, held = sent_keys(rig, marked), on_platform(rig)

    where = f"taken over at {takeover.statement[:60]!r} ({scenario})"
    assert (result.outcome, result.exit_code) == ("interrupted", EXIT_PARTIAL), (
        where,
        result.error,
    )
    assert "fenced" in (result.error or ""), where
    assert after == takeover.kept, where
    assert held <= sent, where


def churn(rig: Rig) -> None:
    """One person leaves (locked), another moves to another department (updated)."""
    rig.company.person("user1")["status"] = "departed"
    rig.company.person("user2")["department"] = "D0"
    rig.company.write(rig.folder)


def sent_keys(rig: Rig, items: set[tuple[int, int]]) -> set[tuple[str, str]]:
    """(kind, source id) of these items, by (run id, seq)."""
    rows = rig.query("SELECT run_id, seq, kind, key FROM run_items")
    return {(str(kind), str(key)) for r, seq, kind, key in rows if (r, seq) in items}


def on_platform(rig: Rig) -> set[tuple[str, str]]:
    """(kind, source id) of what the platform holds that the company names."""
    platform = rig.platform()
    ids = {e["username"]: e["id"] for e in rig.company.employees}
    people = {("employee", ids[u]) for u in platform.people if u in ids}
    return people | {("department", serial) for serial in platform.serials}
