"""The platform: its API, the application's credentials, and how syncd calls it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from syncd.config.section import PositiveFloat, Section, _is_loopback, _one_of


class PlatformSettings(Section):
    base_url: str
    domain_id: str
    org_code: str
    client_id: str
    client_secret: SecretStr | None = None
    client_secret_file: Path | None = None
    org_id: str | None = None  # an organization application...
    owner_id: str | None = None  # ...or a domain application (the domain id)
    api_version: Literal["v3", "v4"] = "v3"  # v4: departures use disable/enable
    verify_tls: bool = True
    ca_file: Path | None = None
    timeout: PositiveFloat = 30.0
    connect_timeout: PositiveFloat = 10.0
    retry_attempts: Annotated[int, Field(ge=1, le=20)] = 5
    retry_backoff: PositiveFloat = 0.5  # first wait, doubled each attempt, with jitter
    retry_backoff_max: PositiveFloat = 30.0
    # A Retry-After up to this is waited out in full; a longer one ends the call.
    retry_after_max: PositiveFloat = 300.0
    batch_size: Annotated[int, Field(gt=0, le=1000)] = 200
    concurrency: Annotated[int, Field(gt=0, le=32)] = 4

    @field_validator("base_url")
    @classmethod
    def _http_url_with_host(cls, value: str) -> str:
        try:
            parts = urlsplit(value.strip())
            usable = parts.scheme in ("http", "https") and bool(parts.hostname)
            parts.port  # noqa: B018 - raises ValueError on a port that is not a number
        except ValueError:  # "http://[::1", "http://host:port"
            usable = False
        if not usable:
            raise ValueError(
                "must be an https:// (or http://) URL with a host, "
                "e.g. https://platform.example.com"
            )
        return value.strip()

    @field_validator("base_url")
    @classmethod
    def _no_credentials(cls, value: str) -> str:
        """syncd signs in with client_id and its secret: a user name or password in the URL
        would be written wherever the URL is, and sent by httpx to the platform as well."""
        if "@" in urlsplit(value).netloc:
            raise ValueError(
                "must not hold a user name or password: syncd signs in with "
                "platform.client_id and its secret; give the URL without them, "
                "e.g. https://platform.example.com"
            )
        return value

    @model_validator(mode="after")
    def _one_owner(self) -> PlatformSettings:
        if not self.org_id and not self.owner_id:
            raise ValueError(
                "set platform.org_id (organization app) or platform.owner_id (domain app)"
            )
        return self

    @model_validator(mode="after")
    def _one_secret_source(self) -> PlatformSettings:
        _one_of(self.client_secret, self.client_secret_file, "platform.client_secret")
        return self

    @property
    def request_seconds(self) -> float:
        """How long one request may take before the platform has it all: connecting, then
        sending it (each attempt; a retry is checked against the lease again)."""
        return self.connect_timeout + self.timeout

    @property
    def sends_in_clear(self) -> bool:
        """Plain http:// to another host: the secret and tokens cross the network unencrypted."""
        parts = urlsplit(self.base_url)
        return parts.scheme == "http" and not _is_loopback(parts.hostname or "")
