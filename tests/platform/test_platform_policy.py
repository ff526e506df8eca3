"""Pure parts of the client: Retry-After parsing, backoff bounds, failure classes, token clock."""

from __future__ import annotations

import ssl
from datetime import UTC, datetime
from email.utils import format_datetime

import httpx
import pytest
from tenacity import Future as TenacityFuture
from tenacity import RetryCallState, Retrying

from syncd.clock import now_ms
from syncd.platform._retry import Fatal, RetryPolicy, Transient, classify, parse_retry_after
from syncd.platform._tokens import MemoryTokenStore, TokenKeeper
from syncd.snapshot import CachedToken


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("7", 7.0), (" 2.5 ", 2.5), ("-3", 0.0), ("", None), (None, None), ("soon", None)],
)
def test_retry_after_in_seconds(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header) == seconds


def test_retry_after_as_http_date() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()
    later = format_datetime(datetime(2026, 1, 2, 3, 4, 35, tzinfo=UTC), usegmt=True)
    assert parse_retry_after(later, now=now) == 30.0
    earlier = format_datetime(datetime(2026, 1, 2, 3, 0, 0, tzinfo=UTC), usegmt=True)
    assert parse_retry_after(earlier, now=now) == 0.0


def state_after(attempt: int, exc: BaseException) -> RetryCallState:
    state = RetryCallState(Retrying(), fn=None, args=(), kwargs={})
    state.attempt_number = attempt
    future: TenacityFuture = TenacityFuture(attempt)
    future.set_exception(exc)
    state.outcome = future
    return state


def test_backoff_doubles_with_jitter_up_to_the_cap() -> None:
    policy = RetryPolicy(attempts=10, backoff=1.0, backoff_max=5.0, retry_after_max=300.0)
    failure = Transient("http_500", "HTTP 500", unsent=False)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (8, 5.0)]:
        waits = {policy.wait(state_after(attempt, failure)) for _ in range(50)}
        assert all(ceiling / 2 <= w <= ceiling for w in waits)
        assert len(waits) > 1  # jittered


def test_retry_after_replaces_the_backoff_in_full_up_to_its_ceiling() -> None:
    policy = RetryPolicy(attempts=3, backoff=0.1, backoff_max=5.0, retry_after_max=300.0)
    told = Transient("http_429", "HTTP 429", unsent=True, retry_after=2.0)
    assert policy.wait(state_after(1, told)) == 2.0
    longer_than_backoff = Transient("http_429", "HTTP 429", unsent=True, retry_after=120.0)
    assert policy.wait(state_after(1, longer_than_backoff)) == 120.0
    assert not policy.asked_too_long(longer_than_backoff)
    too_long = Transient("http_429", "HTTP 429", unsent=True, retry_after=600.0)
    assert policy.asked_too_long(too_long)


def request() -> httpx.Request:
    return httpx.Request("GET", "http://platform.test/v1/users?access_token=abc")


@pytest.mark.parametrize(
    ("error", "kind", "unsent"),
    [
        (httpx.ConnectError("refused", request=request()), "connect", True),
        (httpx.ConnectTimeout("slow", request=request()), "timeout", True),
        (httpx.PoolTimeout("busy", request=request()), "timeout", True),
        (httpx.ReadTimeout("slow", request=request()), "timeout", False),
        (httpx.WriteTimeout("slow", request=request()), "timeout", False),
        (httpx.ReadError("reset", request=request()), "dropped", False),
        (httpx.RemoteProtocolError("peer closed", request=request()), "dropped", False),
    ],
)
def test_transient_failures(error: httpx.RequestError, kind: str, unsent: bool) -> None:
    failure = classify(error)
    assert isinstance(failure, Transient)
    assert (failure.kind, failure.unsent) == (kind, unsent)
    assert "access_token" not in failure.reason


def test_certificate_failure_is_fatal() -> None:
    error = httpx.ConnectError("handshake", request=request())
    error.__cause__ = ssl.SSLCertVerificationError("certificate verify failed")
    assert isinstance(classify(error), Fatal)


def test_bad_scheme_is_fatal() -> None:
    assert isinstance(classify(httpx.UnsupportedProtocol("ftp://")), Fatal)


def test_memory_store_returns_a_newer_token_instead_of_fetching() -> None:
    store = MemoryTokenStore()
    fetched: list[str] = []

    def fetch() -> CachedToken:
        fetched.append(f"t{len(fetched) + 1}")
        return CachedToken(fetched[-1], now_ms() + 3_600_000, now_ms())

    assert store.renew("app", None, fetch, now_ms()).access_token == "t1"
    assert store.renew("app", None, fetch, now_ms()).access_token == "t1"  # still good
    assert store.renew("app", "t0", fetch, now_ms()).access_token == "t1"  # t0 was replaced
    assert store.renew("app", "t1", fetch, now_ms()).access_token == "t2"  # t1 refused
    assert fetched == ["t1", "t2"]


def test_platform_clock_far_behind_ours_does_not_renew_every_call() -> None:
    behind = 10 * 3_600_000  # ten hours: every token "expired" by our clock

    def fetch() -> CachedToken:
        platform_now = now_ms() - behind
        return CachedToken(f"t{len(fetched)}", platform_now + 7_200_000, platform_now)

    fetched: list[CachedToken] = []

    def counting_fetch() -> CachedToken:
        fetched.append(fetch())
        return fetched[-1]

    keeper = TokenKeeper(MemoryTokenStore(), "app", counting_fetch)
    tokens = {keeper.current() for _ in range(5)}
    assert len(tokens) == 1 and len(fetched) == 1
