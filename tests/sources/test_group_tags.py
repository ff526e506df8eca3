"""Groups to tags and department heads against a real slapd, and end to end into the
emulator (README "Groups to tags", "Department heads")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from syncd.cli import run_cli
from syncd.config import LdapSource
from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_FAILED, SourceError
from syncd.model import Directory, Employee
from syncd.sources.ldap import read_ldap
from tests.support.admin import AnotherAdmin
from tests.support.slapd import Slapd

ENGINEERING = ("Teams", "Engineering")
FRONTEND = ("Teams", "Frontend")
SALES = ("Teams", "Sales")


def groups_ldif(base: str) -> str:
    """Groups in a container (not an OU, so no department): engineers holds alice and
    the frontenders group, which holds carol and engineers again (a cycle); sales is a
    groupOfUniqueNames with dave (the optional unique id form)."""
    groups = f"cn=groups,{base}"
    backend = f"ou=Backend,ou=R&D,ou=Head Office,{base}"
    return f"""dn: {groups}
objectClass: organizationalRole
cn: groups

dn: cn=engineers,{groups}
objectClass: groupOfNames
cn: engineers
member: uid=alice,{backend}
member: cn=placeholder,{groups}

dn: cn=frontenders,{groups}
objectClass: groupOfNames
cn: frontenders
member: uid=carol,ou=Frontend,ou=R&D,ou=Head Office,{base}
member: cn=engineers,{groups}

