"""Several sources in one settings file: [[sources]] and [join], and the errors that name the
setting."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from syncd.config import load_settings
from syncd.config.sources import normalizing
from syncd.errors import ConfigError
from syncd.sources import describe_sources, join_rules
from tests.support.settings import PLATFORM as PLATFORM_SETTINGS

PLATFORM = PLATFORM_SETTINGS + 'client_secret = "s3cret-value"\n'

HR = """
[[sources]]
name = "hr"
kind = "csv"
[sources.csv]
employees = "hr.csv"
departments = "departments.csv"
"""

AD = """
[[sources]]
name = "ad"
kind = "ldap"
role = "optional"
[sources.ldap]
urls = ["ldaps://dc1.corp.example"]
bind_dn = "CN=syncd,DC=corp,DC=example"
bind_password_file = "ad.pw"
users_base = "DC=corp,DC=example"
flavor = "active_directory"
"""


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("SYNCD_") or name == "CREDENTIALS_DIRECTORY":
            monkeypatch.delenv(name)


def load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "syncd.toml"
    path.write_text(text + PLATFORM, encoding="utf-8")
    path.chmod(0o600)
    (tmp_path / "ad.pw").write_text("ad-Pa55word\n", encoding="utf-8")
    (tmp_path / "ad.pw").chmod(0o600)
    return load_settings(path)


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    return str(caught.value)


def test_several_sources_load_with_their_paths_secrets_and_join(tmp_path: Path) -> None:
    join = """
[join]
key = "sn"
keys = { ad = "extra.employeeID" }
missing = "partial"
[join.precedence]
name = ["hr"]
department = ["hr"]
status = ["hr", "ad"]
email = ["ad", "hr"]
"""
    settings = load(tmp_path, HR + AD + join)
    from syncd.config import Settings

    assert isinstance(settings, Settings)
    assert settings.source is None and [s.name for s in settings.sources] == ["hr", "ad"]
    hr, ad = settings.sources
    assert hr.csv is not None and hr.csv.employees == tmp_path / "hr.csv"  # relative to the file
    assert ad.ldap is not None and ad.ldap.bind_password is not None
    assert ad.ldap.bind_password.get_secret_value() == "ad-Pa55word"  # from its file
    assert "ad-Pa55word" in settings.secret_values()  # redacted from logs
    assert ad.role == "optional" and hr.role == "required"
    rules = join_rules(settings)
    assert rules.missing == "partial"
    assert rules.precedence["positions"] == ("hr",) and rules.precedence["state"] == ("hr", "ad")
    assert describe_sources(settings).startswith("hr=csv:")
    assert "Pa55word" not in describe_sources(settings)


def test_the_single_source_is_unchanged(tmp_path: Path) -> None:
    text = '[source]\nkind = "csv"\n[source.csv]\nlayout = "paths"\nemployees = "people.csv"\n'
    settings = load(tmp_path, text)
    from syncd.config import Settings

    assert isinstance(settings, Settings)
    assert settings.source is not None and not settings.sources and not settings.joined


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (HR + HR, "sources: two sources are named 'hr'"),
        (HR + AD + '[join.precedence]\nemail = ["hr", "aad"]\n',
         "join.precedence.email: no source is named 'aad' (the sources: hr, ad)"),
        (HR + AD + '[join.keys]\nadd = "email"\n', "join.keys.add: no source is named 'add'"),
        (HR + AD + "[join.precedence]\nemail = []\n",
         "join.precedence.email: no source is named, so nobody provides email"),
        (HR + AD + '[join.precedence]\nmail = ["ad"]\n', "join.precedence.mail: not a field"),
        (HR + '[join]\nkey = "phone"\n', "'phone' cannot join people"),
        (HR + '[source]\nkind = "csv"\n[source.csv]\nemployees = "a.csv"\nlayout = "paths"\n',
         "both [source] and [[sources]] are given"),
        ('[join]\nkey = "sn"\n', "key source: required key is missing ([source] or [[sources]])"),
        (AD + '[join]\nmissing = "wait"\n', 'join.missing = "wait" needs a source whose role is'),
        (HR.replace('name = "hr"', 'name = "HR dept"'), "a source's name is lower-case"),
        (HR + AD + '[join.normalize]\nhrr = ["strip"]\n',
         "join.normalize.hrr: no source is named 'hrr' (the sources: hr, ad)"),
        (HR + '[join.normalize]\nhr = ["trim"]\n',
         "'strip', 'nfkc', 'casefold' or 'leading_zeros'"),
        (HR + '[join.normalize]\nhr = ["strip", "strip"]\n',
         "join.normalize.hr: a step is named twice"),
        (HR + '[join]\nclear = ["username"]\n', "join.clear: 'username' cannot be cleared"),
        (HR + '[join]\nclear = ["status"]\n', "join.clear: 'status' cannot be cleared"),
        (HR + '[join]\nclear = ["phone"]\n', "join.clear: 'phone' cannot be cleared"),
    ],
)  # fmt: skip
def test_settings_that_cannot_join_are_errors_naming_the_setting(
    tmp_path: Path, text: str, expected: str
) -> None:
    assert expected in error(tmp_path, text)


def test_a_field_nobody_provides_is_an_error(tmp_path: Path) -> None:
    text = HR.replace(
        'departments.csv"\n', 'departments.csv"\n[sources.csv.columns]\nmobile = ""\n'
    )
    message = error(tmp_path, text + '[join.precedence]\nmobile = ["hr"]\n')
    assert "join.precedence.mobile: nobody provides mobile" in message


def test_the_two_source_example_settings_load() -> None:
    from syncd.config import Settings

    example = Path(__file__).resolve().parents[2] / "config" / "two-sources.example.toml"
    settings = load_settings(example, require_secrets=False)
    assert isinstance(settings, Settings)
    assert [(s.name, s.kind) for s in settings.sources] == [("hr", "csv"), ("ad", "ldap")]
    assert join_rules(settings).precedence["positions"] == ("hr",)
    assert join_rules(settings).clear == frozenset({"mobile"})
    assert settings.join is not None
    assert normalizing(settings.join, "ad") == ("strip", "nfkc", "leading_zeros")


def test_key_steps_apply_in_one_order_and_a_source_not_named_is_stripped(tmp_path: Path) -> None:
    text = '[join]\nclear = ["tel", "email"]\n[join.normalize]\nhr = ["leading_zeros", "strip"]\n'
    settings = load(tmp_path, HR + AD + text)
    from syncd.config import Settings

    assert isinstance(settings, Settings) and settings.join is not None
    assert normalizing(settings.join, "hr") == ("strip", "leading_zeros")
    assert normalizing(settings.join, "ad") == ("strip",)
    assert join_rules(settings).clear == frozenset({"tel", "email"})
