"""The emulator's clock: real time plus an adjustable offset, in 13-digit milliseconds."""

from __future__ import annotations

import time
from email.utils import formatdate


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

    def set_back(self, milliseconds: int) -> int:
        """Step the clock back, as an operator or a time daemon sets a server's clock back:
        the changes that follow are stamped earlier than those made before (a
        ``refresh_time`` read from a stamp seen before misses them). Returns the new time."""
        self.offset_ms -= max(0, milliseconds)
        self.last_stamp = min(self.last_stamp, self.now() - 1)
        return self.now()

    def http_date(self) -> bytes:
        """The time as an HTTP ``Date`` header says it (whole seconds, GMT)."""
        return formatdate(self.now() / 1000, usegmt=True).encode("ascii")
