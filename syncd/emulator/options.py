"""How an emulator is set up: the organization, the application, the API version, faults."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from syncd.emulator.faults import FaultSettings


@dataclass(frozen=True)
class EmulatorOptions:
    """Settings of one emulator instance.

    ``port`` 0 picks a free port. Token requests may name the organization by the root
    node's id (as a string), by ``org_code``, or by ``org_id`` when it is set here.
    ``api_version`` "v3" makes ``/disable`` and ``/enable`` unknown endpoints, as on V3.
    """

    host: str = "127.0.0.1"
    port: int = 0
    org_code: str = "acme"
    org_name: str = "Acme"
    domain_id: str = "acme"
    client_id: str = "syncd"
    client_secret: str = "demo-secret"  # noqa: S105 (the documented demo secret)
    org_id: str | None = None
    token_lifetime_seconds: int = 7200
    api_version: Literal["v3", "v4"] = "v4"
    state_file: Path | None = None
    faults: FaultSettings = field(default_factory=FaultSettings)
    log_level: str = "warning"

    def token_request(self) -> dict[str, str]:
        """A valid body for POST /v1/token: this emulator's own application."""
        return {
            "grant_type": "client_credentials",
            "scope": "app",
            "domain_id": self.domain_id,
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "org_id": self.org_code,
        }
