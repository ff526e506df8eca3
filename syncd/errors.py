"""The one user-facing error type, and its kinds.

Every failure a user should see is a ``SyncdError``; third-party exceptions are
translated into one at the edge where they happen, with the file, key, host or
endpoint that explains them. The exit code travels with the error::

    SyncdError (exit 3: could not run)
    ├── ConfigError         settings file, environment or secret files are wrong
    ├── StateError          the state directory or database cannot be used
    ├── LockHeld            another syncd process holds the run lock
    │   └── LeaseHeld       (exit 4) another instance sharing the store leads: it writes
    ├── SourceError         the source could not be read completely
    ├── PlatformError       the platform answered a non-zero envelope status
    │   └── TokenError      the platform refused the application's credentials or token
    ├── PlatformUnavailable the platform could not be reached, even after retries
    ├── DaemonNotRunning    `syncd status`: the daemon syncs here and none runs, or nothing
    │                       syncs here at all (LSB's 3)
    └── Unhealthy           (exit 1) `syncd status`: the last run failed, none succeeded
                            for too long, or the daemon's next run is overdue

Exit codes of a run: 0 everything applied (known problems aside: values another account
holds, told once), 1 some items failed or a new known problem was found, 2 blocked by a
guard, 3 could not run, 4 another instance sharing the state store holds the lease (it
writes to the platform; nothing was done here). A blocked run is not an error: it is
recorded, with its plan, as an outcome.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_PARTIAL = 1
EXIT_BLOCKED = 2
EXIT_FAILED = 3
EXIT_NOT_LEADER = 4


class SyncdError(Exception):
    """An error meant for the operator: its text says what went wrong and where."""

    exit_code: int = EXIT_FAILED


class ConfigError(SyncdError):
    pass


class StateError(SyncdError):
    pass


class LockHeld(SyncdError):
    pass


class Fenced(SyncdError):
    """This instance no longer surely holds the lease: nothing more is sent to the platform,
    and the run ends as interrupted (the store refused a write of the run, or the local
    deadline passed before a request could leave)."""

    exit_code = EXIT_PARTIAL


class LeaseHeld(LockHeld):
    """Another instance sharing the state store holds the lease: it alone writes."""

    exit_code = EXIT_NOT_LEADER


class SourceError(SyncdError):
    pass


class PlatformError(SyncdError):
    """A non-zero envelope status; carries the status, message and endpoint (never the token)."""

    def __init__(self, status: int, message: str, endpoint: str) -> None:
        super().__init__(f"{endpoint}: platform status {status}: {message}")
        self.status = status
        self.message = message
        self.endpoint = endpoint

    def __reduce__(self) -> tuple[type[PlatformError], tuple[int, str, str]]:
        return (type(self), (self.status, self.message, self.endpoint))


class TokenError(PlatformError):
    pass


class PlatformUnavailable(SyncdError):
    pass


class DaemonNotRunning(SyncdError):
    pass


class Unhealthy(SyncdError):
    exit_code = EXIT_PARTIAL
