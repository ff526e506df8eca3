"""Settings: one TOML file, overridden by ``SYNCD_*`` environment variables, secrets from files.

Precedence, highest first: environment (``SYNCD_PLATFORM__BATCH_SIZE=500``; nested keys
joined by ``__``), the TOML file (``--config`` or ``SYNCD_CONFIG``), defaults. A secret
(``platform.client_secret``, ``source.ldap.bind_password``,
``notifications.email.password``, ``notifications.webhook.secret``) may also come from the
file named by its ``*_file`` key, or from systemd's ``$CREDENTIALS_DIRECTORY/<name>``
(``client_secret``, ``bind_password``, ``smtp_password``, ``webhook_secret``), but from one
place only. Unknown keys are errors, not silently ignored, and so are ``SYNCD_*`` variables
that name no setting: a typo in a safety setting must not fall back to a default.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import logging
import os
import stat
import tomllib
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from syncd.errors import ConfigError
from syncd.mapping import SourceMapping
from syncd.model import MatchKey

log = logging.getLogger(__name__)

CONFIG_ENV = "SYNCD_CONFIG"
ENV_PREFIX = "SYNCD_"
ENV_NESTING = "__"
# SYNCD_* variables read by syncd that are not settings keys.
NOT_SETTINGS_ENV = frozenset({CONFIG_ENV, "SYNCD_EMULATOR_SECRET"})
DEFAULT_STATE_DIR = Path("/var/lib/syncd")
LDAP_SCHEMES = ("ldap", "ldaps", "ldapi")

PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ---------------------------------------------------------------- sources


class CsvEmployeeColumns(Section):
    """Header names of the employee file, by model field. Any header text works (Chinese too)."""

    id: str = "id"
    username: str = "username"
    name: str = "name"
    department: str = "department"  # an id (layout two_files) or a path (layout paths)
    positions: str | None = "positions"  # secondary departments, joined by positions_separator
    en_name: str | None = "en_name"
    email: str | None = "email"
    mobile: str | None = "mobile"
    tel: str | None = "tel"
    sn: str | None = "sn"
    gender: str | None = "gender"
    birthday: str | None = "birthday"
    job_title: str | None = "job_title"
    sort_order: str | None = "sort_order"
    senior: str | None = "senior"
    status: str | None = "status"


class CsvDepartmentColumns(Section):
    id: str = "id"
    name: str = "name"
    parent_id: str = "parent_id"
    sort_order: str | None = "sort_order"
    sn: str | None = "sn"
    en_name: str | None = "en_name"


class CsvSource(Section):
    layout: Literal["two_files", "paths"] = "two_files"
    employees: Path
    departments: Path | None = None  # required by layout two_files
    encoding: str = "auto"  # auto: UTF-8 (with or without BOM), else GB18030
    delimiter: str = "auto"  # auto: sniffed among , ; tab |
    path_separator: str = "/"  # layout paths: "Head Office/R&D/Backend"
    positions_separator: str = ";"
    departed_values: list[str] = ["离职", "inactive", "departed", "disabled"]
    columns: CsvEmployeeColumns = CsvEmployeeColumns()
    department_columns: CsvDepartmentColumns = CsvDepartmentColumns()
    extra_columns: dict[str, str] = {}  # header -> extra attribute name

    @model_validator(mode="after")
    def _departments_file_for_two_files(self) -> CsvSource:
        if self.layout == "two_files" and self.departments is None:
            raise ValueError(
                "layout 'two_files' needs source.csv.departments (the departments file)"
            )
        return self


class LdapSource(Section):
    urls: list[str] = Field(min_length=1)  # several for failover: ldaps://dc1, ldaps://dc2
    flavor: Literal["openldap", "active_directory"] = "openldap"
    start_tls: bool = False  # for ldap:// URLs
    verify_tls: bool = True
    ca_file: Path | None = None
    # The name the server's certificate must carry, when the URLs name it otherwise (an
    # IP address, an alias): verification stays on, against this name.
    tls_server_name: str | None = None
    bind_dn: str | None = None
    bind_password: SecretStr | None = None
    bind_password_file: Path | None = None
    users_base: str
    users_filter: str | None = None  # default per flavor
    departments_from: Literal["ou_tree", "attribute"] = "ou_tree"
    departments_base: str | None = None  # default: users_base
    department_name_attribute: str = "ou"  # or "description"
    department_attribute: str | None = None  # departments_from = attribute: holds a path
    department_path_separator: str = "/"
    departed_filter: str | None = None  # OpenLDAP: e.g. "(pwdAccountLockedTime=*)"
    page_size: Annotated[int, Field(gt=0, le=1000)] = 500
    connect_timeout: PositiveFloat = 10.0
    read_timeout: PositiveFloat = 60.0
    attributes: dict[str, str] = {}  # model field -> LDAP attribute, over the flavor's preset
    extra_attributes: dict[str, str] = {}  # LDAP attribute -> extra attribute name
    # Active Directory: continuation references to other domains of the forest are read
    # through this Global Catalog (ldaps://gc.corp.example:3269); unset, each is a warning.
    global_catalog: str | None = None

    @field_validator("global_catalog")
    @classmethod
    def _ldap_url(cls, value: str | None) -> str | None:
        if value is not None and urlsplit(value).scheme.lower() not in ("ldap", "ldaps"):
            raise ValueError(
                "must be an ldaps:// (or ldap://) URL, e.g. ldaps://gc.corp.example:3269"
            )
        return value

    @field_validator("urls")
    @classmethod
    def _ldap_urls(cls, urls: list[str]) -> list[str]:
        for url in urls:
            scheme = urlsplit(url.strip()).scheme.lower()
            if scheme not in LDAP_SCHEMES:
                raise ValueError(
                    f"{url!r} is not an LDAP URL: use ldaps://host (or ldap://host with "
                    "start_tls = true)"
                )
        return [url.strip() for url in urls]

    @model_validator(mode="after")
    def _one_password_source(self) -> LdapSource:
        _one_of(self.bind_password, self.bind_password_file, "source.ldap.bind_password")
        return self


class PhotoSettings(Section):
    """People's photos, set as their avatars on the platform: off unless ``enabled``."""

    enabled: bool = False
    # CSV: a folder of image files, each named by a field's value and any extension
    # (photos/10023.jpg for work number 10023); required for a CSV source.
    folder: Path | None = None
    named_by: Literal["sn", "id", "username"] = "sn"
    # LDAP: the attribute holding the photo; default jpegPhoto, AD's thumbnailPhoto.
    attribute: str | None = None
    max_bytes: Annotated[int, Field(gt=0, le=20 * 1024 * 1024)] = 1024 * 1024
    types: Annotated[list[Literal["jpeg", "png"]], Field(min_length=1)] = ["jpeg", "png"]


