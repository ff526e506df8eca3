"""The emulator's clock: real time plus an adjustable offset, in 13-digit milliseconds."""

from __future__ import annotations

import time


class Clock:
    """Wall-clock milliseconds; ``stamp()`` never returns the same value twice.

    Every mutating request takes one stamp for all its changes, so ``refresh_time``
    queries (strictly greater) separate consecutive requests even within one millisecond.
    """

    def __init__(self, offset_ms: int = 0, last_stamp: int = 0) -> None:
        self.offset_ms = offset_ms
        self.last_stamp = last_stamp

    def now(self) -> int:
        return int(time.time() * 1000) + self.offset_ms

    def stamp(self) -> int:
        self.last_stamp = max(self.now(), self.last_stamp + 1)
        return self.last_stamp

    def advance(self, milliseconds: int) -> int:
        """Move the clock forward (tests of token expiry); returns the new time."""
        self.offset_ms += max(0, milliseconds)
        return self.now()
