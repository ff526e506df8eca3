"""The application's one access token: where it is kept, and when it is renewed.

The platform keeps one token per application and issuing a new one invalidates the
old, so every syncd process on a host shares the token kept in the state database (the
state store's ``TokenStore``, given to the client). This module decides *when* to go to
the store and the store decides, under its lock, whether a fetch is needed at all.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Callable
from typing import Protocol

from syncd.access_token import CachedToken
from syncd.clock import now_ms
from syncd.config import PlatformSettings
from syncd.logs import register_secret

# Renew a little before the platform would refuse the token, so a request in flight
# does not race the expiry; a tenth of the lifetime for short-lived tokens.
MAX_EXPIRY_MARGIN_MS = 60_000


class TokenStoreLike(Protocol):
    """Where the shared token lives: the state store's ``TokenStore`` or ``MemoryTokenStore``."""

    def get(self, app: str) -> CachedToken | None: ...

    def renew(
        self, app: str, stale: str | None, fetch: Callable[[], CachedToken], now_ms: int
    ) -> CachedToken: ...


class MemoryTokenStore:
    """A token store for one process (tests, the demo); same semantics as ``TokenStore``."""

    def __init__(self) -> None:
        self._tokens: dict[str, CachedToken] = {}
        self._lock = threading.Lock()

    def get(self, app: str) -> CachedToken | None:
        with self._lock:
            return self._tokens.get(app)

    def renew(
        self, app: str, stale: str | None, fetch: Callable[[], CachedToken], now_ms: int
    ) -> CachedToken:
        """The stored token if someone already replaced ``stale``, else a fetched one."""
        with self._lock:
            current = self._tokens.get(app)
            replaced = current is not None and current.access_token != stale
            if current is not None and replaced and current.expire_time > now_ms:
                return current
            fresh = fetch()
            self._tokens[app] = fresh
            return fresh

    def __repr__(self) -> str:
        return f"MemoryTokenStore({len(self._tokens)} app(s))"


def expiry_margin(token: CachedToken) -> int:
    if token.issued_time is None:
        return MAX_EXPIRY_MARGIN_MS
    lifetime = max(token.expire_time - token.issued_time, 0)
    return min(MAX_EXPIRY_MARGIN_MS, lifetime // 10)


def is_fresh(token: CachedToken, at_ms: int) -> bool:
    return token.expire_time - expiry_margin(token) > at_ms


class TokenKeeper:
    """This process's view of the shared token; thread-safe, one renewal at a time.

    Expiry is judged on the platform's clock: the offset from ours is measured at each
    fetch (``issued_time`` against now), so a skewed clock cannot make every token look
    expired and have each request replace the application's one token.
    """

    def __init__(self, store: TokenStoreLike, app: str, fetch: Callable[[], CachedToken]) -> None:
        self._store = store
        self._app = app
        self._fetch = fetch
        self._lock = threading.Lock()
        self._token: CachedToken | None = None
        self._skew_ms = 0  # the platform's clock minus ours

    def current(self) -> str:
        """The token to use now: ours, the store's, or a renewed one when both are stale."""
        with self._lock:
            mine = self._token
            if mine is not None and is_fresh(mine, self._now()):
                return mine.access_token
            stored = self._store.get(self._app)
            if stored is not None:
                register_secret(stored.access_token)
                if is_fresh(stored, self._now()):
                    return self._keep(stored)
            stale = stored or mine
            return self._renew(stale.access_token if stale is not None else None)

    def replace(self, stale: str) -> str:
        """A token other than ``stale``, which the platform has just refused."""
        with self._lock:
            mine = self._token
            if mine is not None and mine.access_token != stale and is_fresh(mine, self._now()):
                return mine.access_token  # another thread renewed while we waited
            return self._renew(stale)

    def _now(self) -> int:
        return now_ms() + self._skew_ms

    def _renew(self, stale: str | None) -> str:
        return self._keep(self._store.renew(self._app, stale, self._fetch_measured, self._now()))

    def _fetch_measured(self) -> CachedToken:
        token = self._fetch()
        if token.issued_time is not None:
            self._skew_ms = token.issued_time - now_ms()
        return token

    def _keep(self, token: CachedToken) -> str:
        register_secret(token.access_token)
        self._token = token
        return token.access_token

    def __repr__(self) -> str:
        return f"TokenKeeper({self._app!r})"


def app_key(settings: PlatformSettings) -> str:
    """The key of this application's token in the shared store: the platform, the
    application and a digest of its secret (never the secret), so a token fetched with
    another secret is never taken for this one's."""
    secret = settings.client_secret.get_secret_value() if settings.client_secret else ""
    app = f"{settings.base_url}|{settings.domain_id}|{settings.client_id}"
    return f"{app}#{secret_digest(app, secret)}"


def secret_digest(app: str, secret: str) -> str:
    """What tells one application secret from another in the token store's key: an
    HMAC-SHA-256 of the secret keyed by the application, never the secret itself."""
    return hmac.new(app.encode(), secret.encode(), hashlib.sha256).hexdigest()[:32]