class SourceSettings(Section):
    kind: Literal["csv", "ldap"]
    csv: CsvSource | None = None
    ldap: LdapSource | None = None
    mapping: SourceMapping = SourceMapping()  # rules: templates, transforms, a row filter
    photos: PhotoSettings = PhotoSettings()

    @model_validator(mode="after")
    def _section_for_kind(self) -> SourceSettings:
        if getattr(self, self.kind) is None:
            raise ValueError(
                f"source.kind is {self.kind!r} but there is no [source.{self.kind}] section"
            )
        return self

    @model_validator(mode="after")
    def _photo_folder_for_csv(self) -> SourceSettings:
        if self.kind == "csv" and self.photos.enabled and self.photos.folder is None:
            raise ValueError(
                "source.photos is enabled for a CSV source but source.photos.folder is not set "
                '(the folder of image files, e.g. folder = "photos")'
            )
        return self


# ---------------------------------------------------------------- platform


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
    def sends_in_clear(self) -> bool:
        """Plain http:// to another host: the secret and tokens cross the network unencrypted."""
        parts = urlsplit(self.base_url)
        return parts.scheme == "http" and not _is_loopback(parts.hostname or "")


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _one_of(value: SecretStr | None, path: Path | None, key: str) -> None:
    # Both given would leave one silently unused: the operator may rotate the wrong one.
    if value is not None and path is not None:
        raise ValueError(f"give one of {key} and {key}_file, not both")


