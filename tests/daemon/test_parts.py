"""The daemon's parts on their own: notify messages, crontab weekdays, schedule settings."""

from __future__ import annotations

import os
import socket
import uuid
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from pydantic import ValidationError

from syncd.config import ScheduleSettings
from syncd.config.cron import cron_trigger, weekdays
from syncd.service.sd_notify import Notifier, watchdog_interval

UTC = ZoneInfo("UTC")


def listening(address: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + address[1:] if address.startswith("@") else address)
    sock.settimeout(10)
    return sock


@pytest.mark.parametrize("abstract", [False, True], ids=["path", "abstract"])
def test_notifications_reach_the_socket_as_one_datagram(tmp_path: Path, abstract: bool) -> None:
    address = f"@syncd-test-{uuid.uuid4().hex}" if abstract else str(tmp_path / "notify")
    with listening(address) as manager:
        notifier = Notifier.from_environment({"NOTIFY_SOCKET": address})

        assert notifier.send("READY=1", "STATUS=last run 1 ok\nnext run soon")

        message = manager.recv(4096).decode()
        notifier.close()
    assert message == "READY=1\nSTATUS=last run 1 ok next run soon"


def test_without_a_notify_socket_nothing_is_sent() -> None:
    notifier = Notifier.from_environment({})
    assert not notifier.enabled
    assert not notifier.send("READY=1")


def test_a_vanished_manager_is_not_an_error(tmp_path: Path) -> None:
    notifier = Notifier(str(tmp_path / "gone"))
    assert not notifier.send("WATCHDOG=1")


def test_the_watchdog_pings_at_half_the_timeout_for_this_process_only() -> None:
    assert watchdog_interval({"WATCHDOG_USEC": "30000000"}) == 15.0
    mine = {"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())}
    assert watchdog_interval(mine) == 1.0
    assert watchdog_interval({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}) is None
    assert watchdog_interval({}) is None
    assert watchdog_interval({"WATCHDOG_USEC": "soon"}) is None


@pytest.mark.parametrize(
    ("field", "days"),
    [
        ("*", "*"),
        ("1-5", "mon,tue,wed,thu,fri"),
        ("0", "sun"),
        ("7", "sun"),
        ("5-7", "sun,fri,sat"),
        ("mon-fri", "mon,tue,wed,thu,fri"),
        ("*/2", "sun,tue,thu,sat"),
        ("1,3,sat", "mon,wed,sat"),
    ],
)
def test_crontab_weekdays_keep_their_crontab_meaning(field: str, days: str) -> None:
    assert weekdays(field) == days


def test_a_weekday_cron_skips_the_weekend() -> None:
    trigger = cron_trigger("0 9 * * 1-5", timezone=UTC)
    saturday = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)

    following = trigger.get_next_fire_time(None, saturday)

    assert following == datetime(2024, 6, 3, 9, 0, tzinfo=UTC)  # Monday


@pytest.mark.parametrize("bad", ["1 2 3", "99 * * * *", "0 2 * * 5-1", "0 2 * * someday"])
def test_a_bad_cron_is_a_settings_error_naming_the_key(bad: str) -> None:
    with pytest.raises(ValidationError, match="cron"):
        ScheduleSettings(cron=bad)


def test_interval_seconds_replaces_interval_minutes() -> None:
    assert ScheduleSettings().interval.total_seconds() == 15 * 60
    assert ScheduleSettings(interval_minutes=5, interval_seconds=2).interval.total_seconds() == 2
