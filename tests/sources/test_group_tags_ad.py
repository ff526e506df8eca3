"""Groups to tags and department heads on a real Active Directory domain controller
(Samba AD): nested groups through the in-chain matching rule, ``managedBy`` on an OU."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import ldap3
import pytest

from syncd.cli import run_cli
from syncd.config import LdapSource
from syncd.emulator import RunningEmulator
from syncd.errors import SourceError
from syncd.model import Employee
from syncd.sources.ldap import read_ldap
from tests.support.admin import AnotherAdmin
from tests.support.samba import BASE, SambaDC, ad_source
from tests.support.slapd import TlsFiles

TAGGED = f"OU=Tagged,{BASE}"
ENG = f"OU=Eng,{TAGGED}"
OPS = f"OU=Ops,{TAGGED}"
GROUPS = f"OU=TagGroups,{BASE}"  # outside the people's base: not a department
DEVS = ("Teams", "Developers")
ONCALL = ("Duty", "On call")
RULES = [
    {"group": f"CN=Devs,{GROUPS}", "tag_group": "Teams", "tag": "Developers"},
    {"group": "oncall", "tag_group": "Duty", "tag": "On call"},  # by sAMAccountName
]


@pytest.fixture(scope="module")
def tagged_domain(samba_dc: SambaDC) -> Iterator[SambaDC]:
    """OU=Tagged: Eng (tom, una), Ops (vic, wes); groups Devs > Interns > Trainees
    (nested twice), oncall; Eng is managed by tom, Ops by una (who is not in Ops)."""
    samba_dc.add(TAGGED, "organizationalUnit", {})
    samba_dc.add(GROUPS, "organizationalUnit", {})
    for ou in (ENG, OPS):
        samba_dc.add(ou, "organizationalUnit", {})
    for name, ou in (("tom", ENG), ("una", ENG), ("vic", OPS), ("wes", OPS)):
        samba_dc.add(
            f"CN={name},{ou}", "user", {"sAMAccountName": name, "userAccountControl": "544"}
        )
    samba_dc.add(
        f"CN=Trainees,{GROUPS}",
        "group",
        {"sAMAccountName": "trainees", "member": [f"CN=vic,{OPS}"]},
    )
    samba_dc.add(
        f"CN=Interns,{GROUPS}",
        "group",
        {"sAMAccountName": "interns", "member": [f"CN=una,{ENG}", f"CN=Trainees,{GROUPS}"]},
    )
    samba_dc.add(
        f"CN=Devs,{GROUPS}",
        "group",
        {"sAMAccountName": "devs", "member": [f"CN=tom,{ENG}", f"CN=Interns,{GROUPS}"]},
    )
    samba_dc.add(
        f"CN=Oncall,{GROUPS}", "group", {"sAMAccountName": "oncall", "member": [f"CN=wes,{OPS}"]}
    )
    samba_dc.modify(ENG, {"managedBy": f"CN=tom,{ENG}"})
    samba_dc.modify(OPS, {"managedBy": f"CN=una,{ENG}"})
    yield samba_dc


@pytest.fixture
def settings(tagged_domain: SambaDC, tls_files: TlsFiles) -> Callable[..., LdapSource]:
    return partial(
        ad_source,
        tagged_domain,
        tls_files,
        users_base=TAGGED,
        groups_base=GROUPS,
        group_tags=RULES,
        department_head_attribute="managedBy",
    )


def by_username(settings: LdapSource) -> tuple[dict[str, Employee], tuple[str, ...]]:
    directory = read_ldap(settings)
    return {e.username: e for e in directory.employees.values()}, directory.warnings


def test_nested_groups_through_the_in_chain_rule_become_tags(
    settings: Callable[..., LdapSource],
) -> None:
    found, _ = by_username(settings())
    assert found["tom"].tags == (DEVS,)
    assert found["una"].tags == (DEVS,)  # Devs > Interns
    assert found["vic"].tags == (DEVS,)  # Devs > Interns > Trainees
    assert found["wes"].tags == (ONCALL,)


def test_managed_by_makes_chief_and_a_manager_from_elsewhere_is_a_problem(
    settings: Callable[..., LdapSource],
) -> None:
    found, warnings = by_username(settings())
    assert [p.chief for p in found["tom"].positions] == [True]
    assert [p.chief for p in found["una"].positions] == [False]  # heads Ops, placed in Eng
    assert not any(p.chief for p in found["vic"].positions + found["wes"].positions)
    [problem] = warnings
    assert "'Ops'" in problem and "'una'" in problem and "no position there" in problem


def test_an_unknown_group_name_fails_the_read(settings: Callable[..., LdapSource]) -> None:
    rules = [*RULES, {"group": "no-such-group", "tag_group": "T", "tag": "X"}]
    with pytest.raises(SourceError, match=r"no-such-group.*not found"):
        read_ldap(settings(group_tags=rules))


def test_end_to_end_a_nested_member_leaving_loses_the_tag_syncd_set_only(
    tagged_domain: SambaDC,
    settings: Callable[..., LdapSource],
    tls_files: TlsFiles,
    emulator: RunningEmulator,
    tmp_path: Path,
) -> None:
    source = settings()
    config = tmp_path / "syncd.toml"
    rules = "".join(
        "[[source.ldap.group_tags]]\n" + "".join(f'{k} = "{v}"\n' for k, v in rule.items())
        for rule in RULES
    )
    config.write_text(
        f'state_dir = "{tmp_path / "state"}"\n'
        '[source]\nkind = "ldap"\n[source.ldap]\nflavor = "active_directory"\n'
        f'urls = ["{tagged_domain.url}"]\nca_file = "{tls_files.ca_cert}"\n'
        f'bind_dn = "{tagged_domain.bind_dn}"\nbind_password = "{tagged_domain.password}"\n'
        f'users_base = "{source.users_base}"\ngroups_base = "{GROUPS}"\n'
        'department_head_attribute = "managedBy"\n'
        f"{rules}"
        f'[platform]\nbase_url = "{emulator.base_url}"\ndomain_id = "acme"\norg_code = "acme"\n'
        'client_id = "syncd"\nclient_secret = "demo-secret"\norg_id = "acme"\n'
    )
    config.chmod(0o600)
    admin = AnotherAdmin(emulator)

    def tags(username: str) -> set[tuple[str, str]]:
        record = admin.call(
            "GET", f"/v1/admin/organizations/acme/employees/{admin.employee(username)['id']}"
        )
        return {(t["group"], t["tag"]) for t in record["tag_names"]}

    assert run_cli(["sync", "--yes", "--config", str(config)]) == 0
    assert tags("vic") == {DEVS} and tags("wes") == {ONCALL}
    assert admin.employee("tom")["positions"][0]["chief"] is True
    admin.edit(
        "vic", tag_names=[{"group": "Teams", "tag": "Developers"}, {"group": "Site", "tag": "HQ"}]
    )

    # Trainees leaves Interns: vic, two levels down, is no longer in Devs.
    with tagged_domain.connection() as conn:
        assert conn.modify(
            f"CN=Interns,{GROUPS}", {"member": [(ldap3.MODIFY_DELETE, [f"CN=Trainees,{GROUPS}"])]}
        ), conn.result
    assert run_cli(["sync", "--yes", "--config", str(config)]) == 0
    assert tags("vic") == {("Site", "HQ")}
    assert tags("una") == {DEVS}