# ---------------------------------------------------------------- sync


class Exclusions(Section):
    """Records syncd never touches, matched as exact values or shell patterns (``svc-*``)."""

    usernames: list[str] = []
    departments: list[str] = []  # source ids or name paths below the root


class SyncSettings(Section):
    leaver_policy: Literal["lock", "remove", "lock_then_remove"] = "lock_then_remove"
    remove_after_days: Annotated[int, Field(ge=0)] = 30
    max_removals: Annotated[int, Field(ge=0)] = 50
    max_removal_ratio: Annotated[float, Field(ge=0, le=1)] = 0.10
    exclude: Exclusions = Exclusions()
    username_change: Literal["conflict", "remove_and_create"] = "conflict"
    extended_fields: dict[str, str] = {}  # extra attribute name -> platform field
    match_by: MatchKey = "username"  # a first run adopts platform accounts holding the same
    drift_check: bool = True


class ScheduleSettings(Section):
    """When ``syncd run`` syncs: every interval, or on a cron expression (local time).

    LDAP sources read incrementally on this schedule and fully on ``full_cron``; every
    CSV run is a full read. The first run starts with the daemon.
    """

    interval_minutes: PositiveInt = 15
    interval_seconds: PositiveInt | None = None  # replaces interval_minutes: for tests and demos
    cron: str | None = None  # replaces the interval: "*/10 7-20 * * 1-5"
    full_cron: str = "0 2 * * *"  # LDAP: the full read that finds leavers
    jitter_seconds: Annotated[int, Field(ge=0)] = 30  # each start delayed by 0..jitter
    misfire_grace_seconds: PositiveInt = 300  # a run this late still runs; later, it is skipped
    stop_timeout_seconds: PositiveInt = 60  # on stop, how long the current run may finish

    @field_validator("cron", "full_cron")
    @classmethod
    def _cron_parses(cls, value: str | None) -> str | None:
        if value is not None:
            from syncd._schedule import cron_trigger  # apscheduler loads only when a cron is given

            try:
                cron_trigger(value, timezone="UTC")
            except ValueError as exc:
                raise ValueError(f"not a cron expression: {exc}") from None
        return value

    @property
    def interval(self) -> timedelta:
        if self.interval_seconds is not None:
            return timedelta(seconds=self.interval_seconds)
        return timedelta(minutes=self.interval_minutes)


class ReportSettings(Section):
    keep_days: Annotated[int, Field(ge=1)] = 90
    # Dry runs (--dry-run, --check: a monitoring check every few minutes) go sooner.
    dry_run_keep_days: Annotated[int, Field(ge=0)] = 7
    notify_usernames: list[str] = []  # admins told of failed or blocked runs


class StatusSettings(Section):
    """When ``syncd status`` (the container's health check) calls syncd unhealthy."""

    # No run finished ok (or partial: it sent what it could) for this long; 0: not checked.
    max_success_age_minutes: Annotated[int, Field(ge=0)] = 1440


# ---------------------------------------------------------------- notifications

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


class MetricsSettings(Section):
    enabled: bool = False
    host: str = "127.0.0.1"
    port: Annotated[int, Field(gt=0, lt=65536)] = 9464
    # A node-exporter textfile (.prom) written after every real `syncd sync`: metrics for
    # the timer-based setup, which has no daemon to scrape.
    textfile: Path | None = None

    @field_validator("textfile")
    @classmethod
    def _prom_file(cls, value: Path | None) -> Path | None:
        if value is not None and value.suffix != ".prom":
            raise ValueError("must end in .prom (node-exporter reads only those)")
        return value


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
    source: SourceSettings
    platform: PlatformSettings
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

    @property
    def database(self) -> Path:
        return self.state_dir / "syncd.db"

    def secret_values(self) -> list[str]:
        """Every secret in these settings, for log and report redaction."""
        secrets = [self.platform.client_secret]
        if self.source.ldap is not None:
            secrets.append(self.source.ldap.bind_password)
        secrets += [self.notifications.email.password, self.notifications.webhook.secret]
        return [s.get_secret_value() for s in secrets if s is not None and s.get_secret_value()]


