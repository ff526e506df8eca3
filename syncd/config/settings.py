"""The settings as a whole: every section, and what syncd derives from them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from syncd.config.notifications import NotificationSettings
from syncd.config.platform import PlatformSettings
from syncd.config.section import blank_path
from syncd.config.service import (
    LeadershipSettings,
    MetricsSettings,
    ReportSettings,
    ScheduleSettings,
    StatusSettings,
)
from syncd.config.source import SourceSettings
from syncd.config.sources import JoinSettings, NamedSource, check_sources
from syncd.config.sync import SyncSettings
from syncd.errors import ConfigError

DEFAULT_STATE_DIR = Path("/var/lib/syncd")
DATABASE_SCHEMES = ("postgresql", "postgresql+psycopg")
# What may stand before "://" (RFC 3986): never a user name or password, so it may be shown.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,39}")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="SYNCD_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    state_dir: Path = DEFAULT_STATE_DIR
    # The state database on a PostgreSQL server (postgresql://user:password@host:port/name);
    # unset: SQLite, syncd.db in state_dir. Its password is a secret: never shown.
    database_url: SecretStr | None = None
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = "text"
    # One source ([source]) or several, joined ([[sources]] and [join]): one of the two.
    source: SourceSettings | None = None
    sources: list[NamedSource] = []
    join: JoinSettings | None = None
    # Required, but None when loaded for a command that never talks to the platform
    # (syncd check): see load_settings; what talks to it takes platform_of(settings).
    platform: PlatformSettings | None
    sync: SyncSettings = SyncSettings()
    schedule: ScheduleSettings = ScheduleSettings()
    reports: ReportSettings = ReportSettings()
    status: StatusSettings = StatusSettings()
    notifications: NotificationSettings = NotificationSettings()
    metrics: MetricsSettings = MetricsSettings()
    leadership: LeadershipSettings = LeadershipSettings()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # init carries the TOML file's content: the environment overrides it.
        return env_settings, init_settings

    @field_validator("*", mode="before")
    @classmethod
    def _path_not_blank(cls, value: Any, info: ValidationInfo) -> Any:
        """A top-level path (state_dir): "" would put the state in whatever folder syncd
        runs in. The sections' own paths: Section."""
        field = cls.model_fields.get(info.field_name or "")
        blank_path(value, field.annotation if field is not None else None)
        return value

    @field_validator("database_url")
    @classmethod
    def _postgresql_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        scheme, sep, _ = value.get_secret_value().strip().partition("://")
        if scheme not in DATABASE_SCHEMES:
            # Only a scheme is shown: what stands before "://" in a URL without one may be
            # its user name and password (syncd:s3cret@db.example.com/syncd).
            shown = sep and _SCHEME.fullmatch(scheme)
            given = f", not {scheme!r}://..." if shown else ": it does not start with postgresql://"
            raise ValueError(
                "a PostgreSQL URL is expected (postgresql://user@host:port/database)"
                f"{given}; leave it unset for SQLite in state_dir"
            )
        return SecretStr(value.get_secret_value().strip())

    @model_validator(mode="after")
    def _one_source_or_several(self) -> Settings:
        if self.source is not None and self.sources:
            raise ValueError(
                "both [source] and [[sources]] are given: one source is [source], several "
                "are [[sources]] entries (each with a name) and [join]"
            )
        if self.source is None and not self.sources:
            raise ValueError("key source: required key is missing ([source] or [[sources]])")
        if self.sources:
            check_sources(self.sources, self.join or JoinSettings())
        elif self.join is not None:
            raise ValueError("[join] joins several sources: give them as [[sources]] entries")
        return self

    @model_validator(mode="after")
    def _lease_outlasts_a_request(self) -> Settings:
        """A write leaves only while the lease is surely this instance's for one more
        request (leadership.Lease's deadline): settings where one request may take longer
        than a renewal leaves would fence every run, and are refused."""
        if self.platform is None:
            return self
        room = self.leadership.request_room()
        if self.platform.request_seconds >= room:
            raise ValueError(
                f"keys platform.connect_timeout ({self.platform.connect_timeout:g} s) and "
                f"platform.timeout ({self.platform.timeout:g} s) with "
                f"leadership.lease_seconds ({self.leadership.lease_seconds} s): one request "
                f"may take {self.platform.request_seconds:g} s, and must be answered before "
                "the lease could pass to another instance, with room for a renewal (under "
                f"{room:g} s: two thirds of the lease less twice "
                f"{self.leadership.drift_seconds:g} s of drift); lower the timeouts or raise "
                "leadership.lease_seconds"
            )
        return self

    @property
    def joined(self) -> bool:
        """Whether several sources are read and joined ([[sources]])."""
        return bool(self.sources)

    @property
    def database(self) -> Path:
        return self.state_dir / "syncd.db"

    @property
    def database_place(self) -> str:
        """The state database as messages name it: the SQLite file, or the PostgreSQL
        database and its server (never the URL's password)."""
        if self.database_url is None:
            return str(self.database)
        parts = urlsplit(self.database_url.get_secret_value())
        try:
            port = parts.port or 5432
        except ValueError:
            port = 5432
        name = parts.path.lstrip("/") or "?"
        return f"{name} on {parts.hostname or 'the local socket'}:{port} (PostgreSQL)"

    def secret_values(self) -> list[str]:
        """Every secret in these settings, for log and report redaction."""
        secrets = [self.platform.client_secret if self.platform is not None else None]
        for source in [self.source, *self.sources]:
            if source is not None and source.ldap is not None:
                secrets.append(source.ldap.bind_password)
        secrets += [self.notifications.email.password, self.notifications.webhook.secret]
        found = [s.get_secret_value() for s in secrets if s is not None and s.get_secret_value()]
        if self.database_url is not None:  # the URL's password, and the URL that holds it
            url = self.database_url.get_secret_value()
            password = unquote(urlsplit(url).password or "")
            found += [value for value in (password, url) if value]
        return found


def source_of(settings: Settings) -> SourceSettings:
    """The one source's section ([source]), for what reads a single source; several
    ([[sources]]) are read through syncd.sources.read_source."""
    if settings.source is None:
        raise ConfigError("several sources ([[sources]]): this reads one source ([source])")
    return settings.source


def platform_of(settings: Settings) -> PlatformSettings:
    """The platform's section, for what talks to the platform (load_settings requires it)."""
    if settings.platform is None:
        raise ConfigError("key platform: required key is missing")
    return settings.platform
