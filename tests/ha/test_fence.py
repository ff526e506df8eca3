"""The fence holds for every attempt of every write, and settings that cannot keep it are
refused.

A batch leaves only after its sent mark's commit, which checks the lease in the store,
and while the lease's local deadline holds; a retry (after a 429's Retry-After, a 5xx's
backoff) and a token renewal ask the deadline again, so a leader paused while it waited
to retry sends nothing once its lease may have passed on (issue 33: the fence was asked
once before the retries, which could wait 300 s against a 30 s lease).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, event, text

from syncd import snapshot as store
from syncd.config import load_settings
from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_FAILED, EXIT_PARTIAL, ConfigError
from syncd.run.cursors import NODES, PEOPLE, SOURCE
from syncd.run.leadership import SHELL, Lease
from syncd.run.runner import RunRequest, run_sync
from tests.engine.company import employee
from tests.ha.support import rival_lease, take_over
from tests.reliability.support import Rig, big_company, when_requests
from tests.support.settings import CSV_SETTINGS, write_settings
from tests.support.traffic import requests_to

IMPORT_EMPLOYEES = "import-employees"


def test_a_retry_waiting_while_the_lease_runs_out_is_never_sent(
    tmp_path: Path, emulator: RunningEmulator
) -> None:
    rig = Rig(tmp_path, emulator, big_company(12, departments=3))
    rig.platform_options.update(batch_size=20, concurrency=1)
    rig.company.write(rig.folder)
    settings = rig.settings()
    state = store.StateStore.open(settings.database, settings.database_url)
    lease = Lease.for_settings(state, settings, SHELL)

    def paused() -> None:  # as after SIGSTOP while waiting to retry: no renewal came
        lease.deadline = time.monotonic() - 0.001

    # The first import is refused with 429: its retry waits 3 s, the lease's deadline
    # passes meanwhile (the lease is not renewed here: no renewing thread).
    emulator.set_faults(
        retry_after=3, scripted=[{"match": IMPORT_EMPLOYEES, "fault": "http_429", "count": 1}]
    )
    try:
        assert lease.claim()
        with when_requests(emulator, IMPORT_EMPLOYEES, 1, paused):
            result = run_sync(settings, RunRequest(), state=state, lease=lease)
    finally:
        lease.close()
        state.close()
    assert requests_to(emulator, IMPORT_EMPLOYEES) == 1  # the refused one; its retry never left
    assert (result.outcome, result.exit_code) == ("interrupted", EXIT_PARTIAL), result.error


@pytest.mark.parametrize(
    ("lease", "timeouts", "refused"),
    [
        (30, "timeout = 30.0", True),  # 10 s to connect + 30 s: more than 20 s - 6 s
        (30, "timeout = 5.0\nconnect_timeout = 5.0", False),
        (90, "", False),  # the defaults
        (3, "timeout = 1.0\nconnect_timeout = 0.5", True),
        (6, "timeout = 2.4\nconnect_timeout = 0.6", True),  # 3 s: over 4 s - 1.2 s
        (9, "timeout = 2.4\nconnect_timeout = 0.6", False),  # the HA tests' cluster
    ],
)
def test_timeouts_a_request_could_outlast_the_lease_with_are_refused_at_load(
    tmp_path: Path, lease: int, timeouts: str, refused: bool
) -> None:
    text = CSV_SETTINGS + 'client_secret = "s"\n' + timeouts + "\n"
    text += f"[leadership]\nlease_seconds = {lease}\n"
    (tmp_path / "people.csv").write_text("id\n", encoding="utf-8")
    path = write_settings(tmp_path, text)
    if not refused:
        assert load_settings(path).leadership.lease_seconds == lease
        return
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert caught.value.exit_code == EXIT_FAILED
    for key in ("platform.timeout", "platform.connect_timeout", "leadership.lease_seconds"):
        assert key in str(caught.value)


def test_a_run_whose_sessions_a_takeover_ended_is_fenced_not_failed(
    tmp_path: Path, emulator: RunningEmulator, postgres_url: str
) -> None:
    """A leader paused past its lease, whose PostgreSQL sessions the new holder ended
    meanwhile, thaws to a closed connection in the middle of a journal transaction, before
    the store's own fence could refuse it: the run is fenced (interrupted), not failed by a
    broken database, and sends nothing. Forced: the session of the journal writer's first
    transaction is ended (and waited for) as that transaction marks a batch sent."""
    rig = Rig(tmp_path, emulator, big_company(12, departments=3), database_url=postgres_url)
    rig.company.write(rig.folder)
    settings = rig.settings()
    state = store.StateStore.open(settings.database, settings.database_url)
    lease = Lease.for_settings(state, settings, SHELL)
    ended: list[int] = []

    def taken_over(
        conn: Connection, cursor: Any, statement: str, *args: object
    ) -> None:  # what a takeover does to a frozen leader's sessions, as it thaws
        if ended or "INSERT INTO sent_batches" not in statement:
            return
        lease.deadline = time.monotonic() - 0.001
        pid = cursor.connection.info.backend_pid
        with state.leases.engine.connect() as other:
            sql = "SELECT pg_terminate_backend(:pid, 10000)"  # waits for the session's end
            assert other.execute(text(sql), {"pid": pid}).scalar()
        ended.append(pid)

    event.listen(state.engine, "before_cursor_execute", taken_over)
    try:
        assert lease.claim()
        result = run_sync(settings, RunRequest(), state=state, lease=lease)
    finally:
        lease.close()
        state.close()
    assert ended  # the session ended as its batch was marked
    assert requests_to(emulator, "import-") == 0  # that batch never left, nor any after it
    assert (result.outcome, result.exit_code) == ("interrupted", EXIT_PARTIAL), result.error


def test_a_run_taken_over_after_it_sent_everything_keeps_nothing_it_would_record(
    tmp_path: Path, emulator: RunningEmulator, store_url: str | None
) -> None:
    """The writes after the delivery (dates, departures, cursors) are a real run's too:
    once another instance holds the lease, the store refuses them as it refuses the
    journal's, and the run ends interrupted. Forced: the lease is taken over (its row
    expired, then claimed by another instance) as the run records its dates."""
    rig = Rig(tmp_path, emulator, big_company(12, departments=3), database_url=store_url)
    left = [employee(f"E{n}", f"user{n}", "D1", status="departed") for n in (50, 51)]
    rig.company.employees += left
    rig.company.write(rig.folder)
    settings = rig.settings()
    state = store.StateStore.open(settings.database, settings.database_url)
    lease = Lease.for_settings(state, settings, SHELL)
    rival = rival_lease(state)

    def recording(conn: Connection, cursor: Any, statement: str, *args: object) -> None:
        if statement.startswith("DELETE FROM effective_dates") and not rival.epoch:
            take_over(state, rival)

    event.listen(state.engine, "before_cursor_execute", recording)
    try:
        assert lease.claim()
        result = run_sync(settings, RunRequest(), state=state, lease=lease)
        event.remove(state.engine, "before_cursor_execute", recording)
        with state.read() as conn:
            kept = {str(k) for (k,) in conn.execute(text("SELECT source_id FROM departures"))}
        cursors = {name: state.cursor(name) for name in (NODES, PEOPLE, SOURCE)}
    finally:
        rival.close()
        lease.close()
        state.close()
    assert rival.epoch == 2  # taken over once, as the run recorded what it applied
    assert requests_to(emulator, IMPORT_EMPLOYEES) > 0  # everything was sent before that
    assert (result.outcome, result.exit_code) == ("interrupted", EXIT_PARTIAL), result.error
    assert "fenced" in (result.error or "")
    assert kept == set()  # E50, E51 (read departed) were never recorded: rolled back
    assert cursors == dict.fromkeys((NODES, PEOPLE, SOURCE))  # and no cursor moved
