"""Values refused at load, each named by its key (and its environment variable), none quoted.

Generated over the models themselves: every secret with a ``*_file`` twin, given in any two
or more of its places (its key, its ``*_file`` key, in the settings file or as SYNCD_*
variables); every secret and every path given blank; database URLs without a usable scheme
and URLs holding a user name and password, in the settings file or the environment. No
message shows a secret, nor a URL's password.
"""

from __future__ import annotations

import copy
import json
import os
import string
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, SecretStr

from syncd.config import Settings, load_settings
from syncd.errors import ConfigError
from tests.support.examples import examples
from tests.support.settings import write_settings

KeyPath = tuple[str | int, ...]

SOURCE: dict[str, Any] = {
    # Both sections, so that a key of either has a table to go in; kind chooses the one read.
    "kind": "csv",
    "csv": {"layout": "paths", "employees": "people.csv"},
    "ldap": {"urls": ["ldaps://dc1.example"], "users_base": "dc=example"},
}
PLATFORM: dict[str, Any] = {
    "base_url": "https://platform.example",
    "domain_id": "acme",
    "org_code": "acme",
    "client_id": "syncd",
    "org_id": "1",
    "client_secret": "platform-secret-of-the-base",
}
ONE_SOURCE = {"source": SOURCE, "platform": PLATFORM}
SEVERAL = {"sources": [{**SOURCE, "name": "hr"}], "platform": PLATFORM}

