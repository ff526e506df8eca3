"""Waiting for what another thread or process does: one poll loop for every test."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar


def _time_factor() -> float:
    given = os.environ.get("TEST_TIME_FACTOR", "1")
    try:
        factor = float(given)
    except ValueError:
        raise SystemExit(f"TEST_TIME_FACTOR={given}: not a number (e.g. 3)") from None
    if not factor >= 1:
        raise SystemExit(f"TEST_TIME_FACTOR={given}: 1 or more")
    return factor


# One factor scales every timeout and deadline of the tests (subprocesses, servers
# starting and stopping, waits, pytest-timeout's): TEST_TIME_FACTOR=3 make test on a slow
# or loaded machine. Not a SYNCD_* variable: syncd processes under test would read it.
TIME_FACTOR = _time_factor()


def scaled(seconds: float) -> float:
    """A timeout or deadline of the tests, times TEST_TIME_FACTOR."""
    return seconds * TIME_FACTOR


DEADLINE = scaled(60.0)  # seconds: generous, only a failing test ever waits this long
POLL = 0.02

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T], what: str, deadline: float = DEADLINE, poll: float = POLL
) -> T:
    """Poll until the condition gives a true value, and return it; ``poll``: seconds
    between asks, longer for a condition that is costly to ask."""
    end = time.monotonic() + deadline
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(poll)  # polling a condition another thread or process changes
