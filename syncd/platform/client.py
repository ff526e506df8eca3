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
"""

from __future__ import annotations

import base64
import logging
import math
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from types import TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError
from tenacity import RetryCallState

from syncd.config import PlatformSettings
from syncd.errors import ConfigError, PlatformError, PlatformUnavailable, TokenError
from syncd.logs import install_redaction, redact, register_secret
from syncd.platform._envelope import TOKEN_NOT_FOUND, NotAnEnvelope, result_of
from syncd.platform._retry import Fatal, RetryPolicy, Transient, classify
from syncd.platform._tokens import TokenKeeper, TokenStoreLike
from syncd.platform.schemas import EmployeeRecord, ImportResult, Node
from syncd.snapshot import BUSY_TIMEOUT_MS, CachedToken

log = logging.getLogger("syncd.platform")

TOKEN = "/v1/token"  # noqa: S105 - a path, not a password
ORGS = "/v1/admin/organizations"
ORG = ORGS + "/{org_code}"
NODE = ORG + "/{id}"
EMPLOYEES = ORG + "/employees"
EMPLOYEE = EMPLOYEES + "/{employee_id}"
USERS = "/v1/users"
MBOX = "/app/mbox"
MEDIA_IMAGES = "/v1/medias/images"
# A legacy client endpoint (section I): on the same base_url, with no /v1 prefix.
AVATAR = "/users/{user_id}/avatar"

# A token is fetched under the state database's write lock, which other syncd processes
# wait for at most BUSY_TIMEOUT_MS: stop retrying the fetch well before they give up.
TOKEN_RETRY_DEADLINE = BUSY_TIMEOUT_MS / 1000 / 2
# An attempt that starts right at its deadline still gets this long, rather than none.
MIN_ATTEMPT_TIMEOUT = 0.1
NO_SUCH_NODE = 208502
BAD_CREDENTIALS = (202102, 202104)

_insecure_warned = False
_insecure_lock = threading.Lock()

_M = TypeVar("_M", bound=BaseModel)


def app_key(settings: PlatformSettings) -> str:
    """The key of this application's token in the shared store."""
    return f"{settings.base_url}|{settings.domain_id}|{settings.client_id}"


