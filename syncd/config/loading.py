"""Loading: the TOML file, the SYNCD_* environment, and problems named with a "did you mean"."""

from __future__ import annotations

import difflib
import json
import logging
import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import SettingsError

from syncd.config.secrets import (
    _holds_secret,
    _readable_by_others,
    _with_secrets,
    check_one_place_each,
)
from syncd.config.section import without_userinfo
from syncd.config.service import ScheduleSettings, StatusSettings
from syncd.config.settings import DATABASE_SCHEMES, Settings
from syncd.errors import ConfigError

log = logging.getLogger("syncd.config")  # the name it had before config became a package

CONFIG_ENV = "SYNCD_CONFIG"
ENV_PREFIX = "SYNCD_"
ENV_NESTING = "__"
# SYNCD_* variables read by syncd that are not settings keys.
NOT_SETTINGS_ENV = frozenset({CONFIG_ENV, "SYNCD_EMULATOR_SECRET"})


class NoSettingsGiven(ConfigError):
    """Neither --config, SYNCD_CONFIG nor any SYNCD_* setting: nothing was read at all."""


def config_path(explicit: Path | None) -> Path | None:
    if explicit is not None:
        return explicit
    from_env = os.environ.get(CONFIG_ENV)
    return Path(from_env) if from_env else None


def log_format_hint(path: Path | None) -> str:
    """The log format the settings ask for, read before they are validated, so that a
    broken file is told in that format: SYNCD_LOG_FORMAT, else the file's top-level
    ``log_format``; ``text`` when neither says (or the file cannot be read as TOML)."""
    env = os.environ.get(f"{ENV_PREFIX}LOG_FORMAT", "").strip().lower()
    if env in ("text", "json"):
        return env
    path = config_path(path)
    if path is None:
        return "text"
    try:
        with path.open("rb") as file:
            value = tomllib.load(file).get("log_format")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return "text"
    return value if value in ("text", "json") else "text"


def salvaged_settings(path: Path | None) -> Settings | None:
    """What ``syncd status`` can still use of settings that do not validate: where the state
    is (``state_dir``) and the health limits (``schedule``, ``status``), each taken where it
    is valid and its default otherwise; None when the file cannot even be read as TOML (then
    where the state is cannot be known). Never used to sync: nothing else in it is read."""
    path = config_path(path)
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = _with_paths_resolved(_read_toml(path), path.parent)
        except ConfigError:
            return None
    found: dict[str, Any] = {}
    for name, section in (("schedule", ScheduleSettings), ("status", StatusSettings)):
        given = data.get(name)
        try:
            found[name] = section(**given) if isinstance(given, dict) else section()
        except ValidationError:
            found[name] = section()
    state_dir = os.environ.get(f"{ENV_PREFIX}STATE_DIR") or data.get("state_dir")
    if isinstance(state_dir, str) and state_dir.strip():
        found["state_dir"] = Path(state_dir)
    url = os.environ.get(f"{ENV_PREFIX}DATABASE_URL") or data.get("database_url")
    if isinstance(url, str) and url.partition("://")[0] in DATABASE_SCHEMES:
        found["database_url"] = SecretStr(url.strip())
    return Settings.model_construct(platform=None, **found)  # no source: status reads none


