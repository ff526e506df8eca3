"""A minimal settings file for the tests that load one: a CSV source and the platform, with
no secret (each test adds its own client_secret, client_secret_file or bad value)."""

from __future__ import annotations

from pathlib import Path

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
