"""The platform's admin API, as syncd uses it: organizations, employees, users, messages,
media and avatars.

One ``PlatformClient`` holds one ``httpx.Client`` and may be shared by threads. Every
call goes through the same path: take the shared token, send, read the envelope, retry
what is transient, renew the token once if the platform says ``10011``.

Which calls may be sent again after a failure that left their fate unknown (a timeout,
a dropped connection, HTTP 5xx, status 115)? Those whose second copy does no harm:

- reads, updates of a node or an employee, lock/unlock/disable/enable and deletes
  (a repeated delete answers ``208502``, which the executor reads as "already gone");
- ``import-employees``: an upsert keyed by ``username``, so the same batch twice leaves
  each person once, with the same fields (``ops = REMOVE`` twice removes once);
- ``import-orgs`` and node creation when every node carries a ``serial_no``: the
  platform refuses a ``serial_no`` it already holds, as a per-item failure, so a resent
  batch cannot create a node twice; the executor recognises that failure and adopts the
  node it created the first time (looked up by ``serial_no``);
- the token request: a second token replaces the first, which nobody has seen yet;
- an image upload with its ``file_digest`` (the platform keeps one file per digest and
  answers the same media id) and setting an avatar (the same one twice is once).

Not so a message (``send_text``), a node created without a ``serial_no`` (alone or in an
``import-orgs`` batch) or a single employee (``create_employee``: the second copy
answers "username already exists"): they are retried only when the platform surely
never saw them (no connection, HTTP 429).

The client's rooms: ``_requests`` (the one request path every call takes), ``_answers``
(the platform's answers read into values), and the endpoints: ``_organizations``,
``_employees``, ``_users`` (users and messages), ``_media`` (images and avatars).
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
import threading
from collections import Counter
from collections.abc import Callable
from types import TracebackType
from typing import Self

import httpx

from syncd.config import PlatformSettings
from syncd.errors import ConfigError, PlatformError, TokenError
from syncd.logs import install_redaction, register_secret
from syncd.platform._answers import _cached_token
from syncd.platform._employees import Employees
from syncd.platform._media import Media
from syncd.platform._organizations import Organizations
from syncd.platform._retry import RetryPolicy
from syncd.platform._tokens import TokenKeeper, TokenStoreLike, secret_digest
from syncd.platform._users import Users
from syncd.snapshot import BUSY_TIMEOUT_MS, CachedToken

log = logging.getLogger("syncd.platform")

TOKEN = "/v1/token"  # noqa: S105 - a path, not a password

# A token is fetched under the state database's write lock, which other syncd processes
# wait for at most BUSY_TIMEOUT_MS: stop retrying the fetch well before they give up.
TOKEN_RETRY_DEADLINE = BUSY_TIMEOUT_MS / 1000 / 2
BAD_CREDENTIALS = (202102, 202104)

_insecure_warned = False
_insecure_lock = threading.Lock()


def app_key(settings: PlatformSettings) -> str:
    """The key of this application's token in the shared store: the platform, the
    application and a digest of its secret (never the secret), so a token fetched with
    another secret is never taken for this one's."""
    secret = settings.client_secret.get_secret_value() if settings.client_secret else ""
    app = f"{settings.base_url}|{settings.domain_id}|{settings.client_id}"
    return f"{app}#{secret_digest(app, secret)}"


class PlatformClient(Organizations, Employees, Users, Media):
    """The platform's admin API over one thread-safe HTTP client and one shared token.

    ``tokens`` is where the application's token is shared (``snapshot.TokenStore`` for
    every process on the host). ``on_retry(endpoint, reason)`` is called once per retry,
    from the calling thread, with the ``"METHOD /path-template"`` and a short reason
    (``http_500``, ``http_429``, ``status_115``, ``timeout``, ``connect``, ``dropped``).
    ``transport`` replaces the network, for tests only.
    """

    def __init__(
        self,
        settings: PlatformSettings,
        tokens: TokenStoreLike,
        *,
        transport: httpx.BaseTransport | None = None,
        on_retry: Callable[[str, str], None] | None = None,
    ) -> None:
        install_redaction()
        if settings.client_secret is not None:
            register_secret(settings.client_secret.get_secret_value())
        self._settings = settings
        self._on_retry = on_retry
        self._policy = RetryPolicy(
            settings.retry_attempts,
            settings.retry_backoff,
            settings.retry_backoff_max,
            settings.retry_after_max,
        )
        self._host = _host(settings.base_url)
        self._http = _http_client(settings, transport)
        self._stats_lock = threading.Lock()
        self._retries = 0
        self._calls: Counter[str] = Counter()
        self._tokens = TokenKeeper(tokens, app_key(settings), self._fetch_token)

    # ------------------------------------------------------------ lifecycle and counters

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        settings = self._settings
        return f"PlatformClient({settings.base_url!r}, client_id={settings.client_id!r})"

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

    # ------------------------------------------------------------ token

    def token(self) -> str:
        """The shared access token, fetched or renewed through the store when absent or expired."""
        return self._tokens.current()

    def _fetch_token(self) -> CachedToken:
        settings = self._settings
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
            ) from None
        token = _cached_token(result, f"POST {TOKEN}")
        register_secret(token.access_token)
        log.info(
            "obtained a new access token for application %s at %s",
            settings.client_id,
            self._host,
        )
        return token


# ---------------------------------------------------------------- helpers


def _http_client(settings: PlatformSettings, transport: httpx.BaseTransport | None) -> httpx.Client:
    timeout = httpx.Timeout(settings.timeout, connect=settings.connect_timeout)
    headers = {
        "Accept": "application/json",
        "User-Agent": "syncd",
        # Which syncd sent it (host/pid): the emulator counts writes by caller (docs/ha.md).
        "X-Syncd-Instance": f"{socket.gethostname()}/{os.getpid()}",
    }
    if transport is not None:
        return httpx.Client(
            base_url=settings.base_url, timeout=timeout, headers=headers, transport=transport
        )
    return httpx.Client(
        base_url=settings.base_url, timeout=timeout, headers=headers, verify=_verify(settings)
    )


def _verify(settings: PlatformSettings) -> ssl.SSLContext | bool:
    if not settings.verify_tls:
        _warn_insecure(settings.base_url)
        return False
    if settings.ca_file is None:
        return True
    try:
        return ssl.create_default_context(cafile=str(settings.ca_file))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"platform.ca_file {settings.ca_file}: cannot load the CA bundle: {exc}"
        ) from None


def _warn_insecure(base_url: str) -> None:
    global _insecure_warned
    with _insecure_lock:
        if _insecure_warned:
            return
        _insecure_warned = True
    log.warning(
        "TLS CERTIFICATE VERIFICATION IS OFF for %s (platform.verify_tls = false): anyone on "
        "the network path can read the access token and change what syncd sends. Set "
        "platform.ca_file to the platform's CA bundle instead.",
        base_url,
    )


def _host(base_url: str) -> str:
    url = httpx.URL(base_url)
    return f"{url.host}:{url.port}" if url.port else url.host
