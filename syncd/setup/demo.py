"""The quickstart demo: the sample company synced into a local emulator, changed, synced again."""

from __future__ import annotations

import csv
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from syncd.data import SAMPLE
from syncd.errors import ConfigError

SAMPLE_FILES = ("employees.csv", "departments.csv", "directory.csv")
MARKER = ".syncd-demo"  # written into every demo folder: only such a folder is ever cleared
# Everything a demo writes into its folder; nothing else there is touched.
DEMO_FILES = (*SAMPLE_FILES, "syncd.toml", "report.html", "state", MARKER)


ONE_SOURCE = [
    "[source]",
    'kind = "csv"',
    "[source.csv]",
    'employees = "employees.csv"',
    'departments = "departments.csv"',
    "# A mapping rule: English names family name first (Jianguo Wang -> Wang Jianguo).",
    "[source.mapping.fields]",
    "en_name = { transforms = [{ replace = ['^(\\S+) (\\S+)$', '\\2 \\1'] }] }",
]
# `syncd demo --two-sources`: the HR export and a directory's export (as an AD domain would
# give it), joined on the work number: HR decides who works where, the directory decides
# usernames, e-mail and mobiles.
TWO_SOURCES = [
    "[[sources]]",
    'name = "hr"',
    'kind = "csv"',
    "[sources.csv]",
    'employees = "employees.csv"',
    'departments = "departments.csv"',
    "[[sources]]",
    'name = "directory"',
    'kind = "csv"',
    "[sources.csv]",
    'layout = "paths"',
    'employees = "directory.csv"',
    "[sources.csv.columns]",
    'id = "objectGUID"',
    'username = "sAMAccountName"',
    'name = "displayName"',
    'email = "mail"',
    'sn = "employeeID"',
    "[join]",
    'key = "sn"',
    'missing = "wait"',
    "[join.precedence]",
    'name = ["hr"]',
    'department = ["hr"]',
    'job_title = ["hr"]',
    'status = ["hr"]',
    'username = ["directory"]',
    'email = ["directory"]',
    'mobile = ["directory", "hr"]',
]


def prepare(folder: Path, base_url: str, client_secret: str, two_sources: bool = False) -> Path:
    """A fresh demo folder with copies of the sample data and settings; returns their path.

    The folder must be new, empty, or a previous demo's: then only the demo's own files are
    replaced. Never delete what syncd did not write.
    """
    _clear(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).write_text("written by `syncd demo`\n", encoding="utf-8")
    for name in SAMPLE_FILES:
        (folder / name).write_bytes(SAMPLE.joinpath(name).read_bytes())
    settings = folder / "syncd.toml"
    settings.write_text(
        "\n".join(
            [
                "# Written by `syncd demo`: the sample company and a local platform emulator.",
                'state_dir = "state"',
                *(TWO_SOURCES if two_sources else ONE_SOURCE),
                "[platform]",
                f'base_url = "{base_url}"',
                'domain_id = "acme"',
                'org_code = "acme"',
                'client_id = "syncd"',
                f'client_secret = "{client_secret}"',
                'org_id = "acme"',
                "",
            ]
        ),
        encoding="utf-8",
    )
    settings.chmod(0o600)
    return settings


@contextmanager
def own_settings_only() -> Iterator[None]:
    """Within the block, no SYNCD_* variable but SYNCD_CONFIG is in the environment: the
    demo's settings are its file's alone. A shell that follows the first-sync guide has
    exported SYNCD_PLATFORM__CLIENT_SECRET for the user's own emulator; read beside the
    demo's file, that would be a secret given twice (a settings error), and any other
    variable would point the demo elsewhere."""
    held = {
        name: os.environ.pop(name)
        for name in list(os.environ)
        if name.upper().startswith("SYNCD_") and name.upper() != "SYNCD_CONFIG"
    }
    try:
        yield
    finally:
        os.environ.update(held)


def _clear(folder: Path) -> None:
    if not folder.exists():
        return
    if not folder.is_dir():
        raise ConfigError(f"demo folder {folder}: it is a file, not a folder")
    if not (folder / MARKER).exists():
        if any(folder.iterdir()):
            raise ConfigError(
                f"demo folder {folder}: it is not empty and not a previous demo's; give a new "
                "or empty folder (the demo never deletes files it did not write)"
            )
        return
    for name in DEMO_FILES:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


def change_company(folder: Path, two_sources: bool = False) -> list[str]:
    """What HR changed since the first sync: a hire, a leaver, a move. Returns what was done."""
    path = folder / "employees.csv"
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    fields = list(rows[0])
    rows = [r for r in rows if r["id"] != "E0003"]
    for row in rows:
        if row["id"] == "E0004":
            row["department"] = "D03"
    hire = dict(rows[-1])
    hire.update(
        id="E0041", username="linxue", name="林雪", en_name="Xue Lin", department="D04",
        positions="", job_title="前端工程师", email="linxue@example.com", mobile="13800000041",
        tel="", sn="10041", status="在职",
    )  # fmt: skip
    rows.append(hire)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    if two_sources:  # the directory too: the hire's account made, the leaver's deleted
        directory = folder / "directory.csv"
        with directory.open(encoding="utf-8", newline="") as handle:
            accounts = [r for r in csv.reader(handle) if r[1] != "chenzhiqiang"]
        accounts.append(
            ["6f1c0041-0000-4000-8000-000000000041", "linxue", "Xue Lin",
             "linxue@corp.example", "13800000041", "10041", ""]
        )  # fmt: skip
        with directory.open("w", encoding="utf-8", newline="") as handle:
            csv.writer(handle, lineterminator="\n").writerows(accounts)
    return [
        "hired 林雪 (linxue) into 前端开发部",
        "陈志强 (chenzhiqiang) left the company",
        "赵磊 (zhaolei) moved from 研发中心 to 后端开发部",
    ]
