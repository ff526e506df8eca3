"""Waiting for what another thread or process does: one poll loop for every test."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

DEADLINE = 60.0  # seconds: generous, only a failing test ever waits this long
POLL = 0.02

T = TypeVar("T")


def wait_until(condition: Callable[[], T], what: str, deadline: float = DEADLINE) -> T:
    """Poll until the condition gives a true value, and return it."""
    end = time.monotonic() + deadline
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(POLL)  # polling a condition another thread or process changes
