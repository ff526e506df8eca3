"""Settings mistakes an operator makes, each told in one message that says what to do."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from syncd.config import load_settings, platform_of, source_of
from syncd.errors import ConfigError
from tests.unit.test_config import BASE, write

LDAP = """
[source]
kind = "ldap"
[source.ldap]
users_base = "ou=People,dc=acme,dc=example"
"""
PLATFORM = BASE[BASE.index("[platform]") :]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("SYNCD_") or name == "CREDENTIALS_DIRECTORY":
            monkeypatch.delenv(name)


def test_no_settings_at_all_says_how_to_give_them() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(None)
    message = str(caught.value)
    assert message.startswith("no settings given")
    assert "--config FILE" in message and "SYNCD_CONFIG=FILE" in message


def test_settings_from_the_environment_alone_still_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYNCD_SOURCE__KIND", "csv")
    with pytest.raises(ConfigError, match=r"environment: invalid settings: .*source\.csv"):
        load_settings(None)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("batchsize = 5\n", "key platform.batchsize: unknown key, did you mean "
         "platform.batch_size?"),
        ("[sync]\nmax_removal = 5\n", "key sync.max_removal: unknown key, did you mean "
         "sync.max_removals?"),
        ("[sorce]\nkind = 'csv'\n", "key sorce: unknown key, did you mean source?"),
        ("[sync.exclude]\nusername = ['a']\n", "did you mean sync.exclude.usernames?"),
        ("zzz = 1\n", "key platform.zzz: unknown key;"),
    ],
)  # fmt: skip
def test_an_unknown_key_names_the_nearest_known_one(tmp_path: Path, text: str, named: str) -> None:
    # BASE ends in [platform]: a key without a header lands there.
    path = write(tmp_path, BASE + 'client_secret = "x-secret"\n' + text)
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert named in str(caught.value) + ";"


@pytest.mark.parametrize("url", ["http://ldap.acme.example", "https://ldap.acme.example:636"])
def test_a_web_url_in_the_ldap_urls_is_a_settings_error(tmp_path: Path, url: str) -> None:
    path = write(tmp_path, LDAP + f'urls = ["ldaps://dc1.acme.example", "{url}"]\n' + PLATFORM)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, require_secrets=False)
    message = str(caught.value)
    assert f"key source.ldap.urls: Value error, '{url}' is not an LDAP URL" in message
    assert "use ldaps://host" in message


def test_ldap_urls_and_the_expected_server_name_load(tmp_path: Path) -> None:
    text = LDAP + 'urls = ["ldaps://10.0.0.5", "ldap://dc2"]\ntls_server_name = "dc.acme.example"\n'
    settings = load_settings(write(tmp_path, text + PLATFORM), require_secrets=False)
    source = source_of(settings)
    assert source.ldap is not None
    assert source.ldap.tls_server_name == "dc.acme.example"


def test_check_needs_no_platform_secret_but_still_reads_the_bind_password(
    tmp_path: Path,
) -> None:
    (tmp_path / "ldap.pw").write_text("bind-pw-1234\n")
    text = LDAP + 'urls = ["ldaps://dc1"]\nbind_password_file = "ldap.pw"\n' + PLATFORM
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=r"platform\.client_secret is not set"):
        load_settings(path)

    settings = load_settings(path, platform=False)

    assert platform_of(settings).client_secret is None
    assert settings.secret_values() == ["bind-pw-1234"]


def test_check_loads_settings_without_a_platform_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, LDAP + 'urls = ["ldaps://dc1"]\n')
    missing = f"{path}: invalid settings: key platform: required key is missing"
    with pytest.raises(ConfigError) as caught:
        load_settings(path, require_secrets=False)
    assert str(caught.value) == missing

    assert load_settings(path, platform=False).platform is None
    # The environment may still give the section, checked as it always is.
    monkeypatch.setenv("SYNCD_PLATFORM__BATCH_SIZE", "7")
    with pytest.raises(ConfigError, match=r"key platform\.base_url: required key is missing"):
        load_settings(path, platform=False)


def test_the_metrics_textfile_must_be_a_prom_file(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + '[metrics]\ntextfile = "syncd.txt"\n')
    with pytest.raises(ConfigError, match=r"key metrics.textfile: Value error, must end in \.prom"):
        load_settings(path, require_secrets=False)
    path = write(tmp_path, BASE + '[metrics]\ntextfile = "collector/syncd.prom"\n')
    settings = load_settings(path, require_secrets=False)
    assert settings.metrics.textfile == tmp_path / "collector" / "syncd.prom"
