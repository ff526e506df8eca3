"""One running emulator's parts, shared by its routes and its middleware."""

from __future__ import annotations

import logging
import threading
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


@dataclass
class Runtime:
    options: EmulatorOptions
    state: EmulatorState
    faults: FaultInjector
    requests: Counter[str] = field(default_factory=Counter)
    drop_filter: DroppedResponseLogFilter = field(default_factory=DroppedResponseLogFilter)
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
        if data:
            self.state.reset_data()

    def save(self) -> Path | None:
        if self.options.state_file is None:
            return None
        save_json(self.options.state_file, self.state.dump())
        return self.options.state_file
