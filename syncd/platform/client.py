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

The client's rooms: ``_requests`` (the one request path every call takes: the HTTP seam),
``_answers`` (the platform's answers read into values), and the endpoints, each a part
holding that one ``Requests``: ``_organizations``, ``_employees``, ``_users`` (users and
messages), ``_media`` (images and avatars). ``PlatformClient`` composes them and is the
one thing callers hold.
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Self

import httpx

from syncd.config import PlatformSettings
from syncd.errors import ConfigError
from syncd.logs import install_redaction, register_secret
from syncd.platform._employees import Employees
from syncd.platform._media import Media
from syncd.platform._organizations import Organizations
from syncd.platform._requests import Requests
from syncd.platform._tokens import TokenStoreLike, app_key
from syncd.platform._users import Users
from syncd.platform.schemas import EmployeeRecord, ImportResult, Node

log = logging.getLogger("syncd.platform")

__all__ = ["PlatformClient", "app_key"]

_insecure_warned = False
_insecure_lock = threading.Lock()


class PlatformClient:
    """The platform's admin API over one thread-safe HTTP client and one shared token.

    ``tokens`` is where the application's token is shared (the state store's
    ``TokenStore`` for every process on the host). ``on_retry(endpoint, reason)`` is called
    once per retry, from the calling thread, with the ``"METHOD /path-template"`` and a
    short reason (``http_500``, ``http_429``, ``status_115``, ``timeout``, ``connect``,
    ``dropped``). ``transport`` replaces the network, for tests only.

    The endpoints live in four parts over one ``Requests``; each method here hands its
    call to the part that owns it.
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
        self._requests = Requests(settings, _http_client(settings, transport), tokens, on_retry)
        self._organizations = Organizations(self._requests)
        self._employees = Employees(self._requests)
        self._users = Users(self._requests)
        self._media = Media(self._requests)

    # ------------------------------------------------------------ lifecycle and counters

    def close(self) -> None:
        self._requests.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def guarded(self, may_write: Callable[[], bool] | None) -> Iterator[None]:
        """Within the block, every attempt of every request that is not a GET (a write, a
        token fetch; each retry again) first asks ``may_write``: False raises
        errors.Fenced and the request is not sent (a run's lease, leadership.Turn)."""
        self._requests.guard = may_write
        try:
            yield
        finally:
            self._requests.guard = None

    def __repr__(self) -> str:
        settings = self._settings
        return f"PlatformClient({settings.base_url!r}, client_id={settings.client_id!r})"

    @property
    def retries(self) -> int:
        """Retries made so far, over all calls and threads."""
        return self._requests.retries

    @property
    def calls(self) -> Counter[str]:
        """HTTP requests sent so far (retries included), by ``"METHOD /path-template"``."""
        return self._requests.calls

    def token(self) -> str:
        """The shared access token, fetched or renewed through the store when absent or expired."""
        return self._requests.token()

    def platform_time(self) -> int | None:
        """The platform's clock, in ms, as its latest answer to this thread gave it (the
        HTTP ``Date`` header: whole seconds); None without one, or one that is no date."""
        return self._requests.platform_time()

    # ------------------------------------------------------------ organizations

    def root(self) -> Node:
        """The root organization (CORP), with its direct children and employees."""
        return self._organizations.root()

    def page_orgs(
        self, *, refresh_time: int | None = None, page_size: int = 1000
    ) -> Iterator[Node]:
        """Every node, page by page; with ``refresh_time``, those changed after it."""
        return self._organizations.page_orgs(refresh_time=refresh_time, page_size=page_size)

    def node(self, node_id: int) -> Node:
        return self._organizations.node(node_id)

    def node_by_serial(self, serial_no: str) -> Node | None:
        """The node holding this third-party serial number, or None when there is none."""
        return self._organizations.node_by_serial(serial_no)

    def create_node(self, body: Mapping[str, Any], *, in_path: bool = True) -> Node | None:
        """Create one node; the platform's answer is a node on some versions, empty on others."""
        return self._organizations.create_node(body, in_path=in_path)

    def update_node(self, node_id: int, body: Mapping[str, Any]) -> None:
        """Rename, re-parent (``new_parentId``) or re-sort one node."""
        self._organizations.update_node(node_id, body)

    def delete_node(self, node_id: int) -> None:
        """Delete an empty node; 208507 (still has employees) and 208502 (gone) propagate."""
        self._organizations.delete_node(node_id)

    def import_orgs(self, bodies: Sequence[Mapping[str, Any]]) -> ImportResult:
        """Create nodes in bulk, parents first; per-item failures come back, never raise."""
        return self._organizations.import_orgs(bodies)

    # ------------------------------------------------------------ employees

    def employees_by_username(
        self, usernames: Sequence[str], *, batch: int = 100
    ) -> list[EmployeeRecord]:
        """The employees holding these usernames (absent ones are simply missing)."""
        return self._employees.employees_by_username(usernames, batch=batch)

    def employees_by_id(self, ids: Sequence[int], *, batch: int = 100) -> list[EmployeeRecord]:
        """The employees with these ids, in the list form (absent ones are simply missing)."""
        return self._employees.employees_by_id(ids, batch=batch)

    def employee_records(
        self, usernames: Sequence[str], *, batch: int = 200
    ) -> Iterator[dict[str, Any]]:
        """The list-form records of these usernames, as the platform sends them (plain
        dicts, for reading many: no model is built), ``concurrency`` batches in flight."""
        return self._employees.employee_records(usernames, batch=batch)

    def employee_listing(self, org_id: int, *, recursion: bool) -> list[dict[str, Any]]:
        """The list-form records of a node's people (with ``recursion``, its descendants'
        too), as the platform sends them: plain dicts, for reading many."""
        return self._employees.employee_listing(org_id, recursion=recursion)

    def list_employees(
        self, *, query: str | None = None, org_id: int | None = None, recursion: bool = False
    ) -> list[EmployeeRecord]:
        """Employees by search text, or of a node (and its descendants with ``recursion``)."""
        return self._employees.list_employees(query=query, org_id=org_id, recursion=recursion)

    def employee(self, employee_id: int) -> dict[str, Any]:
        """One employee in the detail form."""
        return self._employees.employee(employee_id)

    def create_employee(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create one employee; not resent when its fate is unknown (a copy would conflict)."""
        return self._employees.create_employee(body)

    def update_employee(self, employee_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """Update one employee; the platform cannot change a ``username`` this way."""
        return self._employees.update_employee(employee_id, body)

    def import_employees(
        self, bodies: Sequence[Mapping[str, Any]], *, remove: bool = False
    ) -> ImportResult:
        """Create-or-update (or, with ``remove``, delete) employees in bulk, keyed by username."""
        return self._employees.import_employees(bodies, remove=remove)

    def depart(self, employee_id: int) -> None:
        """Mark an employee departed: lock on V3, disable on V4."""
        self._employees.depart(employee_id)

    def reinstate(self, employee_id: int) -> None:
        """Bring a departed employee back: unlock on V3, enable on V4."""
        self._employees.reinstate(employee_id)

    def lock(self, employee_id: int) -> None:
        self._employees.lock(employee_id)

    def unlock(self, employee_id: int) -> None:
        self._employees.unlock(employee_id)

    def disable(self, employee_id: int) -> None:
        """V4 only."""
        self._employees.disable(employee_id)

    def enable(self, employee_id: int) -> None:
        """V4 only."""
        self._employees.enable(employee_id)

    def delete_employee(self, employee_id: int) -> None:
        self._employees.delete_employee(employee_id)

    # ------------------------------------------------------------ users, messages, media

    def users(
        self, *, refresh_time: int | None = None, page_size: int = 100, concurrency: int = 1
    ) -> Iterator[dict[str, Any]]:
        """Every user record, page by page (``concurrency`` pages asked at a time); with
        ``refresh_time``, those refreshed after it."""
        return self._users.users(
            refresh_time=refresh_time, page_size=page_size, concurrency=concurrency
        )

    def send_text(self, usernames: Sequence[str], content: str) -> dict[str, Any]:
        """Push a text message to these users; never sent twice (see the module docstring)."""
        return self._users.send_text(usernames, content)

    def upload_image(self, name: str, content: bytes, *, digest: str, mime_type: str) -> str:
        """Upload an image (JSON, base64); its media id (safe to resend: by digest)."""
        return self._media.upload_image(name, content, digest=digest, mime_type=mime_type)

    def set_avatar(self, user_id: str, media_id: str) -> None:
        """Set a user's avatar to an uploaded image (by the user's id, not the employee's)."""
        self._media.set_avatar(user_id, media_id)


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
        ) from exc


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