FIXTURES_PER_EXAMPLE = settings(
    max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("SYNCD_") or name == "CREDENTIALS_DIRECTORY":
            monkeypatch.delenv(name)


# -- the settings, walked and written ----------------------------------------------------------


def _section(annotation: Any) -> type[BaseModel] | None:
    for kind in (annotation, *get_args(annotation)):
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            return kind
    return None


def leaves(model: type[BaseModel] = Settings, path: KeyPath = ()) -> Iterator[KeyPath]:
    """Every setting's key path; the first [[sources]] entry's (index 0) for theirs."""
    for name, field in model.model_fields.items():
        section = _section(field.annotation)
        if section is None:
            yield (*path, name)
        else:
            many = get_origin(field.annotation) is list
            yield from leaves(section, (*path, name, 0) if many else (*path, name))


def annotation_of(key: KeyPath) -> tuple[type[BaseModel], Any]:
    model: type[BaseModel] = Settings
    for part in key[:-1]:
        if isinstance(part, str):
            found = _section(model.model_fields[part].annotation)
            assert found is not None
            model = found
    return model, model.model_fields[str(key[-1])].annotation


def _holds(key: KeyPath, kind: type) -> bool:
    annotation = annotation_of(key)[1]
    return annotation is kind or kind in get_args(annotation)


SECRETS = [
    key
    for key in leaves()
    if _holds(key, SecretStr) and f"{key[-1]}_file" in annotation_of(key)[0].model_fields
]
PATHS = [key for key in leaves() if _holds(key, Path)]


def dotted(key: KeyPath) -> str:
    return ".".join(str(part) for part in key)


def env_name(key: KeyPath) -> str | None:
    """The SYNCD_* variable that sets the key; None inside [[sources]] (set as a whole)."""
    if any(isinstance(part, int) for part in key):
        return None
    return "SYNCD_" + "__".join(str(part) for part in key).upper()


def toml(value: Any) -> str:
    """A value as TOML, inline: JSON's strings, numbers and arrays are TOML's too."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return json.dumps(value)


def settings_file(folder: Path, key: KeyPath, given: dict[str, Any]) -> Path:
    """Settings where the key's table is, with ``given`` (key -> value) put in that table
    and the key and its *_file twin given nowhere else."""
    doc = copy.deepcopy(SEVERAL if key[0] == "sources" else ONE_SOURCE)
    table: Any = doc
    for part in key[:-1]:
        table = table[part] if isinstance(part, int) else table.setdefault(part, {})
    for name in (key[-1], f"{key[-1]}_file"):
        table.pop(name, None)
    table.update(given)
    return write_settings(folder, "".join(f"{k} = {toml(v)}\n" for k, v in doc.items()))


def shown(error: ConfigError) -> str:
    """The error as a traceback prints it, with its causes."""
    return "".join(traceback.format_exception(error))


def test_the_walk_finds_the_secrets_and_paths() -> None:
    names = {dotted(key) for key in SECRETS}
    assert {
        "platform.client_secret",
        "source.ldap.bind_password",
        "sources.0.ldap.bind_password",
        "notifications.email.password",
        "notifications.webhook.secret",
    } <= names
    assert {"state_dir", "source.csv.employees", "metrics.textfile"} <= {dotted(k) for k in PATHS}


# -- A: each secret from one place ----------------------------------------------------------

PLACES = ("key", "key_file", "env", "env_file")
secret_values = st.text(string.ascii_letters + string.digits + "-_.~+/=", min_size=8).map(
    lambda text: f"Sk-{text}"
)


def _places(key: KeyPath) -> list[str]:
    """Where the secret can be given: in the settings file, and as SYNCD_* variables
    outside [[sources]] (whose entries are set from the environment only as a whole)."""
    return [p for p in PLACES if env_name(key) is not None or not p.startswith("env")]


def give(
    folder: Path, key: KeyPath, places: frozenset[str], secret: str, mp: pytest.MonkeyPatch
) -> tuple[Path, list[str]]:
    """The settings file giving the secret in each place, and each place as named."""
    secret_file = folder / "secret"
    secret_file.write_text(secret + "\n", encoding="utf-8")
    value = {
        "key": secret,
        "key_file": str(secret_file),
        "env": secret,
        "env_file": str(secret_file),
    }
    name = {  # the settings key or the variable each place is
        "key": str(key[-1]),
        "key_file": f"{key[-1]}_file",
        "env": str(env_name(key)),
        "env_file": f"{env_name(key)}_FILE",
    }
    for place in places - {"key", "key_file"}:
        mp.setenv(name[place], value[place])
    named = [
        f"{dotted((*key[:-1], name[p]))} in the settings file"
        if p.startswith("key")
        else f"environment variable {name[p]}"
        for p in places
    ]
    in_file = {name[p]: value[p] for p in places & {"key", "key_file"}}
    return settings_file(folder, key, in_file), named


@FIXTURES_PER_EXAMPLE
@given(data=st.data(), secret=secret_values)
def test_a_secret_given_in_two_places_is_refused_naming_each(
    tmp_path: Path, data: st.DataObject, secret: str
) -> None:
    key = data.draw(st.sampled_from(SECRETS), label="secret")
    places = data.draw(st.frozensets(st.sampled_from(_places(key)), min_size=2), label="places")
    with pytest.MonkeyPatch.context() as mp:
        path, named = give(tmp_path, key, places, secret, mp)
        with pytest.raises(ConfigError) as caught:
            load_settings(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: invalid settings: key {dotted(key)}: ")
    assert f"given in {len(places)} places" in message
    for place in named:
        assert place in message
    assert secret not in shown(caught.value)


@FIXTURES_PER_EXAMPLE
@given(data=st.data(), secret=secret_values)
def test_a_secret_given_in_one_place_is_read(
    tmp_path: Path, data: st.DataObject, secret: str
) -> None:
    key = data.draw(st.sampled_from(SECRETS), label="secret")
    place = data.draw(st.sampled_from(_places(key)), label="place")
    with pytest.MonkeyPatch.context() as mp:
        path, _ = give(tmp_path, key, frozenset({place}), secret, mp)
        assert secret in load_settings(path).secret_values()


# -- B and E: a blank secret or path ----------------------------------------------------------

blanks = st.text(" \t", max_size=3)
# What a blank value of each kind is told: a secret sent to be refused by the server, a path
# read as whatever folder syncd runs in.
BLANK = {"secret": (SECRETS, "must not be blank"), "path": (PATHS, "must be a path, not blank")}


@FIXTURES_PER_EXAMPLE
@given(data=st.data(), blank=blanks, from_env=st.booleans(), kind=st.sampled_from(list(BLANK)))
def test_a_blank_secret_or_path_is_refused_naming_its_key_and_variable(
    tmp_path: Path, data: st.DataObject, blank: str, from_env: bool, kind: str
) -> None:
    keys, told = BLANK[kind]
    key = data.draw(st.sampled_from(keys), label=kind)
    env = env_name(key) if from_env else None
    with pytest.MonkeyPatch.context() as mp:
        if env is not None:
            mp.setenv(env, blank)
        path = settings_file(tmp_path, key, {} if env else {str(key[-1]): blank})
        with pytest.raises(ConfigError) as caught:
            load_settings(path, require_secrets=kind == "secret")
    message = str(caught.value)
    assert f"key {dotted(key)}: Value error, {told}" in message
    assert (f"(from environment variable {env})" in message) == (env is not None)


def test_state_dir_is_still_relative_to_the_settings_file(tmp_path: Path) -> None:
    path = settings_file(tmp_path, ("state_dir",), {"state_dir": "state"})
    assert load_settings(path).state_dir == tmp_path / "state"


# -- C and D: URLs that hold a password ------------------------------------------------------

users = st.text(string.ascii_letters + string.digits + "-._~", min_size=6).map(lambda t: f"Usr{t}")
passwords = st.text(string.ascii_letters + string.digits + "-._~", min_size=6).map(
    lambda t: f"Pw{t}"
)


@FIXTURES_PER_EXAMPLE
@given(
    prefix=st.sampled_from(
        ["", "mysql://", "postgres:", "jdbc:postgresql://", "//", "postgresql:/"]
    ),
    user=users,
    password=passwords,
    from_env=st.booleans(),
)
def test_a_database_url_refused_never_shows_its_password(
    tmp_path: Path, prefix: str, user: str, password: str, from_env: bool
) -> None:
    url = f"{prefix}{user}:{password}@db.example.com:5432/syncd"
    with pytest.MonkeyPatch.context() as mp:
        if from_env:
            mp.setenv("SYNCD_DATABASE_URL", url)
        given = {} if from_env else {"database_url": url}
        path = settings_file(tmp_path, ("database_url",), given)
        with pytest.raises(ConfigError) as caught:
            load_settings(path)
    message = str(caught.value)
    assert "key database_url: Value error, a PostgreSQL URL is expected" in message
    assert password not in shown(caught.value)


# Where a URL is a setting, and how it is given: a base_url, a webhook, LDAP URLs.
URL_KEYS: dict[KeyPath, bool] = {  # key -> given as a list
    ("platform", "base_url"): False,
    ("notifications", "webhook", "url"): False,
    ("source", "ldap", "urls"): True,
    ("source", "ldap", "global_catalog"): False,
}
hosts = st.sampled_from(["platform.example", "10.0.0.7:8443", "[::1]", "[::1", "host:port"])


@FIXTURES_PER_EXAMPLE
@given(
    key=st.sampled_from(sorted(URL_KEYS)),
    scheme=st.sampled_from(["", "ftp://", "https://"]),
    user=users,
    password=passwords,
    host=hosts,
)
def test_a_url_refused_never_shows_its_user_or_password(
    tmp_path: Path, key: KeyPath, scheme: str, user: str, password: str, host: str
) -> None:
    url = f"{scheme}{user}:{password}@{host}/api"
    if key == ("notifications", "webhook", "url"):  # may hold a user: refused for its scheme
        url = url.replace("https://", "gopher://")
    path = settings_file(tmp_path, key, {str(key[-1]): [url] if URL_KEYS[key] else url})
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    printed = shown(caught.value)
    assert f"key {dotted(key)}: " in printed
    assert password not in printed and user not in printed


@FIXTURES_PER_EXAMPLE
@given(
    scheme=st.sampled_from(["http://", "https://"]),
    user=users,
    password=st.none() | passwords,
    from_env=st.booleans(),
)
def test_a_base_url_with_a_user_or_password_is_refused(
    tmp_path: Path, scheme: str, user: str, password: str | None, from_env: bool
) -> None:
    userinfo = user if password is None else f"{user}:{password}"
    url = f"{scheme}{userinfo}@platform.example/"
    warnings: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        if from_env:
            mp.setenv("SYNCD_PLATFORM__BASE_URL", url)
        key = ("platform", "base_url")
        path = settings_file(tmp_path, key, {} if from_env else {"base_url": url})
        with pytest.raises(ConfigError) as caught:
            load_settings(path, warn=warnings.append)
    printed = shown(caught.value)
    assert "key platform.base_url: Value error, must not hold a user name or password" in printed
    assert user not in printed and (password is None or password not in printed)
    assert warnings == []