def config_path(explicit: Path | None) -> Path | None:
    if explicit is not None:
        return explicit
    from_env = os.environ.get(CONFIG_ENV)
    return Path(from_env) if from_env else None


def load_settings(
    path: Path | None = None,
    *,
    warn: Callable[[str], object] | None = None,
    require_secrets: bool = True,
    platform_secret: bool = True,
) -> Settings:
    """Read, validate and complete the settings, or raise one ConfigError naming file and key.

    ``warn`` (default: a WARNING log line) is called with a message for problems that
    do not stop syncd (a settings file readable by others that holds a secret, plain
    http:// to the platform). Commands that only read the state database (status,
    reports) pass ``require_secrets=False``: secret files are then not read at all;
    ``syncd check``, which reads the source only, passes ``platform_secret=False``.
    """
    warn = warn or log.warning
    path = config_path(path)
    data: dict[str, Any] = {}
    where = "environment"
    if path is None and not any(_names_setting(name) for name in os.environ):
        raise ConfigError(
            f"no settings given: name the settings file with --config FILE or {CONFIG_ENV}=FILE "
            "(or give every setting as a SYNCD_* environment variable)"
        )
    if path is not None:
        where = str(path)
        data = _with_paths_resolved(_read_toml(path), path.parent)
        if _holds_secret(data) and _readable_by_others(path):
            warn(f"{path} holds a secret and is readable by other users: chmod 600 it")
    _check_environment_names()
    # BaseSettings takes keyword arguments starting with "_" as its own options
    # (_env_prefix, _cli_parse_args, ...), never as settings: no settings key starts so.
    hidden = sorted(key for key in data if key.startswith("_"))
    if hidden:
        problems = "; ".join(f"key {key}: unknown key{_known_key_like((key,))}" for key in hidden)
        raise ConfigError(f"{where}: invalid settings: {problems}")
    try:
        settings = Settings(**data)
    except ValidationError as exc:
        raise ConfigError(_describe(where, exc)) from None
    except SettingsError:
        raise ConfigError(_describe_unparsable()) from None
    if settings.platform.sends_in_clear:
        warn(
            f"platform.base_url {settings.platform.base_url} is plain http:// to another "
            "host: the application secret and every access token cross the network "
            "unencrypted. Use https://."
        )
    return _with_secrets(settings, require_secrets, platform_secret)


def _names_setting(name: str) -> bool:
    """A SYNCD_* variable other than those syncd reads besides settings (case-insensitive)."""
    upper = name.upper()
    return upper.startswith(ENV_PREFIX) and upper not in NOT_SETTINGS_ENV


def _check_environment_names() -> None:
    """A SYNCD_* variable must name a settings key, else its typo would go unnoticed."""
    fields = Settings.model_fields
    for name in sorted(os.environ):
        if not _names_setting(name):
            continue
        upper = name.upper()
        first = upper.removeprefix(ENV_PREFIX).split(ENV_NESTING)[0].lower()
        if first in fields:
            continue
        raise ConfigError(
            f"environment variable {name}: names no setting{_suggestion(upper, fields)} "
            f"(SYNCD_ + the key path in capitals, sections joined by "
            f"{ENV_NESTING!r}, e.g. SYNCD_PLATFORM__BATCH_SIZE)"
        )


def _suggestion(upper: str, fields: dict[str, FieldInfo]) -> str:
    rest = upper.removeprefix(ENV_PREFIX)
    for field in fields:
        section = field.upper() + "_"
        if rest.startswith(section) and _is_section(fields[field]):
            return f": did you mean {ENV_PREFIX}{field.upper()}{ENV_NESTING}{rest[len(section) :]}?"
    first = rest.split(ENV_NESTING)[0].lower()
    close = difflib.get_close_matches(first, list(fields), n=1)
    return f": did you mean {ENV_PREFIX}{close[0].upper()}?" if close else ""


