"""SIGTERM to ``syncd run`` in each phase of an apply: exit 0, run interrupted, restart converges.

tests/daemon covers a stop while people are imported; here the stop comes while
departments are created, while they are renamed or moved, and while leavers are locked,
on a site whose second run plans every kind of change.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from syncd.errors import EXIT_OK
from tests.daemon.support import NotifySocket, Service, start_service
from tests.support.traffic import requests_to
from tests.support.waiting import wait_until

from .support import Rig, assert_converged, clean_env
from .test_crashes import after_company, before_company


def start(rig: Rig, name: str) -> Service:
    """``syncd run`` on the rig's settings, with none of this process's SYNCD_ variables."""
    notify = NotifySocket(str(rig.folder / f"notify-{name}"))
    return start_service(rig.config, notify, rig.folder / f"daemon-{name}.log", clean_env())


@pytest.fixture
def daemons(rig: Rig) -> Iterator[list[Service]]:
    started: list[Service] = []
    yield started
    for daemon in started:
        daemon.close()


@pytest.mark.parametrize(
    "endpoint",
    ["import-orgs", "POST /v1/admin/organizations/{org_code}/{node_id}", "/lock"],
    ids=["creating departments", "moving departments", "locking"],
)
def test_sigterm_in_any_phase_interrupts_and_the_restart_converges(
    rig: Rig, daemons: list[Service], endpoint: str
) -> None:
    rig.sync_settings.update(leaver_policy="remove", max_removal_ratio=1.0, max_removals=100)
    rig.sections["schedule"] = {"interval_seconds": 3600, "jitter_seconds": 0}
    rig.company = before_company()
    assert rig.sync().exit_code == EXIT_OK
    rig.company = after_company()
    rig.company.write(rig.folder)
    rig.write_config()
    rig.emulator.reset(data=False)
    # Every request takes a while: the stop comes with one of the phase in flight.
    rig.emulator.set_faults(latency_ms=150)
    first = start(rig, "first")
    daemons.append(first)
    first.ready()
    wait_until(lambda: requests_to(rig.emulator, endpoint) >= 1, endpoint)

    assert first.stop() == 0, first.log()
    assert [r["outcome"] for r in rig.runs()] == ["ok", "interrupted"]

    rig.emulator.set_faults()
    again = start(rig, "again")
    daemons.append(again)
    again.notify.wait_for(lambda m: "last run 3 ok" in m.get("STATUS", ""), "last run 3 ok")
    assert again.stop() == 0
    assert [r["outcome"] for r in rig.runs()] == ["ok", "interrupted", "ok"]
    assert_converged(rig)
    listed = rig.cli("reports", "list")
    assert "interrupted" in listed.stdout