def load_settings(
    path: Path | None = None,
    *,
    warn: Callable[[str], object] | None = None,
    require_secrets: bool = True,
    platform: bool = True,
) -> Settings:
    """Read, validate and complete the settings, or raise one ConfigError naming file and key.

    ``warn`` (default: a WARNING log line) is called with a message for problems that
    do not stop syncd (a settings file readable by others that holds a secret, plain
    http:// to the platform). Commands that only read the state database (status,
    reports) pass ``require_secrets=False``: secret files are then not read at all;
    ``syncd check``, which never talks to the platform, passes ``platform=False``: its
    section may be left out, and its secret is neither required nor read.
    """
    warn = warn or log.warning
    path = config_path(path)
    data: dict[str, Any] = {}
    where = "environment"
    if path is None and not any(_names_setting(name) for name in os.environ):
        raise NoSettingsGiven(
            f"no settings given: name the settings file with --config FILE or {CONFIG_ENV}=FILE "
            "(or give every setting as a SYNCD_* environment variable)"
        )
    if path is not None:
        where = str(path)
        data = _with_paths_resolved(_read_toml(path), path.parent)
        if _holds_secret(data) and _readable_by_others(path):
            warn(f"{path} holds a secret and is readable by other users: chmod 600 it")
    _check_environment_names()
    check_one_place_each(where, data)
    # BaseSettings takes keyword arguments starting with "_" as its own options
    # (_env_prefix, _cli_parse_args, ...), never as settings: no settings key starts so.
    hidden = sorted(key for key in data if key.startswith("_"))
    if hidden:
        problems = "; ".join(f"key {key}: unknown key{_known_key_like((key,))}" for key in hidden)
        raise ConfigError(f"{where}: invalid settings: {problems}")
    if not platform:
        data.setdefault("platform", None)  # the environment may still give the section
    try:
        settings = Settings(**data)
    except ValidationError as exc:
        # Not the cause: its text quotes the values given, secrets among them.
        raise ConfigError(_describe(where, exc)) from None
    except SettingsError:
        # Not the cause: it quotes the environment's values, secrets among them.
        raise ConfigError(_describe_unparsable()) from None
    if settings.platform is not None and settings.platform.sends_in_clear:
        warn(
            f"platform.base_url {settings.platform.base_url} is plain http:// to another "
            "host: the application secret and every access token cross the network "
            "unencrypted. Use https://."
        )
    return _with_secrets(settings, require_secrets, platform)


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
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: settings file not found") from exc
    except PermissionError as exc:
        raise ConfigError(f"{path}: settings file is not readable (permission denied)") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"{path}: is a directory, not a settings file") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    except UnicodeDecodeError:  # not the cause: it quotes a byte, maybe a secret's
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
    path_keys = list(_PATH_KEYS)
    several = data.get("sources")
    for i in range(len(several) if isinstance(several, list) else 0):
        path_keys += [(f"sources.{i}", *k[1:]) for k in _PATH_KEYS if k[0] == "source"]
    for keys in path_keys:
        parent: Any = data
        for key in keys[:-1]:
            parent = _entry(parent, key)
        value = parent.get(keys[-1]) if isinstance(parent, dict) else None
        # A blank path is left as it is, for the models to refuse it by its key.
        if isinstance(value, str) and value.strip() and not Path(value).is_absolute():
            parent[keys[-1]] = str(base / value)
    for transform in _mapping_transforms(data):
        value = transform.get("lookup")
        if isinstance(value, str) and value and not Path(value).is_absolute():
            transform["lookup"] = str(base / value)
    return data


def _entry(parent: Any, key: str) -> Any:
    """``parent[key]``, where ``sources.1`` is the second [[sources]] entry; None if absent."""
    if key.startswith("sources.") and isinstance(parent, dict):
        entries, index = parent.get("sources"), int(key.split(".")[1])
        return entries[index] if isinstance(entries, list) and index < len(entries) else None
    return parent.get(key) if isinstance(parent, dict) else None


def _mapping_transforms(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The transforms written as tables in source.mapping, and in each [[sources]] entry's
    mapping (lookups name files)."""
    several = data.get("sources")
    found = []
    for source in [data.get("source"), *(several if isinstance(several, list) else ())]:
        mapping = source.get("mapping") if isinstance(source, dict) else None
        for section in ("fields", "extra", "properties"):
            rules = mapping.get(section) if isinstance(mapping, dict) else None
            for rule in rules.values() if isinstance(rules, dict) else ():
                transforms = rule.get("transforms") if isinstance(rule, dict) else None
                found += [t for t in transforms or () if isinstance(t, dict)]
    return found


def _describe(where: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        if err["type"] == "value_error" and not err["loc"]:
            # The settings as a whole (source or sources, join): the text names its keys.
            problems.append(str(err.get("ctx", {}).get("error", err["msg"])))
            continue
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
            else f" (got {_shown(given)!r})"
        )
        # A secret is never shown, nor what was given for a whole section (a string where
        # a table belongs, as a SYNCD_* variable may give it), which may hold its secrets;
        # nor the database URL, which may hold its password.
        secret = "secret" in key or "password" in key or key == "database_url"
        if secret or err["type"] in ("model_type", "dict_type"):
            shown = ""
        env_name = ENV_PREFIX + ENV_NESTING.join(str(part) for part in err["loc"]).upper()
        given_as = [name for name in os.environ if name.upper() == env_name]
        origin = f" (from environment variable {given_as[0]})" if given_as else ""
        problems.append(f"key {key}: {message}{shown}{origin}")
    return f"{where}: invalid settings: " + "; ".join(problems)


def _shown(given: Any) -> Any:
    """A value as an error quotes it: each URL in it without a user name or password."""
    if isinstance(given, str):
        return without_userinfo(given)
    if isinstance(given, list):
        return [_shown(item) for item in given]
    return given


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