def _is_section(field: FieldInfo) -> bool:
    return _model_of(field.annotation) is not None


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The settings section a field holds (``X`` or ``X | None``), or None for a value."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def _is_complex(annotation: Any) -> bool:
    """Values pydantic-settings reads from the environment as JSON: lists, tables, sections."""
    if _model_of(annotation) is not None:
        return True
    kinds = (list, dict, set, tuple, frozenset)
    return get_origin(annotation) in kinds or any(
        get_origin(arg) in kinds for arg in get_args(annotation)
    )


def _env_field(name: str) -> FieldInfo | None:
    """The settings field a SYNCD_* variable sets, or None when it names none."""
    model: type[BaseModel] | None = Settings
    field: FieldInfo | None = None
    for part in name.upper().removeprefix(ENV_PREFIX).split(ENV_NESTING):
        if model is None:
            return None
        field = model.model_fields.get(part.lower())
        if field is None:
            return None
        model = _model_of(field.annotation)
    return field


def _describe_unparsable() -> str:
    """Name the SYNCD_* variables whose value pydantic-settings could not decode."""
    culprits = []
    for name in sorted(os.environ):
        if not _names_setting(name):
            continue
        field = _env_field(name)
        if field is None or not _is_complex(field.annotation):
            continue
        try:
            json.loads(os.environ[name])
        except ValueError:
            culprits.append(name)
    # Values are not quoted: the variable could hold a secret.
    named = ", ".join(culprits) or "a SYNCD_* variable"
    return (
        f"environment variable {named}: cannot be parsed: lists and tables in "
        "SYNCD_* variables must be JSON, e.g. SYNCD_SYNC__EXCLUDE__USERNAMES='[\"alice\"]'"
    )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: settings file not found") from None
    except PermissionError:
        raise ConfigError(f"{path}: settings file is not readable (permission denied)") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a settings file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid TOML: the file is not UTF-8") from None


_PATH_KEYS = (
    ("state_dir",),
    ("source", "csv", "employees"),
    ("source", "csv", "departments"),
    ("source", "photos", "folder"),
    ("source", "ldap", "ca_file"),
    ("source", "ldap", "bind_password_file"),
    ("platform", "ca_file"),
    ("platform", "client_secret_file"),
    ("metrics", "textfile"),
    ("notifications", "email", "ca_file"),
    ("notifications", "email", "password_file"),
    ("notifications", "webhook", "ca_file"),
    ("notifications", "webhook", "secret_file"),
)