class PlatformClient:
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

    # ------------------------------------------------------------ organizations

    def root(self) -> Node:
        """The root organization (CORP), with its direct children and employees."""
        return _model(Node, self._call("GET", ORG), f"GET {ORG}")

    def page_orgs(
        self, *, refresh_time: int | None = None, page_size: int = 1000
    ) -> Iterator[Node]:
        """Every node, page by page; with ``refresh_time``, those changed after it."""
        template = ORG + "/page-orgs"
        params: dict[str, Any] = {"domain_id": self._settings.domain_id}
        if refresh_time is not None:
            params["refresh_time"] = refresh_time
        for record in self._pages(template, "records", params, page_size):
            yield _model(Node, record, f"GET {template}")

    def node(self, node_id: int) -> Node:
        return _model(Node, self._call("GET", NODE, path={"id": node_id}), f"GET {NODE}")

    def node_by_serial(self, serial_no: str) -> Node | None:
        """The node holding this third-party serial number, or None when there is none."""
        template = ORG + "/serial/{serial_no}"
        try:
            result = self._call(
                "GET",
                template,
                path={"serial_no": serial_no},
                params={"domain_id": self._settings.domain_id},
            )
        except PlatformError as exc:
            if exc.status == NO_SUCH_NODE:
                return None
            raise
        return _model(Node, result, f"GET {template}") if result else None

    def create_node(self, body: Mapping[str, Any], *, in_path: bool = True) -> Node | None:
        """Create one node; the platform's answer is a node on some versions, empty on others."""
        if in_path:
            template, payload = ORG, dict(body)
        else:
            template, payload = ORGS, {"org_code": self._settings.org_code, **body}
        result = self._call(
            "POST", template, body=payload, repeatable=bool(payload.get("serial_no"))
        )
        if isinstance(result, dict) and result.get("id") is not None:
            return _model(Node, result, f"POST {template}")
        return None

    def update_node(self, node_id: int, body: Mapping[str, Any]) -> None:
        """Rename, re-parent (``new_parentId``) or re-sort one node."""
        self._call("POST", NODE, path={"id": node_id}, body=dict(body))

    def delete_node(self, node_id: int) -> None:
        """Delete an empty node; 208507 (still has employees) and 208502 (gone) propagate."""
        self._call("DELETE", NODE, path={"id": node_id})

    def import_orgs(self, bodies: Sequence[Mapping[str, Any]]) -> ImportResult:
        """Create nodes in bulk, parents first; per-item failures come back, never raise."""
        if not bodies:
            return ImportResult()
        template = ORG + "/import-orgs"
        # Resending is safe only when the platform can refuse the copies by serial_no.
        repeatable = all(b.get("serial_no") for b in bodies)
        result = self._call("POST", template, body=[dict(b) for b in bodies], repeatable=repeatable)
        return _import_result(result, f"POST {template}")

    # ------------------------------------------------------------ employees

    def employees_by_username(
        self, usernames: Sequence[str], *, batch: int = 100
    ) -> list[EmployeeRecord]:
        """The employees holding these usernames (absent ones are simply missing)."""
        if batch < 1:
            raise ValueError("batch must be at least 1")
        wanted = list(dict.fromkeys(u for u in usernames if u))
        if any("," in u for u in wanted):
            raise ValueError("a username with a comma cannot be looked up in a batch")
        found: list[EmployeeRecord] = []
        for start in range(0, len(wanted), batch):
            query = ",".join(wanted[start : start + batch])
            found += self._employee_list({"matching": "true", "type": "username", "query": query})
        return found

    def employee_records(
        self, usernames: Sequence[str], *, batch: int = 200
    ) -> Iterator[dict[str, Any]]:
        """The list-form records of these usernames, as the platform sends them (plain
        dicts, for reading many: no model is built), ``concurrency`` batches in flight."""
        wanted = list(dict.fromkeys(u for u in usernames if u))
        if any("," in u for u in wanted):
            raise ValueError("a username with a comma cannot be looked up in a batch")
        endpoint = f"GET {EMPLOYEES}"

        def fetch(start: int) -> list[Any]:
            query = ",".join(wanted[start : start + batch])
            params = {"domain_id": self._settings.domain_id, "matching": "true"}
            result = self._call(
                "GET", EMPLOYEES, params={**params, "type": "username", "query": query}
            )
            if not isinstance(result, list):
                raise _malformed(endpoint, "expected a list of employees")
            return result

        with ThreadPoolExecutor(self._settings.concurrency, thread_name_prefix="read") as pool:
            for page in pool.map(fetch, range(0, len(wanted), batch)):
                yield from (r for r in page if isinstance(r, dict))

    def list_employees(
        self, *, query: str | None = None, org_id: int | None = None, recursion: bool = False
    ) -> list[EmployeeRecord]:
        """Employees by search text, or of a node (and its descendants with ``recursion``)."""
        params: dict[str, Any] = {}
        if query is not None:
            params["query"] = query
        if org_id is not None:
            params["org_id"] = org_id
            params["recursion"] = "true" if recursion else "false"
        return self._employee_list(params)

    def _employee_list(self, params: dict[str, Any]) -> list[EmployeeRecord]:
        endpoint = f"GET {EMPLOYEES}"
        result = self._call(
            "GET", EMPLOYEES, params={"domain_id": self._settings.domain_id, **params}
        )
        if result is None:
            return []
        if not isinstance(result, list):
            raise _malformed(endpoint, "expected a list of employees")
        return [_model(EmployeeRecord, record, endpoint) for record in result]

    def employee(self, employee_id: int) -> dict[str, Any]:
        """One employee in the detail form."""
        return _dict(self._call("GET", EMPLOYEE, path={"employee_id": employee_id}))

    def create_employee(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create one employee; not resent when its fate is unknown (a copy would conflict)."""
        return _dict(self._call("POST", EMPLOYEES, body=dict(body), repeatable=False))

    def update_employee(self, employee_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """Update one employee; the platform cannot change a ``username`` this way."""
        return _dict(
            self._call("POST", EMPLOYEE, path={"employee_id": employee_id}, body=dict(body))
        )

    def import_employees(
        self, bodies: Sequence[Mapping[str, Any]], *, remove: bool = False
    ) -> ImportResult:
        """Create-or-update (or, with ``remove``, delete) employees in bulk, keyed by username."""
        if not bodies:
            return ImportResult()
        template = ORG + "/import-employees"
        payload = [{**b, "ops": "REMOVE"} if remove else dict(b) for b in bodies]
        result = self._call("POST", template, body=payload)
        return _import_result(result, f"POST {template}")

    def depart(self, employee_id: int) -> None:
        """Mark an employee departed: lock on V3, disable on V4."""
        self._employee_action(employee_id, "disable" if self._v4 else "lock")

    def reinstate(self, employee_id: int) -> None:
        """Bring a departed employee back: unlock on V3, enable on V4."""
        self._employee_action(employee_id, "enable" if self._v4 else "unlock")

    def lock(self, employee_id: int) -> None:
        self._employee_action(employee_id, "lock")

    def unlock(self, employee_id: int) -> None:
        self._employee_action(employee_id, "unlock")

    def disable(self, employee_id: int) -> None:
        """V4 only."""
        self._employee_action(employee_id, "disable")

    def enable(self, employee_id: int) -> None:
        """V4 only."""
        self._employee_action(employee_id, "enable")

    def delete_employee(self, employee_id: int) -> None:
        self._call("DELETE", EMPLOYEE, path={"employee_id": employee_id})

    @property
    def _v4(self) -> bool:
        return self._settings.api_version == "v4"

    def _employee_action(self, employee_id: int, action: str) -> None:
        self._call("POST", EMPLOYEE + "/" + action, path={"employee_id": employee_id})

    # ------------------------------------------------------------ media and avatars

    def upload_image(self, name: str, content: bytes, *, digest: str, mime_type: str) -> str:
        """Upload an image (JSON, base64); its media id. Safe to resend: the platform keeps
        one file per ``file_digest``, and a repeated digest answers the same id."""
        body = {
            "file_name": name,
            "file_content": base64.b64encode(content).decode("ascii"),
            "file_digest": digest,
            "file_type": mime_type,
        }
        result = self._call("POST", MEDIA_IMAGES, body=body)
        if isinstance(result, dict):  # an id in a record, as some versions may answer
            result = result.get("id") or result.get("media_id")
        if not isinstance(result, str) or not result:
            raise _malformed(f"POST {MEDIA_IMAGES}", "expected the media id")
        return result

    def set_avatar(self, user_id: str, media_id: str) -> None:
        """Set a user's avatar to an uploaded image (by the user's id, not the employee's)."""
        self._call("POST", AVATAR, path={"user_id": user_id}, body={"avatar": media_id})

    # ------------------------------------------------------------ users and messages

    def users(
        self, *, refresh_time: int | None = None, page_size: int = 100
    ) -> Iterator[dict[str, Any]]:
        """Every user record, page by page; with ``refresh_time``, those refreshed after it."""
        params: dict[str, Any] = {}
        if refresh_time is not None:
            params["refresh_time"] = refresh_time
        for record in self._pages(USERS, "users", params, page_size):
            yield _dict(record)

    def send_text(self, usernames: Sequence[str], content: str) -> dict[str, Any]:
        """Push a text message to these users; never sent twice (see the module docstring)."""
        body = {
            "type": "TEXT",
            "body": {"content": content, "dest_type": "P2P"},
            "client_ids": list(usernames),
        }
        return _dict(self._call("POST", MBOX, body=body, repeatable=False))

    # ------------------------------------------------------------ the one request path

    def _pages(
        self, template: str, key: str, params: dict[str, Any], page_size: int
    ) -> Iterator[Any]:
        """Records of every page, until total_count is reached (or an empty page).

        A page shorter than asked ends the list only when the answer gives no total: a
        platform that caps its pages below ``page_size`` is read on, never taken for done.
        """
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        skip = 0
        while True:
            result = self._call(
                "GET", template, params={**params, "skip": skip, "limit": page_size}
            )
            records = result.get(key) if isinstance(result, dict) else None
            if not isinstance(records, list):
                raise _malformed(f"GET {template}", f"expected {{total_count, {key}: [...]}}")
            yield from records
            skip += len(records)
            total = result.get("total_count")
            if isinstance(total, int) and not isinstance(total, bool):
                if skip >= total or not records:
                    return
            elif len(records) < page_size:
                return

    def _call(
        self,
        method: str,
        template: str,
        *,
        path: Mapping[str, object] | None = None,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        repeatable: bool = True,
    ) -> Any:
        """Send with the shared token; on 10011 renew it once and send once more."""
        url = _fill(template, {"org_code": self._settings.org_code, **(path or {})})

        def send(token: str) -> Any:
            return self._send(
                method, template, url, token=token, params=params, body=body, repeatable=repeatable
            )

        token = self._tokens.current()
        try:
            return send(token)
        except PlatformError as exc:
            if exc.status != TOKEN_NOT_FOUND:
                raise
        log.info("the platform refused the access token (10011); renewing it")
        try:
            return send(self._tokens.replace(token))
        except PlatformError as exc:
            if exc.status != TOKEN_NOT_FOUND:
                raise
            raise TokenError(
                TOKEN_NOT_FOUND,
                f"the platform refused a just-renewed token for application "
                f"{self._settings.client_id!r} at {self._settings.base_url}: is another program "
                "using the same application? (each new token invalidates the previous one)",
                exc.endpoint,
            ) from None

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

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            left = math.inf if deadline is None else deadline - (time.monotonic() - started)
            return self._attempt(
                method, url, label, endpoint, query, body, self._timeout_within(left)
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
            raise PlatformUnavailable(redact(f"platform {self._host}: {endpoint}: {exc}")) from None
        raise PlatformUnavailable(self._gave_up(endpoint, failure, attempts, repeatable))

    def _timeout_within(self, left: float) -> httpx.Timeout:
        """The configured timeouts, none longer than the ``left`` seconds before a deadline.

        The deadline (the token fetch's) only stops new attempts; an attempt started just
        before it must not then wait out the full timeouts. Even if connecting and reading
        each take all that is left, the attempt ends within twice the deadline, which is
        how TOKEN_RETRY_DEADLINE is chosen against the database's busy timeout.
        """
        left = max(left, MIN_ATTEMPT_TIMEOUT)
        settings = self._settings
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
        body: Any,
        timeout: httpx.Timeout,
    ) -> Any:
        with self._stats_lock:
            self._calls[label] += 1
        try:
            response = self._http.request(method, url, params=query, json=body, timeout=timeout)
        except httpx.RequestError as exc:
            failure = classify(exc)
        else:
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
            self._settings.retry_attempts,
            wait,
        )
        if self._on_retry is not None:
            self._on_retry(label, kind)

    def _gave_up(self, endpoint: str, failure: Transient, attempts: int, repeatable: bool) -> str:
        if self._policy.asked_too_long(failure) and (repeatable or failure.unsent):
            why = (
                f"the platform asked to wait {failure.retry_after:g} s before trying again, "
                f"longer than platform.retry_after_max ({self._settings.retry_after_max:g} s)"
            )
        elif repeatable or failure.unsent:
            why = f"gave up after {attempts} attempt{'s' if attempts != 1 else ''}"
        else:
            why = "not retried: the platform may have acted on it"
        return redact(f"platform {self._host} unavailable: {endpoint}: {failure.reason} ({why})")


