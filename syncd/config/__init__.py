"""Settings: one TOML file, overridden by ``SYNCD_*`` environment variables, secrets from files.

Precedence, highest first: environment (``SYNCD_PLATFORM__BATCH_SIZE=500``; nested keys
joined by ``__``), the TOML file (``--config`` or ``SYNCD_CONFIG``), defaults. A secret
(``platform.client_secret``, ``source.ldap.bind_password``,
``notifications.email.password``, ``notifications.webhook.secret``) may also come from the
file named by its ``*_file`` key, or from systemd's ``$CREDENTIALS_DIRECTORY/<name>``
(``client_secret``, ``bind_password``, ``smtp_password``, ``webhook_secret``), but from one
place only. Unknown keys are errors, not silently ignored, and so are ``SYNCD_*`` variables
that name no setting: a typo in a safety setting must not fall back to a default.

The package's rooms: the sections (``source``, ``platform``, ``sync``, ``service``:
schedule, reports, status and metrics; ``notifications``), ``settings`` (all of them),
``loading`` (the file, the environment, the problems found) and ``secrets``.
"""

from __future__ import annotations

from syncd.config.loading import (
    CONFIG_ENV,
    ENV_NESTING,
    ENV_PREFIX,
    NOT_SETTINGS_ENV,
    NoSettingsGiven,
    config_path,
    load_settings,
    log_format_hint,
    salvaged_settings,
)
from syncd.config.notifications import (
    EmailNotification,
    NotificationSettings,
    NotifyWhen,
    WebhookNotification,
)
from syncd.config.platform import PlatformSettings
from syncd.config.section import PositiveFloat, PositiveInt, Section
from syncd.config.service import MetricsSettings, ReportSettings, ScheduleSettings, StatusSettings
from syncd.config.settings import DEFAULT_STATE_DIR, Settings, platform_of, source_of
from syncd.config.source import (
    LDAP_SCHEMES,
    CsvDepartmentColumns,
    CsvEmployeeColumns,
    CsvSource,
    LdapSource,
    PhotoSettings,
    SourceSettings,
)
from syncd.config.sync import Exclusions, SyncSettings

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_STATE_DIR",
    "ENV_NESTING",
    "ENV_PREFIX",
    "LDAP_SCHEMES",
    "NOT_SETTINGS_ENV",
    "CsvDepartmentColumns",
    "CsvEmployeeColumns",
    "CsvSource",
    "EmailNotification",
    "Exclusions",
    "LdapSource",
    "MetricsSettings",
    "NoSettingsGiven",
    "NotificationSettings",
    "NotifyWhen",
    "PhotoSettings",
    "PlatformSettings",
    "PositiveFloat",
    "PositiveInt",
    "ReportSettings",
    "ScheduleSettings",
    "Section",
    "Settings",
    "SourceSettings",
    "StatusSettings",
    "SyncSettings",
    "WebhookNotification",
    "config_path",
    "load_settings",
    "log_format_hint",
    "platform_of",
    "salvaged_settings",
    "source_of",
]