def _with_paths_resolved(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """Relative paths in a settings file are relative to the file's own directory."""
    for keys in _PATH_KEYS:
        parent: Any = data
        for key in keys[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        value = parent.get(keys[-1]) if isinstance(parent, dict) else None
        if isinstance(value, str) and value and not Path(value).is_absolute():
            parent[keys[-1]] = str(base / value)
    for transform in _mapping_transforms(data):
        value = transform.get("lookup")
        if isinstance(value, str) and value and not Path(value).is_absolute():
            transform["lookup"] = str(base / value)
    return data


def _mapping_transforms(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The transforms written as tables in source.mapping (lookups name files)."""
    source = data.get("source")
    mapping = source.get("mapping") if isinstance(source, dict) else None
    found = []
    for section in ("fields", "extra", "properties"):
        rules = mapping.get(section) if isinstance(mapping, dict) else None
        for rule in rules.values() if isinstance(rules, dict) else ():
            transforms = rule.get("transforms") if isinstance(rule, dict) else None
            found += [t for t in transforms or () if isinstance(t, dict)]
    return found


def _describe(where: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        key = ".".join(str(part) for part in err["loc"]) or "(top level)"
        message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        if err["type"] == "extra_forbidden":
            message += _known_key_like(err["loc"])
        if err["type"] == "missing":
            message = "required key is missing"
        given = err.get("input")
        shown = (
            ""
            if err["type"] in ("missing", "extra_forbidden") or isinstance(given, dict)
            else f" (got {given!r})"
        )
        if "secret" in key or "password" in key:
            shown = ""
        env_name = ENV_PREFIX + ENV_NESTING.join(str(part) for part in err["loc"]).upper()
        given_as = [name for name in os.environ if name.upper() == env_name]
        origin = f" (from environment variable {given_as[0]})" if given_as else ""
        problems.append(f"key {key}: {message}{shown}{origin}")
    return f"{where}: invalid settings: " + "; ".join(problems)


def _known_key_like(loc: tuple[int | str, ...]) -> str:
    """ ", did you mean platform.batch_size?" for an unknown key close to a known one."""
    model: type[BaseModel] | None = Settings
    for part in loc[:-1]:
        field = model.model_fields.get(str(part)) if model is not None else None
        model = _model_of(field.annotation) if field is not None else None
    if model is None:
        return ""
    close = difflib.get_close_matches(str(loc[-1]).lower(), list(model.model_fields), n=1)
    prefix = "".join(f"{part}." for part in loc[:-1])
    return f", did you mean {prefix}{close[0]}?" if close else ""


_SECRETS = (
    # (section getter, value field, file field, systemd credential name, dotted key)
    ("platform", "client_secret", "client_secret_file", "client_secret", "platform.client_secret"),
    (
        "source.ldap",
        "bind_password",
        "bind_password_file",
        "bind_password",
        "source.ldap.bind_password",
    ),
    (
        "notifications.email",
        "password",
        "password_file",
        "smtp_password",
        "notifications.email.password",
    ),
    (
        "notifications.webhook",
        "secret",
        "secret_file",
        "webhook_secret",
        "notifications.webhook.secret",
    ),
)


def _with_secrets(settings: Settings, required: bool, platform: bool = True) -> Settings:
    """Fill secrets from their *_file key or systemd credentials; a platform secret is required.

    When not ``required`` no secret file is read: the command does not use them, and its
    operator may well not be allowed to read them. Without ``platform``, the platform's
    secret is neither required nor read.
    """
    if not required:
        return settings
    for section_name, value_key, file_key, credential, dotted in _SECRETS:
        if section_name == "platform" and not platform:
            continue
        section = _section(settings, section_name)
        if section is None or getattr(section, value_key) is not None:
            continue
        secret_file = getattr(section, file_key)
        if secret_file is None:
            creds = os.environ.get("CREDENTIALS_DIRECTORY")
            candidate = Path(creds) / credential if creds else None
            if candidate is not None and candidate.exists():
                secret_file = candidate
        if secret_file is None:
            if dotted == "platform.client_secret":
                raise ConfigError(
                    f"{dotted} is not set: give it in the settings file, in "
                    f"{file_key.replace('_file', '')}_file, as SYNCD_PLATFORM__CLIENT_SECRET, "
                    f"or as the systemd credential '{credential}'"
                )
            continue
        value = _read_secret(secret_file, dotted)
        settings = _replaced(settings, section_name, {value_key: SecretStr(value)})
    return settings


def _replaced(settings: Settings, dotted: str, update: dict[str, Any]) -> Settings:
    """Settings with the section at ``dotted`` (``source.ldap``) updated: frozen, so copied
    along the path up to the top."""
    parts = dotted.split(".")
    chain: list[Any] = [settings]
    for part in parts:
        chain.append(getattr(chain[-1], part))
    updated: Any = chain[-1].model_copy(update=update)
    for parent, part in zip(reversed(chain[:-1]), reversed(parts), strict=True):
        updated = parent.model_copy(update={part: updated})
    result: Settings = updated
    return result


def _section(settings: Settings, name: str) -> Any:
    obj: Any = settings
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _read_secret(path: Path, key: str) -> str:
    try:
        value = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read secret file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:  # its text says which bytes: never quote a secret
        raise ConfigError(f"{key}: secret file {path} is not UTF-8 text") from None
    if not value:
        raise ConfigError(f"{key}: secret file {path} is empty")
    return value


def _holds_secret(data: dict[str, Any]) -> bool:
    inline = (
        (("platform",), "client_secret"),
        (("source", "ldap"), "bind_password"),
        (("notifications", "email"), "password"),
        (("notifications", "webhook"), "secret"),
    )
    for path, key in inline:
        section: Any = data
        for part in path:
            section = section.get(part) if isinstance(section, dict) else None
        if isinstance(section, dict) and section.get(key):
            return True
    return False


def _readable_by_others(path: Path) -> bool:
    try:
        return bool(path.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH))
    except OSError:
        return False