# ---------------------------------------------------------------- helpers


def _http_client(settings: PlatformSettings, transport: httpx.BaseTransport | None) -> httpx.Client:
    timeout = httpx.Timeout(settings.timeout, connect=settings.connect_timeout)
    headers = {"Accept": "application/json", "User-Agent": "syncd"}
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


def _fill(template: str, values: Mapping[str, object]) -> str:
    return template.format(**{k: quote(str(v), safe="") for k, v in values.items()})


def _malformed(endpoint: str, what: str) -> PlatformUnavailable:
    return PlatformUnavailable(f"{endpoint}: the platform's answer was not understood: {what}")


def _model(model: type[_M], data: Any, endpoint: str) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        # Only where and what, never the input values.
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "(record)"
        raise _malformed(endpoint, f"{model.__name__} {where}: {first['msg']}") from None


def _dict(result: Any) -> dict[str, Any]:
    return result if isinstance(result, dict) else {}


def _import_result(result: Any, endpoint: str) -> ImportResult:
    if not isinstance(result, dict):
        raise _malformed(endpoint, "expected {successes, failures}")
    successes = result.get("successes") or {}
    failures = result.get("failures") or {}
    if not isinstance(successes, dict) or not isinstance(failures, dict):
        raise _malformed(endpoint, "successes and failures must be maps")
    try:
        ids = {str(key): int(value) for key, value in successes.items()}
    except (TypeError, ValueError):
        raise _malformed(endpoint, "a success without a numeric id") from None
    return ImportResult(ids, {str(key): str(value) for key, value in failures.items()})


def _cached_token(result: Any, endpoint: str) -> CachedToken:
    data = _dict(result)
    access_token, expire_time = data.get("access_token"), data.get("expire_time")
    issued_time = data.get("issued_time")
    if not isinstance(access_token, str) or not access_token:
        raise _malformed(endpoint, "no access_token")
    if isinstance(expire_time, bool) or not isinstance(expire_time, int):
        raise _malformed(endpoint, "no numeric expire_time")
    if isinstance(issued_time, bool) or not isinstance(issued_time, int):
        issued_time = None
    return CachedToken(access_token, expire_time, issued_time)
