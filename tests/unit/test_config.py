"""Settings: TOML file, SYNCD_* environment, secret files, and errors that name the key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from syncd.config import load_settings, platform_of, source_of
from syncd.errors import ConfigError
from tests.support.settings import CSV_SETTINGS, write_settings

BASE = CSV_SETTINGS
write = write_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("SYNCD_") or name == "CREDENTIALS_DIRECTORY":
            monkeypatch.delenv(name)


def test_environment_overrides_the_file_and_paths_are_relative_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, BASE + 'client_secret = "s3cret-value"\nbatch_size = 100\n')
    monkeypatch.setenv("SYNCD_PLATFORM__BATCH_SIZE", "300")
    settings = load_settings(path)
    assert platform_of(settings).batch_size == 300
    source = source_of(settings)
    assert source.csv is not None
    assert source.csv.employees == tmp_path / "people.csv"
    assert settings.secret_values() == ["s3cret-value"]
    assert "s3cret-value" not in repr(settings)


def test_config_path_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYNCD_CONFIG", str(write(tmp_path, BASE + 'client_secret = "x-secret"\n')))
    assert platform_of(load_settings()).org_code == "acme"


def test_unknown_keys_and_wrong_types_are_named(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + 'client_secret = "x"\nbatch_size = "many"\nbach_size = 2\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    message = str(caught.value)
    assert str(path) in message
    assert "key platform.batch_size: Input should be a valid integer" in message
    assert "(got 'many')" in message
    assert "key platform.bach_size: unknown key" in message


def test_a_bad_value_from_the_environment_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYNCD_SYNC__MAX_REMOVALS", "-3")
    with pytest.raises(ConfigError, match="from environment variable SYNCD_SYNC__MAX_REMOVALS"):
        load_settings(write(tmp_path, BASE + 'client_secret = "x-secret"\n'))


def test_broken_toml_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"not valid TOML: .*line 3"):
        load_settings(write(tmp_path, '[source]\nkind = "csv"\nthis is not toml\n'))


@pytest.mark.parametrize(
    ("path", "expected"),
    [("missing.toml", "settings file not found"), (".", "is a directory")],
)
def test_unreadable_settings_file(tmp_path: Path, path: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        load_settings(tmp_path / path)


def test_missing_platform_secret_says_every_way_to_give_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, BASE))
    message = str(caught.value)
    assert "platform.client_secret is not set" in message
    assert "SYNCD_PLATFORM__CLIENT_SECRET" in message and "'client_secret'" in message


def test_secret_from_a_file_and_from_systemd_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("from-a-file\n")
    settings = load_settings(write(tmp_path, BASE + 'client_secret_file = "secret"\n'))
    assert settings.secret_values() == ["from-a-file"]

    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "client_secret").write_text("from-systemd")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(creds))
    assert load_settings(write(tmp_path, BASE)).secret_values() == ["from-systemd"]


def test_unreadable_or_empty_secret_file_is_an_error_naming_key_and_file(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"platform.client_secret: cannot read secret file .*nope"
    ):
        load_settings(write(tmp_path, BASE + 'client_secret_file = "nope"\n'))
    (tmp_path / "empty").write_text("  \n")
    with pytest.raises(ConfigError, match=r"secret file .*empty is empty"):
        load_settings(write(tmp_path, BASE + 'client_secret_file = "empty"\n'))


def test_a_secret_in_a_file_readable_by_others_is_warned_about(tmp_path: Path) -> None:
    warnings: list[str] = []
    load_settings(
        write(tmp_path, BASE + 'client_secret = "x-secret"\n', 0o644), warn=warnings.append
    )
    assert len(warnings) == 1 and "readable by other users" in warnings[0]
    warnings.clear()
    load_settings(
        write(tmp_path, BASE + 'client_secret = "x-secret"\n', 0o600), warn=warnings.append
    )
    assert warnings == []


def test_source_section_must_match_its_kind(tmp_path: Path) -> None:
    text = BASE.replace('kind = "csv"', 'kind = "ldap"') + 'client_secret = "x"\n'
    with pytest.raises(ConfigError, match=r"no \[source.ldap\] section"):
        load_settings(write(tmp_path, text))


def test_secret_values_are_not_echoed_in_errors(tmp_path: Path) -> None:
    text = BASE + 'client_secret = ["not", "a", "string-secret-value"]\n'
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, text))
    assert "string-secret-value" not in str(caught.value)
    assert "platform.client_secret" in str(caught.value)


def test_the_example_settings_load_and_state_the_real_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from syncd.config import (
        CsvEmployeeColumns,
        MetricsSettings,
        PlatformSettings,
        ReportSettings,
        SyncSettings,
    )

    # The example names a client_secret_file: point it at a real one (an inline secret
    # as well would be two sources for one secret).
    secret = tmp_path / "client_secret"
    secret.write_text("from-a-file\n")
    monkeypatch.setenv("SYNCD_PLATFORM__CLIENT_SECRET_FILE", str(secret))
    example = Path(__file__).parents[2] / "config" / "syncd.example.toml"
    settings = load_settings(example)
    assert settings.sync == SyncSettings()
    assert settings.reports == ReportSettings()
    assert settings.metrics == MetricsSettings()
    source = source_of(settings)
    assert source.csv is not None
    assert source.csv.columns == CsvEmployeeColumns()
    assert source.csv.employees == example.parent / "sample" / "employees.csv"
    defaults = PlatformSettings(
        base_url="https://p", domain_id="d", org_code="o", client_id="c", org_id="o"
    )
    assert platform_of(settings).retry_after_max == defaults.retry_after_max


def test_commands_that_only_read_state_do_not_need_the_secret(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, BASE), require_secrets=False)
    assert platform_of(settings).client_secret is None


def test_a_secret_file_is_not_read_when_the_secret_is_not_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `syncd status` and `syncd reports` for an operator who cannot read the secrets:
    # a directory stands for an unreadable file (root reads any file, whatever its mode).
    (tmp_path / "creds" / "client_secret").mkdir(parents=True)
    path = write(tmp_path, BASE + 'client_secret_file = "creds/client_secret"\n')
    with pytest.raises(ConfigError, match="cannot read secret file"):
        load_settings(path)
    assert platform_of(load_settings(path, require_secrets=False)).client_secret is None

    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path / "creds"))
    path = write(tmp_path, BASE)
    with pytest.raises(ConfigError, match="cannot read secret file"):
        load_settings(path)
    assert load_settings(path, require_secrets=False).secret_values() == []


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("SYNCD_SYNC_MAX_REMOVALS", "did you mean SYNCD_SYNC__MAX_REMOVALS?"),
        ("SYNCD_LOGLEVEL", "did you mean SYNCD_LOG_LEVEL?"),
        ("syncd_platfrom__batch_size", "did you mean SYNCD_PLATFORM?"),
    ],
)
def test_a_misspelt_environment_variable_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, hint: str
) -> None:
    monkeypatch.setenv(name, "0")
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, BASE + 'client_secret = "x-secret"\n'))
    message = str(caught.value)
    assert f"environment variable {name}: names no setting" in message
    assert hint in message


def test_syncd_variables_that_are_not_settings_are_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, BASE + 'client_secret = "x-secret"\n')
    monkeypatch.setenv("SYNCD_CONFIG", str(path))
    monkeypatch.setenv("SYNCD_EMULATOR_SECRET", "the-emulator-secret")
    monkeypatch.setenv("SYNCD_SYNC__MAX_REMOVALS", "0")
    assert load_settings().sync.max_removals == 0


def test_a_list_in_the_environment_must_be_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, BASE + 'client_secret = "x-secret"\n')
    monkeypatch.setenv("SYNCD_SYNC__LEAVER_POLICY", "lock")  # a plain value: fine as it is
    monkeypatch.setenv("SYNCD_SYNC__EXCLUDE__USERNAMES", "alice")
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    message = str(caught.value)
    assert message.startswith("environment variable SYNCD_SYNC__EXCLUDE__USERNAMES:")
    assert "must be JSON" in message and "SYNCD_SYNC__LEAVER_POLICY" not in message
    monkeypatch.setenv("SYNCD_SYNC__EXCLUDE__USERNAMES", '["alice"]')
    assert load_settings(path).sync.exclude.usernames == ["alice"]


@pytest.mark.parametrize("line", ['_env_prefix = "NOPE_"', "_cli_parse_args = true"])
def test_top_level_keys_with_an_underscore_are_unknown_keys(tmp_path: Path, line: str) -> None:
    path = write(tmp_path, line + "\n" + BASE + 'client_secret = "x-secret"\n')
    with pytest.raises(ConfigError, match=f"key {line.split()[0]}: unknown key"):
        load_settings(path)


@pytest.mark.parametrize(
    "url",
    ["platform.example.com", "ftp://platform.example", "https://", "http://[::1", "http://h:x"],
)
def test_base_url_must_be_an_http_url_with_a_host(tmp_path: Path, url: str) -> None:
    text = BASE.replace('"https://platform.example"', f'"{url}"') + 'client_secret = "x-secret"\n'
    with pytest.raises(ConfigError, match=r"key platform\.base_url: .*URL with a host"):
        load_settings(write(tmp_path, text))


@pytest.mark.parametrize(
    ("url", "warned"),
    [
        ("http://platform.example", True),
        ("http://10.0.0.7:8080", True),
        ("https://platform.example", False),
        ("http://127.0.0.1:8900", False),
        ("http://localhost:8900", False),
        ("http://[::1]:8900", False),
    ],
)
def test_plain_http_to_another_host_is_warned_about(tmp_path: Path, url: str, warned: bool) -> None:
    text = BASE.replace('"https://platform.example"', f'"{url}"') + 'client_secret = "x-secret"\n'
    warnings: list[str] = []
    load_settings(write(tmp_path, text), warn=warnings.append)
    assert bool(warnings) == warned
    if warned:
        assert "unencrypted" in warnings[0] and url in warnings[0]
