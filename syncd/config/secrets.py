"""Secrets: from the settings, their *_file keys or systemd credentials, one place each."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel, SecretStr

from syncd.config.section import holds
from syncd.config.settings import Settings
from syncd.errors import ConfigError

# A key path in the settings: names of tables, and indexes of [[sources]] entries.
KeyPath = tuple[str | int, ...]
EACH = "*"  # in a path of the models: each entry of a list of tables ([[sources]])

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
    secrets = list(_SECRETS)
    for i, source in enumerate(settings.sources):  # [[sources]]: each LDAP source's password
        if source.ldap is not None:
            name = f"sources.{i}.ldap"
            # One systemd credential per source: bind_password.<name>.
            secrets.append(
                (
                    name,
                    "bind_password",
                    "bind_password_file",
                    f"bind_password.{source.name}",
                    f"sources.{source.name}.ldap.bind_password",
                )
            )
    for section_name, value_key, file_key, credential, dotted in secrets:
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


def secret_keys(model: type[BaseModel] = Settings, path: KeyPath = ()) -> Iterator[KeyPath]:
    """Every secret of the settings that has a *_file twin, found in the models: its key
    path, with EACH standing for the entries of a list ([[sources]])."""
    for name, field in model.model_fields.items():
        if holds(field.annotation, SecretStr) and f"{name}_file" in model.model_fields:
            yield (*path, name)
        section, many = _section_in(field.annotation)
        if section is not None:
            yield from secret_keys(section, (*path, name, EACH) if many else (*path, name))


def _section_in(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The section a field holds (``X``, ``X | None``) or lists (``list[X]``: True)."""
    many = get_origin(annotation) is list
    for kind in (annotation, *get_args(annotation)):
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            return kind, many
    return None, False


def check_one_place_each(where: str, data: dict[str, Any]) -> None:
    """Each secret from one place: its key or its *_file key, in the settings file or the
    environment. Two would leave one silently unused, and a rotated secret may be that one.
    Each place is named (a key, an environment variable), never what it holds."""
    problems = []
    for key in (found for path in secret_keys() for found in _in(path, data)):
        places = _places(data, key) + _places(data, (*key[:-1], f"{key[-1]}_file"))
        if len(places) > 1:
            problems.append(
                f"key {_dotted(key)}: given in {len(places)} places ({', '.join(places)}): "
                "give it in one only, so that a rotated secret is never silently the unused one"
            )
    if problems:
        raise ConfigError(f"{where}: invalid settings: " + "; ".join(problems))


def _in(path: KeyPath, data: dict[str, Any]) -> Iterator[KeyPath]:
    """A key path of the models as the settings file's keys: one per [[sources]] entry."""
    if EACH not in path:
        yield path
        return
    at = path.index(EACH)
    entries = _at(data, path[:at])
    for index in range(len(entries) if isinstance(entries, list) else 0):
        yield from _in((*path[:at], index, *path[at + 1 :]), data)


def _places(data: dict[str, Any], key: KeyPath) -> list[str]:
    """Where a key is given: the settings file, and the SYNCD_* variables that set it
    (its own, or one that gives its whole section as JSON). Blank values are not counted:
    the models refuse them, naming where they came from."""
    places = [f"{_dotted(key)} in the settings file"] if _given(_at(data, key)) else []
    return places + [f"environment variable {name}" for name in _environment_places(key)]


def _environment_places(key: KeyPath) -> Iterator[str]:
    prefix = str(Settings.model_config.get("env_prefix", ""))
    nesting = str(Settings.model_config.get("env_nested_delimiter", ""))
    names = {name.upper(): name for name in os.environ}
    for length in range(1, len(key) + 1):
        name = names.get(prefix + nesting.join(str(part) for part in key[:length]).upper())
        if name is None:
            continue
        value: Any = os.environ[name]
        if length < len(key):  # a whole section as JSON: SYNCD_PLATFORM='{"client_secret": …}'
            value = _at(_json(value), key[length:])
        if _given(value):
            yield name


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None  # told as unparsable when the settings are read


def _at(data: Any, key: KeyPath) -> Any:
    """The value at a key path, or None where the path leads nowhere."""
    for part in key:
        if isinstance(part, int) and isinstance(data, list) and part < len(data):
            data = data[part]
        elif isinstance(part, str) and isinstance(data, dict):
            data = data.get(part)
        else:
            return None
    return data


def _given(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip())


def _dotted(key: KeyPath) -> str:
    return ".".join(str(part) for part in key)


def _replaced(settings: Settings, dotted: str, update: dict[str, Any]) -> Settings:
    """Settings with the section at ``dotted`` (``source.ldap``) updated: frozen, so copied
    along the path up to the top."""
    parts = dotted.split(".")
    if parts[0] == "sources":  # sources.<i>.ldap: one entry of the list, copied
        index = int(parts[1])
        entry = _replaced_in(settings.sources[index], parts[2:], update)
        entries = [*settings.sources[:index], entry, *settings.sources[index + 1 :]]
        result: Settings = settings.model_copy(update={"sources": entries})
        return result
    result = _replaced_in(settings, parts, update)
    return result


def _replaced_in(top: Any, parts: list[str], update: dict[str, Any]) -> Any:
    chain: list[Any] = [top]
    for part in parts:
        chain.append(getattr(chain[-1], part))
    updated: Any = chain[-1].model_copy(update=update)
    for parent, part in zip(reversed(chain[:-1]), reversed(parts), strict=True):
        updated = parent.model_copy(update={part: updated})
    return updated


def _section(settings: Settings, name: str) -> Any:
    obj: Any = settings
    for part in name.split("."):
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _read_secret(path: Path, key: str) -> str:
    try:
        value = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read secret file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError:  # not the cause: its text quotes the secret's bytes
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
    several = data.get("sources")
    for entry in several if isinstance(several, list) else ():
        ldap = entry.get("ldap") if isinstance(entry, dict) else None
        if isinstance(ldap, dict) and ldap.get("bind_password"):
            return True
    for path, key in inline:
        section: Any = data
        for part in path:
            section = section.get(part) if isinstance(section, dict) else None
        if isinstance(section, dict) and section.get(key):
            return True
    url = data.get("database_url")  # a password in the state database's URL
    return isinstance(url, str) and "@" in url and ":" in url.partition("://")[2].partition("@")[0]


def _readable_by_others(path: Path) -> bool:
    try:
        return bool(path.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH))
    except OSError:
        return False
