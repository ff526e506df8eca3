"""Helpers for the platform client tests: settings, request counts, body builders."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import SecretStr

from syncd.config import PlatformSettings
from syncd.emulator import RunningEmulator
from syncd.platform import PlatformClient

Connect = Callable[..., PlatformClient]


def settings_for(emulator: RunningEmulator, **overrides: Any) -> PlatformSettings:
    """Settings naming the emulator's application, with waits short enough for tests."""
    options = emulator.options
    values: dict[str, Any] = {
        "base_url": emulator.base_url,
        "domain_id": options.domain_id,
        "org_code": options.org_code,
        "client_id": options.client_id,
        "client_secret": SecretStr(options.client_secret),
        "org_id": options.org_code,
        "timeout": 5.0,
        "connect_timeout": 2.0,
        "retry_attempts": 4,
        "retry_backoff": 0.001,
        "retry_backoff_max": 0.004,
    }
    values.update(overrides)
    return PlatformSettings(**values)


def requests_seen(emulator: RunningEmulator, method: str, template: str) -> int:
    """How many requests the emulator received for one of its route templates."""
    seen: dict[str, int] = emulator.stats()["requests"]
    return seen.get(f"{method} {template}", 0)


ORG_ROUTE = "/v1/admin/organizations/{org_code}"
NODE_ROUTE = "/v1/admin/organizations/{org_code}/{node_id}"
IMPORT_EMPLOYEES_ROUTE = "/v1/admin/organizations/{code}/import-employees"
EMPLOYEES_ROUTE = "/v1/admin/organizations/{code}/employees"
TOKEN_ROUTE = "/v1/token"
MBOX_ROUTE = "/app/mbox"
