"""Notifications about runs beyond the platform's own messages: e-mail and a webhook."""

# Pydantic copies a list or dict default for each instance; ruff sees that only through a
# base class in the same file, and Section is in section.py.
# ruff: noqa: RUF012

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from syncd.config.platform import PlatformSettings
from syncd.config.section import PositiveFloat, Section, _is_loopback, _one_of

NotifyWhen = Literal["failure", "block", "every_run"]


class EmailNotification(Section):
    """E-mail about runs through an SMTP server; off while ``to`` is empty."""

    to: list[str] = []
    sender: str | None = None  # the From address; required when on
    host: str | None = None  # required when on
    port: Annotated[int, Field(gt=0, lt=65536)] = 587
    security: Literal["starttls", "tls", "none"] = "starttls"  # tls: implicit TLS (port 465)
    verify_tls: bool = True
    ca_file: Path | None = None
    username: str | None = None
    password: SecretStr | None = None
    password_file: Path | None = None
    when: list[NotifyWhen] = ["failure", "block"]
    timeout: PositiveFloat = 30.0

    @property
    def enabled(self) -> bool:
        return bool(self.to)

    @model_validator(mode="after")
    def _complete_when_on(self) -> EmailNotification:
        _one_of(self.password, self.password_file, "notifications.email.password")
        if self.enabled and (not self.host or not self.sender):
            raise ValueError("notifications.email needs host and sender when 'to' is set")
        for address in [*self.to, *([self.sender] if self.sender else [])]:
            if "@" not in address or any(c.isspace() or c in "<>," for c in address):
                raise ValueError(f"not an e-mail address: {address!r}")
        logs_in = self.username is not None or self.password is not None
        logs_in = logs_in or self.password_file is not None
        if logs_in and self.security == "none" and not _is_loopback(self.host or ""):
            raise ValueError(
                "security 'none' would send the SMTP password unencrypted: use starttls or tls"
            )
        return self


class WebhookNotification(Section):
    """A JSON POST about runs; off while ``url`` is unset. ``secret`` signs each body."""

    url: str | None = None
    secret: SecretStr | None = None
    secret_file: Path | None = None
    when: list[NotifyWhen] = ["failure", "block"]
    verify_tls: bool = True
    ca_file: Path | None = None
    timeout: PositiveFloat = 10.0

    @property
    def enabled(self) -> bool:
        return bool(self.url)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return PlatformSettings._http_url_with_host(value)  # the same rule as base_url

    @model_validator(mode="after")
    def _one_secret_source(self) -> WebhookNotification:
        _one_of(self.secret, self.secret_file, "notifications.webhook.secret")
        return self


class NotificationSettings(Section):
    """Beyond the platform's own messages (``reports.notify_usernames``): e-mail, a webhook."""

    email: EmailNotification = EmailNotification()
    webhook: WebhookNotification = WebhookNotification()
