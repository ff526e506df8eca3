"""Settings files for the tests that load one: a minimal one (a CSV source and the platform,
no secret: each test adds its own client_secret, client_secret_file or bad value), the
emulator's [platform] section for whole runs, and whole LDAP runs' settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from syncd.config import Settings, load_settings
from syncd.emulator import RunningEmulator
from tests.support.slapd import Slapd

PLATFORM = """
[platform]
base_url = "https://platform.example"
domain_id = "acme"
org_code = "acme"
client_id = "syncd"
org_id = "1"
"""

CSV_SETTINGS = """
[source]
kind = "csv"
[source.csv]
layout = "paths"
employees = "people.csv"
""" + PLATFORM.lstrip("\n")


def write_settings(folder: Path, text: str | bytes, mode: int = 0o600) -> Path:
    """``text`` as ``folder``/syncd.toml, readable by its owner only unless ``mode`` says."""
    path = folder / "syncd.toml"
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    path.chmod(mode)
    return path


def csv_source_lines(
    name: str,
    employees: Path,
    columns: Mapping[str, str],
    departments: Path | None = None,
    more: Sequence[str] = (),
) -> list[str]:
    """One ``[[sources]]`` CSV source of several: its ``columns``, then ``more`` lines. With
    a ``departments`` file, its status read as "active" or "departed"; else the paths
    layout (departments named in the employees' file, no status)."""
    if departments is None:
        kept = ['layout = "paths"', f'employees = "{employees}"']
    else:
        kept = [
            f'employees = "{employees}"',
            f'departments = "{departments}"',
            'departed_values = ["departed"]',
            'active_values = ["active"]',
        ]
    named = [f'{key} = "{value}"' for key, value in columns.items()]
    return [
        "[[sources]]",
        f'name = "{name}"',
        'kind = "csv"',
        "[sources.csv]",
        *kept,
        "[sources.csv.columns]",
        *named,
        *more,
    ]


def joined_settings(
    folder: Path,
    emulator: RunningEmulator,
    key: str,
    columns: tuple[Mapping[str, str], Mapping[str, str]],
    more: Sequence[str] = (),
) -> Path:
    """Settings of whole runs from HR's export (``hr.csv`` with ``departments.csv``: it
    decides names, departments and status) joined on ``key`` with a directory's export of
    accounts (``ad.csv``, in the paths layout: it decides usernames); ``columns``: each
    source's, ``more`` added to both."""
    hr, ad = columns
    lines = [
        f'state_dir = "{folder / "state"}"',
        *csv_source_lines("hr", folder / "hr.csv", hr, folder / "departments.csv", more),
        *csv_source_lines("ad", folder / "ad.csv", ad, more=more),
        "[join]",
        f'key = "{key}"',
        "[join.precedence]",
        'name = ["hr"]',
        'department = ["hr"]',
        'status = ["hr"]',
        'username = ["ad"]',
        *emulator_platform(emulator),
    ]
    return write_settings(folder, "\n".join(lines) + "\n")


def emulator_platform(emulator: RunningEmulator) -> list[str]:
    """The [platform] section's lines for whole runs against the emulator (quick retries)."""
    return [
        "[platform]",
        f'base_url = "{emulator.base_url}"',
        'domain_id = "acme"',
        'org_code = "acme"',
        'client_id = "syncd"',
        'client_secret = "demo-secret"',
        'org_id = "acme"',
        "retry_backoff = 0.01",
    ]


def ldap_run_settings(
    slapd: Slapd,
    base: str,
    emulator: RunningEmulator,
    folder: Path,
    *,
    ldap: str = "",
    more: str = "",
) -> Settings:
    """Settings of whole runs from ``slapd`` (people under ``base``) to the emulator, state in
    ``folder``: ``ldap`` is added to [source.ldap], ``more`` (whole sections) at the end."""
    text = (
        f'state_dir = "{folder / "state"}"\n'
        f'[source]\nkind = "ldap"\n[source.ldap]\nurls = ["{slapd.url}"]\n'
        f'bind_dn = "{slapd.bind_dn}"\nbind_password = "{slapd.password}"\n'
        f'users_base = "{base}"\n' + ldap + "\n".join(emulator_platform(emulator)) + "\n" + more
    )
    return load_settings(write_settings(folder, text))
