"""The systemd notify protocol: ``KEY=value`` lines in one datagram to ``$NOTIFY_SOCKET``.

Outside systemd (no ``$NOTIFY_SOCKET``) every call is a no-op, so the daemon needs no
special case for terminals and containers.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Mapping

log = logging.getLogger("syncd._notify")

SEND_TIMEOUT_SECONDS = 1.0


class Notifier:
    """Sends state changes to the service manager; thread-safe; never raises."""

    def __init__(self, address: str | None) -> None:
        self.address = address
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        if address:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            # A manager that stops reading must not stall the daemon: a message that
            # cannot be queued within the timeout is dropped.
            self._sock.settimeout(SEND_TIMEOUT_SECONDS)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> Notifier:
        return cls(environ.get("NOTIFY_SOCKET") or None)

    @property
    def enabled(self) -> bool:
        return self._sock is not None

    def send(self, *assignments: str) -> bool:
        """Send ``READY=1``, ``STATUS=...`` and the like together; False if not delivered."""
        if self._sock is None or self.address is None:
            return False
        # One message is a set of lines: a newline inside a value would start a new key.
        lines = (a.replace("\n", " ") for a in assignments)
        payload = "\n".join(lines).encode("utf-8")
        target = self.address
        if target.startswith("@"):  # an abstract socket: a leading NUL byte, not a file
            target = "\0" + target[1:]
        try:
            with self._lock:
                self._sock.sendto(payload, target)
        except OSError as exc:
            log.debug("systemd notification not delivered to %s: %s", self.address, exc)
            return False
        return True

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None


def watchdog_interval(environ: Mapping[str, str] = os.environ) -> float | None:
    """Seconds between watchdog pings (half the timeout systemd set), or None when off."""
    usec = environ.get("WATCHDOG_USEC")
    pid = environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        timeout = int(usec) / 1_000_000
    except ValueError:
        return None
    return timeout / 2 if timeout > 0 else None


def start_watchdog(notify: Notifier, interval: float, healthy: Callable[[], bool]) -> None:
    """WATCHDOG=1 every ``interval`` seconds while ``healthy()``, from a thread of its own;
    said once in the log when it stops being so."""

    def ping() -> None:
        quiet = threading.Event()  # never set: a wait that cannot be cut short by accident
        told = False
        while not quiet.wait(interval):
            if healthy():
                notify.send("WATCHDOG=1")
                told = False
            elif not told:
                log.error("the scheduler or the main loop stopped: no more watchdog pings")
                told = True

    notify.send("WATCHDOG=1")
    threading.Thread(target=ping, name="watchdog", daemon=True).start()
