"""The one request path: the shared token, the retries, the envelope, the pages.

``Requests`` is the client's HTTP seam: every part of ``PlatformClient`` holds the same
one and sends through it, and nothing else holds the ``httpx.Client`` (whose transport is
where tests replace the network).
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from email.utils import parsedate_to_datetime
from functools import partial
from typing import Any
from urllib.parse import quote

import httpx
from tenacity import RetryCallState

from syncd.access_token import CachedToken
from syncd.config import PlatformSettings
from syncd.errors import ConfigError, Fenced, PlatformError, PlatformUnavailable, TokenError
from syncd.logs import redact, register_secret
from syncd.platform._answers import _cached_token, _malformed
from syncd.platform._envelope import (
    JSON_HEADERS,
    TOKEN_NOT_FOUND,
    NotAnEnvelope,
    request_body,
    result_of,
)
from syncd.platform._retry import Fatal, RetryPolicy, Transient, classify
from syncd.platform._tokens import TokenKeeper, TokenStoreLike, app_key

log = logging.getLogger("syncd.platform")

# An attempt that starts right at its deadline still gets this long, rather than none.
MIN_ATTEMPT_TIMEOUT = 0.1
# A call refused for its token (10011) is sent again with a renewed one up to this many
# times (see Requests.call), pausing up to RENEWAL_PAUSE_S times the renewal's number.
RENEWALS = 3
RENEWAL_PAUSE_S = 0.2

TOKEN = "/v1/token"  # noqa: S105 - a path, not a password
# A token is fetched while other syncd processes wait for the store's token lock, at most
# the state database's busy timeout (60 s, ``BUSY_TIMEOUT_MS``; a test holds the two
# together): stop retrying the fetch well before they give up.
TOKEN_RETRY_DEADLINE = 30.0
BAD_CREDENTIALS = (202102, 202104)


class Requests:
    """The request path every call of ``PlatformClient`` takes, over one ``httpx.Client``.

    ``tokens`` is where the application's token is shared; ``on_retry(endpoint, reason)``
    is called once per retry (see ``PlatformClient``). Thread-safe.
    """

    def __init__(
        self,
        settings: PlatformSettings,
        http: httpx.Client,
        tokens: TokenStoreLike,
        on_retry: Callable[[str, str], None] | None = None,
    ) -> None:
        self.settings = settings
        self._http = http
        self._on_retry = on_retry
        self._policy = RetryPolicy(
            settings.retry_attempts,
            settings.retry_backoff,
            settings.retry_backoff_max,
            settings.retry_after_max,
        )
        self._host = _host(settings.base_url)
        self._stats_lock = threading.Lock()
        self._retries = 0
        self._calls: Counter[str] = Counter()
        # The Date header of the latest answer each thread was given (see ``platform_time``).
        self._answered = threading.local()
        self._tokens = TokenKeeper(tokens, app_key(settings), self._fetch_token)
        # Asked before every attempt of every request that is not a GET (a write, a token
        # fetch), retries included, while set: False raises Fenced (the run's lease).
        self.guard: Callable[[], bool] | None = None

    def close(self) -> None:
        self._http.close()

    @property
    def retries(self) -> int:
        """Retries made so far, over all calls and threads."""
        with self._stats_lock:
            return self._retries

    @property
    def calls(self) -> Counter[str]:
        """HTTP requests sent so far (retries included), by ``"METHOD /path-template"``."""
        with self._stats_lock:
            return Counter(self._calls)

    def token(self) -> str:
        """The shared access token, fetched or renewed through the store when absent or expired."""
        return self._tokens.current()

    def platform_time(self) -> int | None:
        """The platform's clock, in ms, as its latest answer to this thread gave it (the
        HTTP ``Date`` header: whole seconds); None without one, or one that is no date."""
        date = getattr(self._answered, "date", None)
        if not date:
            return None
        try:
            return int(parsedate_to_datetime(date).timestamp()) * 1000
        except (TypeError, ValueError, IndexError, OverflowError):
            return None

    def pages(
        self,
        template: str,
        key: str,
        params: dict[str, Any],
        page_size: int,
        concurrency: int = 1,
    ) -> Iterator[Any]:
        """Records of every page, in order, until total_count is reached (or an empty page).

        A page shorter than asked ends the list only when the answer gives no total: a
        platform that caps its pages below ``page_size`` is read on, never taken for done.
        With ``concurrency``, the pages after the first (whose length and total tell where
        the others start) are asked for that many at a time; a page shorter than the first
        before the end sends the rest back to one page at a time, so nothing is skipped.
        """
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        records, total = self._page(template, key, params, 0, page_size)
        yield from records
        skip, step = len(records), len(records)
        if concurrency > 1 and total is not None and step and skip < total:
            starts = iter(range(skip, total, step))
            in_flight: deque[tuple[int, Future[tuple[list[Any], int | None]]]] = deque()
            with ThreadPoolExecutor(concurrency, thread_name_prefix="pages") as pool:
                try:
                    while True:
                        while len(in_flight) < concurrency and (
                            (start := next(starts, None)) is not None
                        ):
                            page = pool.submit(self._page, template, key, params, start, step)
                            in_flight.append((start, page))
                        if not in_flight:
                            break
                        skip, records, total = self._settled(in_flight)
                        yield from records
                        if len(records) < step:
                            break
                finally:
                    for _, future in in_flight:
                        future.cancel()
        while True:
            if total is not None:
                if skip >= total or not records:
                    return
            elif len(records) < page_size:
                return
            records, total = self._page(template, key, params, skip, page_size)
            yield from records
            skip += len(records)

    @staticmethod
    def _settled(
        in_flight: deque[tuple[int, Future[tuple[list[Any], int | None]]]],
    ) -> tuple[int, list[Any], int | None]:
        """The oldest page asked for: where the next one starts, its records, the total."""
        start, future = in_flight.popleft()
        records, total = future.result()
        return start + len(records), records, total

    def _page(
        self, template: str, key: str, params: dict[str, Any], skip: int, limit: int
    ) -> tuple[list[Any], int | None]:
        """One page's records, and the total the platform gives (None if it gives none)."""
        result = self.call("GET", template, params={**params, "skip": skip, "limit": limit})
        records = result.get(key) if isinstance(result, dict) else None
        if not isinstance(records, list):
            raise _malformed(f"GET {template}", f"expected {{total_count, {key}: [...]}}")
        total = result.get("total_count")
        return records, total if isinstance(total, int) and not isinstance(total, bool) else None

    def call(
        self,
        method: str,
        template: str,
        *,
        path: Mapping[str, object] | None = None,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        repeatable: bool = True,
    ) -> Any:
        """Send with the shared token; on 10011 renew it and send again.

        Another syncd with the same application (a second host, its own state database)
        invalidates this one's token each time it renews its own, and may do so again
        between this renewal and the call sent with it: the call is renewed for and sent
        again up to RENEWALS times, the later ones after a short random pause, so two
        processes that keep refusing each other's tokens fall out of step.
        """
        url = _fill(template, {"org_code": self.settings.org_code, **(path or {})})

        def send(token: str) -> Any:
            return self._send(
                method, template, url, token=token, params=params, body=body, repeatable=repeatable
            )

        token = self._tokens.current()
        for renewal in range(RENEWALS + 1):
            try:
                return send(token)
            except PlatformError as exc:
                if exc.status != TOKEN_NOT_FOUND:
                    raise
                if renewal == RENEWALS:
                    raise TokenError(
                        TOKEN_NOT_FOUND,
                        f"the platform refused {RENEWALS} just-renewed tokens in a row for "
                        f"application {self.settings.client_id!r} at "
                        f"{self.settings.base_url}: is another program using the same "
                        "application? (each new token invalidates the previous one)",
                        exc.endpoint,
                    ) from exc
            if renewal:
                time.sleep(random.uniform(0, RENEWAL_PAUSE_S * renewal))
            log.info("the platform refused the access token (10011); renewing it")
            token = self._tokens.replace(token)
        raise AssertionError("unreachable")

    def _send(
        self,
        method: str,
        template: str,
        url: str,
        *,
        token: str | None,
        params: Mapping[str, Any] | None,
        body: Any,
        repeatable: bool = True,
        deadline: float | None = None,
    ) -> Any:
        """One call with its retries; transport trouble ends as PlatformUnavailable."""
        label = f"{method} {template}"
        endpoint = f"{method} {url}"
        query = dict(params or {})
        if token is not None:
            query["access_token"] = token
        attempts = 0
        started = time.monotonic()
        content = request_body(body)  # encoded once, whatever the attempts

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            left = math.inf if deadline is None else deadline - (time.monotonic() - started)
            return self._attempt(
                method, url, label, endpoint, query, content, self._timeout_within(left)
            )

        retrying = self._policy.retrying(
            repeatable=repeatable,
            before_sleep=partial(self._before_retry, label, endpoint),
            deadline=deadline,
        )
        try:
            return retrying(attempt)
        except Transient as exc:
            failure = exc
        except (Fatal, NotAnEnvelope) as exc:
            raise PlatformUnavailable(redact(f"platform {self._host}: {endpoint}: {exc}")) from exc
        raise PlatformUnavailable(self._gave_up(endpoint, failure, attempts, repeatable))

    def _timeout_within(self, left: float) -> httpx.Timeout:
        """The configured timeouts, none longer than the ``left`` seconds before a deadline.

        The deadline (the token fetch's) only stops new attempts; an attempt started just
        before it must not then wait out the full timeouts. Even if connecting and reading
        each take all that is left, the attempt ends within twice the deadline, which is
        how TOKEN_RETRY_DEADLINE is chosen against the database's busy timeout.
        """
        left = max(left, MIN_ATTEMPT_TIMEOUT)
        settings = self.settings
        return httpx.Timeout(
            min(settings.timeout, left), connect=min(settings.connect_timeout, left)
        )

    def _attempt(
        self,
        method: str,
        url: str,
        label: str,
        endpoint: str,
        query: dict[str, Any],
        content: bytes | None,
        timeout: httpx.Timeout,
    ) -> Any:
        guard = self.guard
        if method != "GET" and guard is not None and not guard():
            raise Fenced(f"{endpoint}: not sent: this instance no longer surely holds the lease")
        with self._stats_lock:
            self._calls[label] += 1
        try:
            response = self._http.request(
                method,
                url,
                params=query,
                content=content,
                headers=JSON_HEADERS if content is not None else None,
                timeout=timeout,
            )
        except httpx.RequestError as exc:
            failure = classify(exc)
        else:
            self._answered.date = response.headers.get("date")
            return result_of(response, endpoint)
        # Raised outside the except block: the httpx exception, whose request holds the
        # token in its URL, must not ride along as __context__.
        raise failure

    def _before_retry(self, label: str, endpoint: str, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        kind, reason = (exc.kind, exc.reason) if isinstance(exc, Transient) else ("error", str(exc))
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        with self._stats_lock:
            self._retries += 1
        log.warning(
            "platform %s: %s: %s; attempt %d of %d in %.2f s",
            self._host,
            endpoint,
            redact(reason),
            state.attempt_number + 1,
            self.settings.retry_attempts,
            wait,
        )
        if self._on_retry is not None:
            self._on_retry(label, kind)

    def _gave_up(self, endpoint: str, failure: Transient, attempts: int, repeatable: bool) -> str:
        if self._policy.asked_too_long(failure) and (repeatable or failure.unsent):
            why = (
                f"the platform asked to wait {failure.retry_after:g} s before trying again, "
                f"longer than platform.retry_after_max ({self.settings.retry_after_max:g} s)"
            )
        elif repeatable or failure.unsent:
            why = f"gave up after {attempts} attempt{'s' if attempts != 1 else ''}"
        else:
            why = "not retried: the platform may have acted on it"
        return redact(f"platform {self._host} unavailable: {endpoint}: {failure.reason} ({why})")

    def _fetch_token(self) -> CachedToken:
        settings = self.settings
        if settings.client_secret is None:
            raise ConfigError("platform.client_secret is not set")
        body = {
            "grant_type": "client_credentials",
            "scope": "app",
            "domain_id": settings.domain_id,
            "client_id": settings.client_id,
            "client_secret": settings.client_secret.get_secret_value(),
        }
        if settings.org_id:
            body["org_id"] = settings.org_id
        else:
            body["owner_id"] = settings.owner_id or settings.domain_id
        try:
            result = self._send(
                "POST",
                TOKEN,
                TOKEN,
                token=None,
                params=None,
                body=body,
                deadline=TOKEN_RETRY_DEADLINE,
            )
        except PlatformError as exc:
            raise TokenError(
                exc.status,
                f"application {settings.client_id!r} at {settings.base_url}: {exc.message}"
                + (
                    "; check platform.client_id and platform.client_secret"
                    if exc.status in BAD_CREDENTIALS
                    else ""
                ),
                exc.endpoint,
            ) from exc
        token = _cached_token(result, f"POST {TOKEN}")
        register_secret(token.access_token)
        log.info(
            "obtained a new access token for application %s at %s",
            settings.client_id,
            self._host,
        )
        return token


def _fill(template: str, values: Mapping[str, object]) -> str:
    return template.format(**{k: quote(str(v), safe="") for k, v in values.items()})


def _host(base_url: str) -> str:
    url = httpx.URL(base_url)
    return f"{url.host}:{url.port}" if url.port else url.host
