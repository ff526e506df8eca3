"""``syncd check --preview``: the source values and the platform fields they become.

Run as the command line runs it, on real files and a real slapd, with the platform's
secret in a file that does not exist: the preview never needs it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from syncd.cli import run_cli
from tests.support.slapd import Slapd

EMPLOYEES = """id,username,name,department,email,type,title
E1,alice,Alice,R&D,Alice@Example.com,staff,SWE
E2,bob,Bob,R&D,bob@example.com,contractor,SWE
E3,carol,Carol,Sales,carol@example.com,staff,XYZ
E4,dave,Dave,Sales,,staff,SWE
"""

RULES = """
[source.mapping.fields]
email = { transforms = ["lower"] }
job_title = { template = "{title}", transforms = [{ lookup = "titles.csv" }] }
[source.mapping.properties]
"schema-7" = "{type}/{title}"
[source.mapping.filter]
exclude = { type = ["contractor"] }
"""

PLATFORM = """
[platform]
base_url = "http://127.0.0.1:9"
domain_id = "acme"
org_code = "acme"
client_id = "syncd"
client_secret_file = "no-such-secret-file"
org_id = "acme"
"""


def csv_config(tmp_path: Path) -> Path:
    (tmp_path / "employees.csv").write_text(EMPLOYEES)
    (tmp_path / "titles.csv").write_text("title,job title\nSWE,Software Engineer\n")
    path = tmp_path / "syncd.toml"
    path.write_text(
        '[source]\nkind = "csv"\n[source.csv]\nlayout = "paths"\nemployees = "employees.csv"\n'
        + RULES
        + PLATFORM
    )
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(["check", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_table_per_person_without_the_platform_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--config", str(csv_config(tmp_path)), "--preview", "2")

    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "alice  employees.csv:2  synced"
    assert lines[1].split() == ["platform", "field", "from", "source", "values", "value"]
    bob = next(n for n, line in enumerate(lines) if line.startswith("bob"))
    rows = {line.split()[0]: line.split() for line in lines[2:bob]}
    assert rows["email"] == ["email", "email", "|", "lower", "email=Alice@Example.com",
                             "alice@example.com"]  # fmt: skip
    assert rows["positions.job_title"][-3:] == ["title=SWE", "Software", "Engineer"]
    assert "positions.org" in rows and rows["positions.org"][-1] == "R&D"
    assert "properties" in rows and rows["properties"][-1] == "staff/SWE"
    # The second person read is bob, whom the row filter leaves out.
    assert "bob  employees.csv:3  left out: type 'contractor' matches source.mapping.filter" in out
    assert "carol" not in out


def test_named_people_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = str(csv_config(tmp_path))

    code, out, _ = run(capsys, "--config", config, "--preview", "carol", "dave", "--output", "json")

    assert code == 0
    carol, dave = json.loads(out)
    assert (carol["username"], carol["outcome"]) == ("carol", "rejected")
    assert carol["reason"] == (
        "source.mapping.fields.job_title: 'XYZ' is not in the lookup table titles.csv"
    )
    assert dave["outcome"] == "synced"
    fields = {row["field"]: row for row in dave["fields"]}
    assert fields["email"] == {"field": "email", "source": "email | lower",
                               "inputs": {"email": None}, "value": None}  # fmt: skip
    assert fields["positions.job_title"]["value"] == "Software Engineer"
    assert fields["properties schema-7"]["inputs"] == {"type": "staff", "title": "SWE"}


def test_a_name_not_in_the_source_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--config", str(csv_config(tmp_path)), "--preview", "zed")

    assert code == 0
    assert out.splitlines() == ["nobody to preview: no one is named zed", "not in the source: zed"]


def test_an_unknown_output_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, "--config", str(csv_config(tmp_path)), "--preview", "--output", "xml"
    )

    assert code == 3 and "'xml' is not one of 'text', 'json'" in err


def test_ldap_preview_binds_with_its_password_file(
    tmp_path: Path, slapd: Slapd, acme: str, capsys: pytest.CaptureFixture[str]
) -> None:
    password = tmp_path / "bind.pw"
    password.write_text(slapd.password)
    config = tmp_path / "syncd.toml"
    config.write_text(
        f'[source]\nkind = "ldap"\n[source.ldap]\nurls = ["{slapd.url}"]\n'
        f'bind_dn = "{slapd.bind_dn}"\nbind_password_file = "bind.pw"\nusers_base = "{acme}"\n'
        '[source.mapping.fields]\nname = "{sn}, {cn}"\n' + PLATFORM
    )

    code, out, err = run(capsys, "--config", str(config), "--preview", "alice")

    assert code == 0, err
    rows = {line.split()[0]: line for line in out.splitlines()[2:]}
    assert rows["name"].split("  ")[-1] == "Liddell, Alice Liddell"
    assert "sn=Liddell" in rows["name"] and "cn=Alice Liddell" in rows["name"]
    assert rows["positions.org"].endswith("Head Office/R&D/Backend")
    assert slapd.password not in out