dn: cn=sales,{groups}
objectClass: groupOfUniqueNames
cn: sales
uniqueMember: uid=dave,ou=Sales,ou=Head Office,{base}#'0101'B
"""


def add_nesting(slapd: Slapd, base: str) -> None:
    slapd.modify(
        f"dn: cn=engineers,cn=groups,{base}\nchangetype: modify\nadd: member\n"
        f"member: cn=frontenders,cn=groups,{base}\n"
    )


def rules(base: str) -> list[dict[str, str]]:
    return [
        {"group": f"cn=engineers,cn=groups,{base}", "tag_group": "Teams", "tag": "Engineering"},
        {"group": "frontenders", "tag_group": "Teams", "tag": "Frontend"},
        {"group": "SALES", "tag_group": "Teams", "tag": "Sales"},
    ]


def people(directory: Directory) -> dict[str, Employee]:
    return {e.username: e for e in directory.employees.values()}


@pytest.fixture
def tagged(slapd: Slapd, acme: str) -> str:
    slapd.add_ldif(groups_ldif(acme))
    add_nesting(slapd, acme)
    return acme


def test_group_members_nested_groups_and_unique_members_become_tags(
    tagged: str, ldap_settings: Callable[..., LdapSource]
) -> None:
    directory = read_ldap(
        ldap_settings(group_tags=rules(tagged), groups_base=f"cn=groups,{tagged}")
    )
    found = {u: e.tags for u, e in people(directory).items()}
    # alice and carol: each in one group directly, in the other through the cycle.
    assert found["alice"] == (ENGINEERING, FRONTEND)
    assert found["carol"] == (ENGINEERING, FRONTEND)
    assert found["dave"] == (SALES,)
    assert all(found[u] == () for u in found if u not in ("alice", "carol", "dave"))


def test_no_rules_no_tags_and_no_group_search(
    tagged: str, ldap_settings: Callable[..., LdapSource]
) -> None:
    directory = read_ldap(ldap_settings())
    assert all(e.tags == () for e in directory.employees.values())


@pytest.mark.parametrize(
    "group",
    ["nobody-has-this-name", "cn=gone,cn=groups,{base}", "cn=alice-is-no-group,{base}"],
)
def test_a_group_not_found_fails_the_read_naming_it(
    tagged: str, ldap_settings: Callable[..., LdapSource], group: str
) -> None:
    group = group.format(base=tagged)
    settings = ldap_settings(
        group_tags=[*rules(tagged), {"group": group, "tag_group": "T", "tag": "X"}],
        groups_base=f"cn=groups,{tagged}",
    )
    with pytest.raises(SourceError) as caught:
        read_ldap(settings)
    assert group in str(caught.value) and "not found" in str(caught.value)


def test_ou_heads_make_chief_and_a_head_elsewhere_is_a_problem(
    slapd: Slapd, acme: str, ldap_settings: Callable[..., LdapSource]
) -> None:
    backend = f"ou=Backend,ou=R&D,ou=Head Office,{acme}"
    for ou, head in (
        (backend, f"uid=alice,{backend}"),
        (f"ou=R&D,ou=Head Office,{acme}", f"uid=alice,{backend}"),  # alice is not in R&D
        (f"ou=Sales,ou=Head Office,{acme}", f"uid=nobody,{acme}"),
    ):
        slapd.modify(f"dn: {ou}\nchangetype: modify\nadd: seeAlso\nseeAlso: {head}\n")
    directory = read_ldap(ldap_settings(department_head_attribute="seeAlso"))
    found = people(directory)
    assert [p.chief for p in found["alice"].positions] == [True]
    assert not any(p.chief for e in found.values() if e.username != "alice" for p in e.positions)
    problems = "\n".join(directory.warnings)
    assert "'R&D'" in problems and "'alice'" in problems and "no position there" in problems
    assert "'Sales'" in problems and "uid=nobody" in problems
    assert len(directory.warnings) == 2


def write_config(
    path: Path, slapd: Slapd, base: str, emulator: RunningEmulator, **extra: Any
) -> Path:
    lines = [
        f'state_dir = "{path / "state"}"',
        '[source]\nkind = "ldap"\n[source.ldap]',
        f'urls = ["{slapd.url}"]',
        f'bind_dn = "{slapd.bind_dn}"\nbind_password = "{slapd.password}"',
        f'users_base = "{base}"\ngroups_base = "cn=groups,{base}"',
        'department_head_attribute = "seeAlso"',
    ]
    for rule in rules(base):
        lines.append(
            "[[source.ldap.group_tags]]\n" + "\n".join(f'{k} = "{v}"' for k, v in rule.items())
        )
    lines += [
        "[sync]\nmax_removal_ratio = 0.9",
        f'[platform]\nbase_url = "{emulator.base_url}"\ndomain_id = "acme"\norg_code = "acme"',
        'client_id = "syncd"\nclient_secret = "demo-secret"\norg_id = "acme"',
    ]
    config = path / "syncd.toml"
    config.write_text("\n".join(lines) + "\n")
    config.chmod(0o600)
    return config


def platform_tags(admin: AnotherAdmin, username: str) -> set[tuple[str, str]]:
    record = admin.call(
        "GET", f"/v1/admin/organizations/acme/employees/{admin.employee(username)['id']}"
    )
    return {(t["group"], t["tag"]) for t in record["tag_names"]}


def test_end_to_end_tags_and_heads_reach_the_platform_and_admin_tags_stay(
    slapd: Slapd, tagged: str, emulator: RunningEmulator, tmp_path: Path
) -> None:
    backend = f"ou=Backend,ou=R&D,ou=Head Office,{tagged}"
    sales = f"ou=Sales,ou=Head Office,{tagged}"
    slapd.modify(f"dn: {backend}\nchangetype: modify\nadd: seeAlso\nseeAlso: uid=alice,{backend}\n")
    config = write_config(tmp_path, slapd, tagged, emulator)
    admin = AnotherAdmin(emulator)

    assert run_cli(["sync", "--yes", "--config", str(config)]) == 0
    assert platform_tags(admin, "alice") == {ENGINEERING, FRONTEND}
    assert platform_tags(admin, "dave") == {SALES}
    assert platform_tags(admin, "frank") == set()
    assert admin.employee("alice")["positions"][0]["chief"] is True

    # Another admin tags alice and dave by hand, one of them with a tag syncd also sets.
    for username in ("alice", "dave"):
        admin.edit(
            username,
            tag_names=[
                {"group": g, "tag": t}
                for g, t in [*platform_tags(admin, username), ("VIP", "Gold")]
            ],
        )
    # alice leaves the groups (the cycle kept her in frontenders), dave leaves sales;
    # the head of Backend moves to nobody, Sales gets dave.
    slapd.modify(
        f"dn: cn=engineers,cn=groups,{tagged}\nchangetype: modify\ndelete: member\n"
        f"member: uid=alice,{backend}\n"
    )
    slapd.modify(
        f"dn: cn=engineers,cn=groups,{tagged}\nchangetype: modify\ndelete: member\n"
        f"member: cn=frontenders,cn=groups,{tagged}\n"
    )
    slapd.modify(
        f"dn: cn=sales,cn=groups,{tagged}\nchangetype: modify\nreplace: uniqueMember\n"
        f"uniqueMember: uid=grace,ou=Marketing,{tagged}\n"
    )
    slapd.modify(f"dn: {backend}\nchangetype: modify\ndelete: seeAlso\n")
    slapd.modify(f"dn: {sales}\nchangetype: modify\nadd: seeAlso\nseeAlso: uid=dave,{sales}\n")

    assert run_cli(["sync", "--yes", "--config", str(config)]) == 0
    assert platform_tags(admin, "alice") == {("VIP", "Gold")}  # the admin's tag stays
    assert platform_tags(admin, "dave") == {("VIP", "Gold")}
    assert platform_tags(admin, "carol") == {FRONTEND}  # engineers no longer nests her
    assert platform_tags(admin, "grace") == {SALES}
    assert admin.employee("alice")["positions"][0]["chief"] is False
    assert admin.employee("dave")["positions"][0]["chief"] is True

    # Nothing changed: a third run sends nothing, and the admin's tags are still there.
    imports = "POST /v1/admin/organizations/{code}/import-employees"
    before = emulator.stats()["requests"].get(imports, 0)
    assert before >= 2  # the two runs before wrote people
    assert run_cli(["sync", "--yes", "--config", str(config)]) == 0
    assert emulator.stats()["requests"].get(imports, 0) == before
    assert platform_tags(admin, "alice") == {("VIP", "Gold")}


def test_a_failed_group_read_sets_and_removes_no_tag(
    slapd: Slapd, tagged: str, emulator: RunningEmulator, tmp_path: Path
) -> None:
    config = write_config(tmp_path, slapd, tagged, emulator)
    admin = AnotherAdmin(emulator)
    assert run_cli(["sync", "--yes", "--config", str(config)]) == 0
    assert platform_tags(admin, "dave") == {SALES}
    # The sales group goes (and grace joins engineers): the read fails, nothing is sent.
    slapd.modify(
        f"dn: cn=engineers,cn=groups,{tagged}\nchangetype: modify\nadd: member\n"
        f"member: uid=grace,ou=Marketing,{tagged}\n"
    )
    slapd.modify(f"dn: cn=sales,cn=groups,{tagged}\nchangetype: delete\n")
    assert run_cli(["sync", "--yes", "--config", str(config)]) == EXIT_FAILED
    assert platform_tags(admin, "dave") == {SALES}
    assert platform_tags(admin, "grace") == set()


def test_an_incremental_run_tags_the_people_it_reads_and_keeps_the_others(
    slapd: Slapd, tagged: str, emulator: RunningEmulator, tmp_path: Path
) -> None:
    config = write_config(tmp_path, slapd, tagged, emulator)
    admin = AnotherAdmin(emulator)
    dave = f"uid=dave,ou=Sales,ou=Head Office,{tagged}"

    def retitle(title: str) -> None:
        slapd.modify(f"dn: {dave}\nchangetype: modify\nreplace: title\ntitle: {title}\n")

    assert run_cli(["sync", "--yes", "--config", str(config)]) == 0
    retitle("Account Manager")  # the mark moves from the fixture's 2020 to now
    assert run_cli(["sync", "--yes", "--incremental", "--config", str(config)]) == 0
    # dave leaves sales and his entry changes; carol leaves frontenders, her entry does not.
    slapd.modify(
        f"dn: cn=sales,cn=groups,{tagged}\nchangetype: modify\nreplace: uniqueMember\n"
        f"uniqueMember: uid=grace,ou=Marketing,{tagged}\n"
    )
    slapd.modify(
        f"dn: cn=frontenders,cn=groups,{tagged}\nchangetype: modify\ndelete: member\n"
        f"member: uid=carol,ou=Frontend,ou=R&D,ou=Head Office,{tagged}\n"
    )
    retitle("Key Account Manager")
    assert run_cli(["sync", "--yes", "--incremental", "--config", str(config)]) == 0
    assert platform_tags(admin, "dave") == set()  # read: his groups are read with him
    assert platform_tags(admin, "carol") == {ENGINEERING, FRONTEND}  # not read: kept
    assert platform_tags(admin, "grace") == set()  # not read either
    # The next full read finds the rest.
    assert run_cli(["sync", "--yes", "--config", str(config)]) == 0
    assert platform_tags(admin, "carol") == set()
    assert platform_tags(admin, "grace") == {SALES}
