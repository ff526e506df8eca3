"""The settings as a whole: every section, and what syncd derives from them."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from syncd.config.notifications import NotificationSettings
from syncd.config.platform import PlatformSettings
from syncd.config.service import (
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


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="SYNCD_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    state_dir: Path = DEFAULT_STATE_DIR
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

    @property
    def joined(self) -> bool:
        """Whether several sources are read and joined ([[sources]])."""
        return bool(self.sources)

    @property
    def database(self) -> Path:
        return self.state_dir / "syncd.db"

    def secret_values(self) -> list[str]:
        """Every secret in these settings, for log and report redaction."""
        secrets = [self.platform.client_secret if self.platform is not None else None]
        for source in [self.source, *self.sources]:
            if source is not None and source.ldap is not None:
                secrets.append(source.ldap.bind_password)
        secrets += [self.notifications.email.password, self.notifications.webhook.secret]
        return [s.get_secret_value() for s in secrets if s is not None and s.get_secret_value()]


def platform_of(settings: Settings) -> PlatformSettings:
    """The platform's section, for what talks to the platform (load_settings requires it)."""
    if settings.platform is None:
        raise ConfigError("key platform: required key is missing")
    return settings.platform
