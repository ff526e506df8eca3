"""Which failures are worth another attempt, and how long to wait before it.

A failure is *transient* when the platform may well answer the same request correctly a
moment later: the connection could not be made or broke, the answer did not come in
time, HTTP 429, HTTP 5xx without an envelope error (``_envelope``), or envelope status
115. Everything else is an answer and is never retried. A transient failure also
records whether the platform surely did *not* act on the request (``unsent``): only
those are retried for calls that must not run twice.
"""

from __future__ import annotations

import email.utils
import random
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_any,
    stop_before_delay,
)
from tenacity.stop import stop_base

from syncd.logs import redact


class Transient(Exception):
    """A failure that another attempt may cure; never leaves the platform package."""

    def __init__(
        self, kind: str, reason: str, *, unsent: bool, retry_after: float | None = None
    ) -> None:
        super().__init__(reason)
        self.kind = kind  # short and stable, for metrics: http_500, timeout, dropped, ...
        self.reason = reason  # for people; holds no URL and no body
        self.unsent = unsent
        self.retry_after = retry_after


class Fatal(Exception):
    """A transport failure no retry can cure (bad URL scheme, TLS verification)."""


def classify(exc: httpx.RequestError) -> Transient | Fatal:
    """Translate an httpx failure, keeping only its class and errno-style text."""
    name = type(exc).__name__
    if _is_tls_verification(exc):
        return Fatal("TLS certificate verification failed (set platform.ca_file to the CA bundle)")
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return Transient("timeout", f"{name}: no connection in the connect timeout", unsent=True)
    if isinstance(exc, httpx.ConnectError):
        return Transient("connect", f"{name}: {_short(exc)}", unsent=True)
    if isinstance(exc, httpx.TimeoutException):
        return Transient("timeout", f"{name}: no complete answer within the timeout", unsent=False)
    if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
        return Transient("dropped", f"{name}: the connection broke: {_short(exc)}", unsent=False)
    if isinstance(exc, httpx.ProxyError):
        return Transient("proxy", f"{name}: {_short(exc)}", unsent=False)
    if isinstance(exc, httpx.DecodingError):
        return Fatal(f"{name}: the answer could not be decoded")
    return Fatal(f"{name}: {_short(exc)}")


def _is_tls_verification(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return True
        seen = seen.__cause__ or seen.__context__
    return "CERTIFICATE_VERIFY_FAILED" in str(exc)


def _short(exc: BaseException) -> str:
    # httpx messages carry errno text, never the request URL; still keep them short, and
    # masked: they end up as the cause of the error syncd raises, in its traceback.
    text = str(exc).strip() or type(exc).__name__
    return redact(text)[:200]


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait per a Retry-After header (delta-seconds or HTTP date), or None."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = time.time() if now is None else now
    return max((when - datetime.fromtimestamp(current, UTC)).total_seconds(), 0.0)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """At most ``attempts`` tries; waits double from ``backoff`` up to ``backoff_max``.

    A ``Retry-After`` from the platform replaces the backoff and is honoured in full: it
    is the platform saying when it will take requests again, and coming back sooner only
    earns another refusal. A wait longer than ``retry_after_max`` ends the retries
    instead (see ``asked_too_long``).
    """

    attempts: int
    backoff: float
    backoff_max: float
    retry_after_max: float

    def wait(self, state: RetryCallState) -> float:
        """Retry-After when the platform gave one, else exponential with jitter."""
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, Transient) and exc.retry_after is not None:
            return exc.retry_after
        ceiling = min(self.backoff_max, self.backoff * 2 ** (state.attempt_number - 1))
        # "Equal jitter": never less than half the step, so retries stay spaced out,
        # yet threads that failed together do not all come back together.
        return float(ceiling / 2 + random.uniform(0, ceiling / 2))

    def asked_too_long(self, exc: BaseException | None) -> bool:
        """The platform asked for a wait longer than syncd is willing to sit through."""
        return (
            isinstance(exc, Transient)
            and exc.retry_after is not None
            and exc.retry_after > self.retry_after_max
        )

    def retrying(
        self,
        *,
        repeatable: bool,
        before_sleep: Callable[[RetryCallState], None],
        deadline: float | None = None,
    ) -> Retrying:
        """A tenacity controller for one call; ``repeatable`` says the call may run twice.

        ``deadline`` (seconds) also ends the retries when the next attempt would start
        after it.
        """

        def worth_retrying(exc: BaseException) -> bool:
            return isinstance(exc, Transient) and (repeatable or exc.unsent)

        stops: list[stop_base] = [stop_after_attempt(self.attempts), _StopOnLongWait(self)]
        if deadline is not None:
            stops.append(stop_before_delay(deadline))
        return Retrying(
            stop=stop_any(*stops),
            wait=self.wait,
            retry=retry_if_exception(worth_retrying),
            before_sleep=before_sleep,
            reraise=True,
        )


class _StopOnLongWait(stop_base):
    """Stops when the platform asked for a wait longer than ``retry_after_max``."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._policy = policy

    def __call__(self, retry_state: RetryCallState) -> bool:
        outcome = retry_state.outcome
        return outcome is not None and self._policy.asked_too_long(outcome.exception())
