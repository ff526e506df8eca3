"""Several sources end to end: an HR CSV export and real slapd "domains", joined and synced
into the emulator over HTTP. HR decides names, departments, titles and status; the
directory decides usernames, e-mail and mobiles; people are joined on the employee number."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from syncd.config import Settings, load_settings
from syncd.emulator import RunningEmulator
from syncd.run.runner import RunRequest, RunResult, run_sync
from syncd.sources.preview import preview
from tests.support.samba import BASE, SambaDC
from tests.support.settings import emulator_platform
from tests.support.slapd import Slapd, TlsFiles

HR_COLUMNS = "emp_no,name,department,job_title,status"
DEPARTMENTS = "id,name,parent_id\nD1,Head Office,\nD2,R&D,D1\n"


def person_ldif(base: str, uid: str, number: str, *, mobile: str = "") -> str:
    lines = [
        f"dn: uid={uid},{base}",
        "objectClass: inetOrgPerson",
        f"uid: {uid}",
        f"cn: {uid.title()} (directory)",
        f"sn: {uid}",
        f"mail: {uid}@corp.example",
        f"employeeNumber: {number}",
    ]
    if mobile:
        lines.append(f"mobile: {mobile}")
    return "\n".join(lines) + "\n"


def ldap_source(name: str, server: Slapd, base: str, role: str = "required") -> list[str]:
    return [
        "[[sources]]",
        f'name = "{name}"',
        'kind = "ldap"',
        f'role = "{role}"',
        "[sources.ldap]",
        f'urls = ["{server.url}"]',
        f'bind_dn = "{server.bind_dn}"',
        f'bind_password = "{server.password}"',
        f'users_base = "{base}"',
        'departed_filter = "(employeeType=departed)"',
    ]


class Company:
    """The HR export, the settings, and the emulator of one test."""

    def __init__(self, folder: Path, emulator: RunningEmulator, domains: list[list[str]]) -> None:
        self.folder, self.emulator, self.domains = folder, emulator, domains
        self.hr: dict[str, str] = {}  # emp_no -> the rest of the row
        self.missing = "wait"

    def write(self) -> Settings:
        (self.folder / "departments.csv").write_text(DEPARTMENTS, encoding="utf-8")
        rows = [HR_COLUMNS, *(f"{k},{v}" for k, v in self.hr.items())]
        (self.folder / "hr.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
        lines = [
            f'state_dir = "{self.folder / "state"}"',
            "[[sources]]",
            'name = "hr"',
            'kind = "csv"',
            "[sources.csv]",
            f'employees = "{self.folder / "hr.csv"}"',
            f'departments = "{self.folder / "departments.csv"}"',
            'departed_values = ["departed"]',
            "[sources.csv.columns]",
            'id = "emp_no"',
            'username = "emp_no"',  # HR has no usernames: the join takes the directory's
            'sn = "emp_no"',
            *(line for domain in self.domains for line in domain),
            "[join]",
            'key = "sn"',
            f'missing = "{self.missing}"',
            "[join.precedence]",
            'name = ["hr"]',
            'department = ["hr"]',
            'job_title = ["hr"]',
            'status = ["hr"]',
            f"username = {json.dumps(self.domain_names())}",
            f"email = {json.dumps(self.domain_names())}",
            f"mobile = {json.dumps(self.domain_names())}",
            *emulator_platform(self.emulator),
        ]
        path = self.folder / "syncd.toml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        path.chmod(0o600)
        return load_settings(path)

    def domain_names(self) -> list[str]:
        return [json.loads(d[1].split(" = ")[1]) for d in self.domains]

    def sync(self, **request: Any) -> RunResult:
        return run_sync(self.write(), RunRequest(**request))

    def people(self) -> dict[str, dict[str, Any]]:
        state = self.emulator.state()
        nodes = {n["id"]: n for n in state["nodes"]}
        found = {}
        for e in state["employees"]:
            primary = [nodes[p["org_id"]] for p in e["positions"] if p["primary"]]
            found[e["username"]] = {
                "name": e["name"],
                "id": e.get("extension_id"),
                "email": e.get("email"),
                "mobile": e.get("mobile"),
                "place": primary[0].get("serial_no") if primary else None,
                "title": primary[0] and e["positions"][0].get("job_title"),
                "locked": bool(e["locked"]),
            }
        return found

    def writes(self) -> int:
        requests: dict[str, int] = self.emulator.stats()["requests"]
        return sum(n for k, n in requests.items() if k.startswith(("POST /v1/admin", "DELETE")))


def test_hr_csv_and_slapd_joined_on_the_employee_number_sync_end_to_end(
    tmp_path: Path, emulator: RunningEmulator, own_slapd: Slapd
) -> None:
    base = own_slapd.suffix
    own_slapd.add_ldif(person_ldif(base, "ann", "100", mobile="13800000001"))
    own_slapd.add_ldif(person_ldif(base, "bob", "200"))
    own_slapd.add_ldif(person_ldif(base, "zed", "900"))  # no HR row: waits
    company = Company(tmp_path, emulator, [ldap_source("ad", own_slapd, base)])
    company.hr = {
        "100": "Ann Lee,D2,CEO,active",
        "200": "Bob Stone,D1,Clerk,active",
        "300": "Cat Wu,D1,Clerk,active",  # no directory account yet: waits
    }

    first = company.sync()

    assert first.outcome == "ok", first.error
    people = company.people()
    assert set(people) == {"ann", "bob"}
    ann = people["ann"]
    assert ann["name"] == "Ann Lee" and ann["id"] == "100"  # HR's name; the key as the id
    assert ann["email"] == "ann@corp.example" and ann["mobile"] == "13800000001"  # the directory's
    assert ann["place"] == "D2" and not ann["locked"]
    assert first.directory is not None
    held = {r.key: r for r in first.directory.rejected}
    assert "waiting for source 'ad'" in held["300"].reason
    assert "waiting for source 'hr'" in held["900"].reason

    # Bob's account leaves the directory (HR still employs him); Cat's account arrives; HR
    # says Ann left.
    own_slapd.modify(f"dn: uid=bob,{base}\nchangetype: delete\n")
    own_slapd.add_ldif(person_ldif(base, "cat", "300"))
    company.hr["100"] = "Ann Lee,D2,CEO,departed"

    second = company.sync(allow_removals=1)  # Ann's lock: one, reviewed

    assert second.outcome == "ok", second.error
    people = company.people()
    assert people["bob"] == {**people["bob"], "locked": False, "name": "Bob Stone"}  # kept
    assert people["cat"]["name"] == "Cat Wu" and people["cat"]["email"] == "cat@corp.example"
    assert people["ann"]["locked"]

    # HR says Bob left too: his directory account is gone already, yet he is locked (with
    # the username he was synced with), not kept for want of one.
    company.hr["200"] = "Bob Stone,D1,Clerk,departed"
    third = company.sync(allow_removals=1)
    assert third.outcome == "ok", third.error
    people = company.people()
    assert people["bob"]["locked"] and not people["cat"]["locked"]

    # The directory cannot be read: the run fails before anything is sent.
    before = company.writes()
    own_slapd.stop()
    fourth = company.sync()
    assert fourth.outcome == "failed" and fourth.error is not None
    assert fourth.error.startswith("source 'ad': ")
    assert company.writes() == before
    assert company.people() == people


def test_preview_names_the_source_of_each_field(
    tmp_path: Path, emulator: RunningEmulator, slapd: Slapd, ldap_base: str
) -> None:
    slapd.add_ldif(person_ldif(ldap_base, "ann", "100", mobile="13800000001"))
    company = Company(tmp_path, emulator, [ldap_source("ad", slapd, ldap_base)])
    company.hr = {"100": "Ann Lee,D2,CEO,active", "300": "Cat Wu,D1,Clerk,active"}

    shown = preview(company.write(), ["ann"])

    assert [p.username for p in shown] == ["ann"]
    ann = {row.field: (row.source, row.value) for row in shown[0].fields}
    assert ann["name"] == ("hr: name", "Ann Lee")
    assert ann["username"] == ("ad: uid", "ann")
    assert ann["email"] == ("ad: mail", "ann@corp.example")
    assert ann["positions.org"] == ("hr: department", "Head Office/R&D")
    assert ann["extension_id"] == ("the join key", "100")
    assert shown[0].where.startswith("hr: ") and " + ad: uid=ann," in shown[0].where
    # Cat has no directory account yet: named by her HR row, she is shown waiting.
    (cat,) = preview(company.write(), ["300", "nobody"])  # one number alone: N people
    assert cat.outcome == "rejected" and cat.reason is not None
    assert cat.reason.startswith("waiting for source 'ad'") and cat.where == "hr: key '300'"


def test_an_hr_export_and_two_directory_domains(
    tmp_path: Path,
    emulator: RunningEmulator,
    slapd: Slapd,
    ldap_base: str,
    own_slapd: Slapd,
) -> None:
    """Two domains (after an acquisition), each a slapd of its own: each holds some of the
    people; both are optional, HR says who is employed."""
    acquired = own_slapd.suffix
    slapd.add_ldif(person_ldif(ldap_base, "ann", "100"))
    own_slapd.add_ldif(person_ldif(acquired, "dev", "400", mobile="13900000004"))
    company = Company(
        tmp_path,
        emulator,
        [
            ldap_source("corp", slapd, ldap_base, role="optional"),
            ldap_source("acquired", own_slapd, acquired, role="optional"),
        ],
    )
    company.hr = {"100": "Ann Lee,D2,CEO,active", "400": "Dev Rao,D1,Engineer,active"}

    result = company.sync()

    assert result.outcome == "ok", result.error
    people = company.people()
    assert set(people) == {"ann", "dev"}
    assert people["dev"]["name"] == "Dev Rao" and people["dev"]["mobile"] == "13900000004"
    assert people["dev"]["id"] == "400" and people["ann"]["id"] == "100"


def test_an_hr_export_a_samba_ad_domain_and_a_slapd_domain(
    tmp_path: Path,
    emulator: RunningEmulator,
    samba_dc: SambaDC,
    tls_files: TlsFiles,
    own_slapd: Slapd,
) -> None:
    """A real Active Directory domain controller (Samba) for the company, a slapd for the
    acquired one: AD's employeeID and the slapd's employeeNumber both hold the HR number.
    (One Samba DC: a second Samba domain does not fit the tests' time; the child domain of
    tests/support/samba.py stands for forests elsewhere.)"""
    own_slapd.add_ldif(person_ldif(own_slapd.suffix, "dev", "400", mobile="13900000004"))
    corp = ldap_source("corp", own_slapd, own_slapd.suffix, role="optional")
    corp[1] = 'name = "ad"'
    corp[4:] = [
        "[sources.ldap]",
        f'urls = ["{samba_dc.url}"]',
        'flavor = "active_directory"',
        f'ca_file = "{tls_files.ca_cert}"',
        f'bind_dn = "{samba_dc.bind_dn}"',
        f'bind_password = "{samba_dc.password}"',
        f'users_base = "OU=Acme,{BASE}"',
    ]
    acquired = ldap_source("acquired", own_slapd, own_slapd.suffix, role="optional")
    company = Company(tmp_path, emulator, [corp, acquired])
    company.hr = {"1001": "Alice Liddell,D2,Engineer,active", "400": "Dev Rao,D1,Engineer,active"}

    result = company.sync()

    assert result.outcome == "ok", result.error
    people = company.people()
    assert set(people) == {"alice", "dev"}
    alice = people["alice"]
    assert (alice["name"], alice["id"], alice["email"]) == (
        "Alice Liddell",  # HR's, not AD's displayName
        "1001",
        "alice@acme.test",  # AD's
    )
    assert alice["place"] == "D2"
    assert people["dev"]["mobile"] == "13900000004"
    assert result.directory is not None  # AD's people without an employeeID: kept, said
    unkeyed = {r.username for r in result.directory.rejected if "no join key" in r.reason}
    assert {"bob", "carol", "dave"} <= unkeyed
