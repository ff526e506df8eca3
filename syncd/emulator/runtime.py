"""One running emulator's parts, shared by its routes and its middleware."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syncd.emulator.faults import FaultInjector, FaultSettings
from syncd.emulator.options import EmulatorOptions
from syncd.emulator.persist import load_json, save_json
from syncd.emulator.state import EmulatorState
from syncd.logs import RedactingFilter

INCOMPLETE_RESPONSE_LOG = "ASGI callable returned without completing response."


class DroppedResponseLogFilter(logging.Filter):
    """Silences uvicorn's complaint about a response left incomplete, for intended drops only."""

    def __init__(self) -> None:
        super().__init__()
        self._expected = 0
        self._lock = threading.Lock()

    def expect(self) -> None:
        with self._lock:
            self._expected += 1

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() != INCOMPLETE_RESPONSE_LOG:
            return True
        with self._lock:
            if self._expected == 0:
                return True
            self._expected -= 1
            return False


WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
NOT_WRITES = ("/v1/token",)  # asked by POST, but no change to the organization


class Callers:
    """Requests by caller (syncd's ``X-Syncd-Instance``: host/pid), and when each write
    arrived (wall clock, ms): who wrote after a failover, and when the new leader began."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: Counter[str] = Counter()
        self._writes: dict[str, list[tuple[int, str]]] = {}

    def arrived(self, caller: str, method: str, template: str) -> None:
        write = method in WRITE_METHODS and template not in NOT_WRITES
        with self._lock:
            self._requests[caller] += 1
            if write:
                at = time.time_ns() // 1_000_000
                self._writes.setdefault(caller, []).append((at, f"{method} {template}"))

    def view(self, since_ms: int = 0) -> dict[str, Any]:
        """Each caller's requests, and its writes that arrived at ``since_ms`` or later."""
        with self._lock:
            found: dict[str, Any] = {}
            for caller, n in sorted(self._requests.items()):
                writes = [
                    (at, route) for at, route in self._writes.get(caller, []) if at >= since_ms
                ]
                found[caller] = {
                    "requests": n,
                    "writes": len(writes),
                    "first_write_ms": writes[0][0] if writes else None,
                    "last_write_ms": writes[-1][0] if writes else None,
                    "write_log": [{"at_ms": at, "route": route} for at, route in writes],
                }
            return found

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self._writes.clear()


@dataclass
class Runtime:
    options: EmulatorOptions
    state: EmulatorState
    faults: FaultInjector
    requests: Counter[str] = field(default_factory=Counter)
    drop_filter: DroppedResponseLogFilter = field(default_factory=DroppedResponseLogFilter)
    callers: Callers = field(default_factory=Callers)
    # Masks access_token=... in uvicorn's access log lines.
    token_redactor: RedactingFilter = field(default_factory=RedactingFilter)

    @classmethod
    def start(cls, options: EmulatorOptions) -> Runtime:
        """Build the runtime, loading ``options.state_file`` when it exists."""
        saved = load_json(options.state_file) if options.state_file else None
        state = EmulatorState.restore(options, saved) if saved else EmulatorState(options)
        return cls(options, state, FaultInjector(options.faults))

    def count_request(self, method: str, template: str) -> None:
        self.requests[f"{method} {template}"] += 1

    def stats(self) -> dict[str, Any]:
        return {
            "requests": dict(sorted(self.requests.items())),
            "total_requests": sum(self.requests.values()),
            "faults": dict(sorted(self.faults.counts.items())),
        }

    def reset(self, data: bool) -> None:
        """Clear faults and statistics, and with ``data`` everything but the root."""
        self.faults.replace(FaultSettings())
        self.faults.counts.clear()
        self.requests.clear()
        self.callers.clear()
        if data:
            self.state.reset_data()

    def save(self) -> Path | None:
        if self.options.state_file is None:
            return None
        save_json(self.options.state_file, self.state.dump())
        return self.options.state_file
