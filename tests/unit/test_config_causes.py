"""Bad settings: each ConfigError keeps the cause that holds no secret, and none that does.

Generated over the ways a settings file, a secret file or a SYNCD_* variable can be bad,
each holding a secret: the error, formatted with its chain of causes as a traceback
prints it, never shows the secret; where the cause is an operating-system or TOML error
(which quotes no value), it is kept.
"""

from __future__ import annotations

import os
import tomllib
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from syncd.config import load_settings
from syncd.errors import ConfigError
from tests.support.settings import CSV_SETTINGS, write_settings

SECRET = "Sekr1t-9d4c-never-shown"

PLATFORM = CSV_SETTINGS

Case = Callable[[Path, pytest.MonkeyPatch], Path]


settings_file = write_settings


def missing_file(tmp_path: Path, _: pytest.MonkeyPatch) -> Path:
    return tmp_path / "nowhere.toml"


def invalid_toml(tmp_path: Path, _: pytest.MonkeyPatch) -> Path:
    text = PLATFORM + f'client_secret = "{SECRET}"\n[[broken\n'
    return settings_file(tmp_path, text.encode())


def not_utf8(tmp_path: Path, _: pytest.MonkeyPatch) -> Path:
    return settings_file(
        tmp_path, (PLATFORM + 'client_secret = "').encode() + b"\xff" + SECRET.encode()
    )


def secret_of_the_wrong_type(tmp_path: Path, _: pytest.MonkeyPatch) -> Path:
    text = PLATFORM + f'client_secret = ["{SECRET}"]\n'
    return settings_file(tmp_path, text.encode())


def secret_beside_a_bad_value(tmp_path: Path, _: pytest.MonkeyPatch) -> Path:
    text = PLATFORM + f'client_secret = "{SECRET}"\nbatch_size = "many"\nconcurrency = -1\n'
    return settings_file(tmp_path, text.encode())


def secret_file_is_a_folder(tmp_path: Path, _: pytest.MonkeyPatch) -> Path:
    (tmp_path / "secret").mkdir()
    text = PLATFORM + f'client_secret_file = "{tmp_path / "secret"}"\n'
    return settings_file(tmp_path, text.encode())


def secret_file_not_utf8(tmp_path: Path, _: pytest.MonkeyPatch) -> Path:
    secret = tmp_path / "secret"
    secret.write_bytes(SECRET.encode() + b"\xfe\xff")
    secret.chmod(0o600)
    return settings_file(tmp_path, (PLATFORM + f'client_secret_file = "{secret}"\n').encode())


def environment_not_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SYNCD_PLATFORM", f'{{"client_secret": "{SECRET}", ')
    return settings_file(tmp_path, (PLATFORM + f'client_secret = "{SECRET}"\n').encode())


def section_given_as_text(tmp_path: Path, _: pytest.MonkeyPatch) -> Path:
    text = f'platform = "client_secret = {SECRET}"\n' + PLATFORM.split("[platform]")[0]
    return settings_file(tmp_path, text.encode())


# Each case, and the cause its error keeps (None: none, its text would quote the secret).
CASES: dict[str, tuple[Case, type[BaseException] | None]] = {
    "missing_file": (missing_file, FileNotFoundError),
    "invalid_toml": (invalid_toml, tomllib.TOMLDecodeError),
    "not_utf8": (not_utf8, None),
    "secret_of_the_wrong_type": (secret_of_the_wrong_type, None),
    "secret_beside_a_bad_value": (secret_beside_a_bad_value, None),
    "secret_file_is_a_folder": (secret_file_is_a_folder, IsADirectoryError),
    "secret_file_not_utf8": (secret_file_not_utf8, None),
    "environment_not_json": (environment_not_json, None),
    "section_given_as_text": (section_given_as_text, None),
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("SYNCD_") or name == "CREDENTIALS_DIRECTORY":
            monkeypatch.delenv(name)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_settings_keep_a_safe_cause_and_never_show_the_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    make, cause = CASES[case]
    path = make(tmp_path, monkeypatch)

    with pytest.raises(ConfigError) as caught:
        load_settings(path)

    printed = "".join(traceback.format_exception(caught.value))
    assert SECRET not in printed
    if cause is None:
        assert caught.value.__cause__ is None
    else:
        assert isinstance(caught.value.__cause__, cause)
