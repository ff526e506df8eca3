"""Several values of one attribute, against a real slapd: a rule per field, never "the first".

slapd returns an attribute's values in the order they were stored, and a change stores
new values last: replacing ``ou: Accounting`` by ``ou: Payroll`` beside ``ou: People``
turns [Accounting, People] into [People, Payroll]. Whatever the order, the read is the same.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from syncd.config import LdapSource, PhotoSettings, load_settings
from syncd.mapping import SourceMapping
from syncd.model import Directory, Employee, Kind, RejectedRow
from syncd.run.runner import RunRequest, run_sync
from syncd.sources.ldap import read_ldap
from syncd.sources.ldap.values import Choices, Picker, Rule, SlotRule, rdn_values
from syncd.sources.ldap.wire import Several, WithSeveral
from tests.support.admin import ORG, AnotherAdmin
from tests.support.examples import examples
from tests.support.images import jpeg
from tests.support.slapd import Slapd

SettingsFactory = Callable[..., LdapSource]
BY_OU = {"departments_from": "attribute", "department_attribute": "ou"}

# A 389 Directory Server export: people below ou=People carry "ou: People" beside their
# department. bob's values are stored the other way round.
PEOPLE_OU = """\
dn: ou=People,{base}
objectClass: organizationalUnit
ou: People

dn: uid=alice,ou=People,{base}
objectClass: inetOrgPerson
uid: alice
cn: Alice Liddell
sn: Liddell
mail: alice@acme.example
ou: Accounting
ou: People

dn: uid=bob,ou=People,{base}
objectClass: inetOrgPerson
uid: bob
cn: Bob Builder
sn: Builder
mail: bob@acme.example
ou: People
ou: Accounting
"""

ACCOUNTING_TO_PAYROLL = """\
dn: uid=alice,ou=People,{base}
changetype: modify
delete: ou
ou: Accounting
-
add: ou
ou: Payroll
"""


def people(directory: Directory) -> dict[str, Employee]:
    return {e.username: e for e in directory.employees.values()}


def rows(directory: Directory) -> dict[str, RejectedRow]:
    """Rejected rows by the DN's first RDN (uid=alice)."""
    return {row.where.partition(",")[0]: row for row in directory.rejected}


def departments_of(employee: Employee) -> list[tuple[str | None, bool]]:
    return [(p.department_id, p.primary) for p in employee.positions]


@pytest.fixture
def people_base(slapd: Slapd, ldap_base: str) -> str:
    slapd.add_ldif(PEOPLE_OU.format(base=ldap_base))
    return f"ou=People,{ldap_base}"


# ---------------------------------------------------------------- the 389 DS case


def test_a_department_change_beside_ou_people_moves_the_person_to_the_new_department(
    slapd: Slapd, people_base: str, ldap_settings: SettingsFactory
) -> None:
    settings = ldap_settings(users_base=people_base, department_values_ignored=["People"], **BY_OU)
    before = read_ldap(settings)
    assert {u: departments_of(e) for u, e in people(before).items()} == {
        "alice": [("Accounting", True)],
        "bob": [("Accounting", True)],
    }

    slapd.modify(ACCOUNTING_TO_PAYROLL.format(base=people_base.partition(",")[2]))
    assert slapd.read_entry(f"uid=alice,{people_base}", "ou")["ou"] == ["People", "Payroll"]
    after = read_ldap(settings)

    assert departments_of(people(after)["alice"]) == [("Payroll", True)]
    assert departments_of(people(after)["bob"]) == [("Accounting", True)]
    assert set(after.departments) == {"Accounting", "Payroll"}  # never a department "People"
    assert after.rejected == ()


def test_several_department_values_reject_the_person_naming_the_attribute(
    slapd: Slapd, people_base: str, ldap_settings: SettingsFactory
) -> None:
    directory = read_ldap(ldap_settings(users_base=people_base, **BY_OU))

    assert people(directory) == {}
    assert directory.departments == {}  # neither "People" nor "Accounting" from them
    alice = rows(directory)["uid=alice"]
    assert alice.where == f"uid=alice,{people_base}"
    assert alice.kind is Kind.EMPLOYEE and alice.username == "alice"
    assert alice.key == slapd.read_entry(alice.where, "entryUUID")["entryUUID"][0]
    assert "ou has 2 values ('Accounting', 'People')" in alice.reason
    assert "department_values_ignored" in alice.reason
    assert rows(directory)["uid=bob"].reason.replace("bob", "alice") == alice.reason.replace(
        "bob", "alice"
    )  # the same words whatever order the values came in
    assert directory.leavers_known  # each rejected row names its person: nobody is a leaver


def test_a_sync_after_the_department_change_leaves_no_department_people_on_the_platform(
    slapd: Slapd, people_base: str, emulator: Any, tmp_path: Path
) -> None:
    config = tmp_path / "syncd.toml"
    config.write_text(
        f'state_dir = "{tmp_path / "state"}"\n'
        f'[source]\nkind = "ldap"\n[source.ldap]\nurls = ["{slapd.url}"]\n'
        f'bind_dn = "{slapd.bind_dn}"\nbind_password = "{slapd.password}"\n'
        f'users_base = "{people_base}"\ndepartments_from = "attribute"\n'
        'department_attribute = "ou"\ndepartment_values_ignored = ["People"]\n'
        f'[platform]\nbase_url = "{emulator.base_url}"\ndomain_id = "acme"\norg_code = "acme"\n'
        'client_id = "syncd"\nclient_secret = "demo-secret"\norg_id = "acme"\n'
        "retry_backoff = 0.01\n"
    )
    config.chmod(0o600)
    settings = load_settings(config)
    assert run_sync(settings, RunRequest()).exit_code == 0

    slapd.modify(ACCOUNTING_TO_PAYROLL.format(base=people_base.partition(",")[2]))
    result = run_sync(settings, RunRequest())

    assert result.exit_code == 0, result.error
    admin = AnotherAdmin(emulator)
    names = {node["name"] for node in admin.call("GET", f"{ORG}/list-all")}
    assert "People" not in names and {"Accounting", "Payroll"} <= names
    (position,) = admin.employee("alice")["positions"]
    assert position["org_id"] == admin.node_id("Payroll")


def test_ignored_values_are_patterns_and_a_person_left_with_none_is_at_the_root(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory
) -> None:
    slapd.add_ldif(
        f"dn: uid=carl,{ldap_base}\nobjectClass: inetOrgPerson\nuid: carl\ncn: Carl\nsn: C\n"
        "ou: people\nou: Staff-2024\n"
    )

    directory = read_ldap(ldap_settings(department_values_ignored=["People", "staff-*"], **BY_OU))

    assert people(directory)["carl"].positions == ()
    assert directory.departments == {}


def test_department_value_settings_need_departments_from_an_attribute(
    ldap_settings: SettingsFactory,
) -> None:
    with pytest.raises(ValidationError, match="apply to departments_from = 'attribute'"):
        ldap_settings(department_values_ignored=["People"])
    with pytest.raises(ValidationError, match="apply to departments_from = 'attribute'"):
        ldap_settings(several_departments="positions")


def test_several_departments_as_positions_the_primary_first_in_alphabetical_order(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory
) -> None:
    slapd.add_ldif(
        f"dn: uid=dora,{ldap_base}\nobjectClass: inetOrgPerson\nuid: dora\ncn: Dora\nsn: D\n"
        "title: Analyst\ndepartmentNumber: Head Office/Sales\n"
        "departmentNumber: Head Office / R&D\ndepartmentNumber: Head Office/R&D\n"
    )
    settings = ldap_settings(
        departments_from="attribute",
        department_attribute="departmentNumber",
        several_departments="positions",
    )

    dora = people(read_ldap(settings))["dora"]

    # "Head Office / R&D" and "Head Office/R&D" are one department, counted once.
    assert [(p.department_id, p.primary, p.job_title) for p in dora.positions] == [
        ("Head Office/R&D", True, "Analyst"),
        ("Head Office/Sales", False, None),
    ]


# ---------------------------------------------------------------- one rule per field


def _person(base: str, rdn: str, *lines: str) -> str:
    return (
        f"dn: {rdn},{base}\nobjectClass: inetOrgPerson\nsn: S\n"
        + "".join(f"{line}\n" for line in lines)
        + "\n"
    )


def test_username_and_name_take_the_value_the_rdn_names_or_reject(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory
) -> None:
    slapd.add_ldif(
        _person(ldap_base, "uid=erin", "uid: erin.field", "uid: erin", "cn: Erin Field")
        + _person(ldap_base, "cn=Finn Hall", "uid: finn", "cn: Finn", "cn: Finn Hall")
        + _person(ldap_base, "uid=gus", "uid: gus", "cn: Gus Grey", "cn: Augustus Grey")
        + _person(ldap_base, "cn=Hal", "uid: hal", "uid: hal2", "cn: Hal")
        + _person(ldap_base, "cn=Ivy Lee+uid=ivy", "uid: ivy2", "uid: ivy", "cn: Ivy Lee",
                  "cn: Ivy")
    )  # fmt: skip

    directory = read_ldap(ldap_settings())

    everyone = people(directory)
    assert everyone["erin"].name == "Erin Field"  # uid=erin names "erin" among two uids
    assert everyone["finn"].name == "Finn Hall"  # cn=Finn Hall names it among two cns
    assert everyone["ivy"].name == "Ivy Lee"  # a multi-valued RDN names both
    rejected = rows(directory)
    assert set(rejected) == {"uid=gus", "cn=Hal"}
    gus = rejected["uid=gus"]
    assert gus.where == f"uid=gus,{ldap_base}" and gus.username == "gus"
    assert "cn has 2 values ('Augustus Grey', 'Gus Grey'); name takes one" in gus.reason
    assert "the entry's RDN is not cn" in gus.reason
    hal = rejected["cn=Hal"]
    assert "uid has 2 values ('hal', 'hal2'); username takes one" in hal.reason
    assert hal.username is None and hal.key  # which username is not known; the id is


def test_rdn_values_of_a_multi_valued_rdn() -> None:
    assert rdn_values("cn=A\\+B+UID=a ,ou=x+ou=y") == {"cn": "A+B", "uid": "a"}
    assert rdn_values("ou=Support\\2C Europe,dc=acme") == {"ou": "Support, Europe"}


@pytest.mark.parametrize(
    ("values", "highest"),
    [((b"99", b"100"), b"100"), ((b"20240101000000Z", b"20231231235959Z"), b"20240101000000Z")],
)
def test_several_change_marks_give_the_highest(values: tuple[bytes, ...], highest: bytes) -> None:
    # Single-valued on every server seen; an AD-like directory's uSNChanged counts as a number.
    picker = Picker({0: SlotRule(Rule.HIGHEST, "the change mark")}, ("uSNChanged",), Choices())
    for order in (values, values[::-1]):
        assert picker.pick("cn=x", WithSeveral([Several(order), None], [0])).values[0] == highest


def test_email_by_the_first_listed_domain_that_holds_one(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory
) -> None:
    slapd.add_ldif(
        _person(ldap_base, "uid=ida", "uid: ida", "cn: Ida", "mail: ida@old.example",
                "mail: ida@acme.example", "mail: ida@acme.example.org")
        + _person(ldap_base, "uid=jon", "uid: jon", "cn: Jon", "mail: jon@acme.example",
                  "mail: j.on@acme.example", "mail: jon@old.example")
        + _person(ldap_base, "uid=kay", "uid: kay", "cn: Kay", "mail: kay@x.example",
                  "mail: kay@y.example")
    )  # fmt: skip

    picked = read_ldap(ldap_settings(email_domains=["ACME.example", "old.example"]))
    without = read_ldap(ldap_settings())

    assert people(picked)["ida"].email == "ida@acme.example"
    assert set(rows(picked)) == {"uid=jon", "uid=kay"}
    assert "2 of them are in 'ACME.example'" in rows(picked)["uid=jon"].reason
    assert "none of them is in source.ldap.email_domains" in rows(picked)["uid=kay"].reason
    assert set(rows(without)) == {"uid=ida", "uid=jon", "uid=kay"}
    assert (
        "mail has 3 values ('ida@acme.example', 'ida@acme.example.org', 'ida@old.example');"
        " email takes one: list the company's mail domains in source.ldap.email_domains"
    ) in rows(without)["uid=ida"].reason


@pytest.mark.parametrize(
    ("lines", "attributes", "named"),
    [
        (("mobile: +86 138 0000 0001", "mobile: +86 139 0000 0002"), {}, "mobile has 2 values"),
        (("telephoneNumber: 1001", "telephoneNumber: 1002"), {}, "telephoneNumber has 2 values"),
        (("title: Engineer", "title: Team Lead"), {}, "title has 2 values"),
        (("roomNumber: 1", "roomNumber: 2"), {"sort_order": "roomNumber"}, "roomNumber has 2"),
        (("l: Paris", "l: Lyon"), {"en_name": "l"}, "l has 2 values ('Lyon', 'Paris'); en_name"),
    ],
)
def test_other_fields_reject_several_values_naming_the_attribute(
    slapd: Slapd,
    ldap_base: str,
    ldap_settings: SettingsFactory,
    lines: tuple[str, ...],
    attributes: dict[str, str],
    named: str,
) -> None:
    slapd.add_ldif(_person(ldap_base, "uid=lea", "uid: lea", "cn: Lea", *lines))

    directory = read_ldap(ldap_settings(attributes=attributes))

    assert people(directory) == {}
    (row,) = directory.rejected
    assert row.where == f"uid=lea,{ldap_base}" and row.username == "lea" and row.key
    assert named in row.reason


def test_extra_attributes_and_mapping_rules_read_one_value(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory
) -> None:
    slapd.add_ldif(
        _person(ldap_base, "uid=max", "uid: max", "cn: Max", "roomNumber: 1", "roomNumber: 2")
        + _person(ldap_base, "uid=ned", "uid: ned", "cn: Ned", "l: Paris", "l: Lyon")
        + _person(ldap_base, "cn=Ola Nordmann", "uid: ola", "cn: Ola", "cn: Ola Nordmann")
        + _person(ldap_base, "uid=oz", "uid: oz", "cn: Oz", "employeeType: staff",
                  "employeeType: contractor")
    )  # fmt: skip
    mapping = SourceMapping.model_validate(
        {
            "extra": {"city": "{l}"},
            "fields": {"job_title": "{cn} ({uid})"},
            "filter": {"exclude": {"employeeType": ["contractor"]}},
        }
    )

    directory = read_ldap(ldap_settings(extra_attributes={"roomNumber": "room"}), mapping=mapping)

    assert "extra attribute room takes one" in rows(directory)["uid=max"].reason
    assert "source.mapping.extra.city.template takes one" in rows(directory)["uid=ned"].reason
    oz = rows(directory)["uid=oz"]  # not left out by the first value, nor kept: set aside
    assert "employeeType has 2 values ('contractor', 'staff')" in oz.reason
    assert "source.mapping.filter.exclude takes one" in oz.reason
    # cn is the name's: a rule reading it reads the value the name's rule picks.
    assert people(directory)["ola"].job_title == "Ola Nordmann (ola)"


def test_several_photos_reject_the_photo_not_the_person(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory
) -> None:
    one, two = jpeg("one"), jpeg("two")
    slapd.add_ldif(
        f"dn: uid=pia,{ldap_base}\nobjectClass: inetOrgPerson\nuid: pia\ncn: Pia\nsn: P\n"
        f"jpegPhoto:: {_b64(one)}\njpegPhoto:: {_b64(two)}\n"
    )

    directory = read_ldap(ldap_settings(), photos=PhotoSettings(enabled=True))

    assert people(directory)["pia"].photo is None
    (row,) = directory.rejected
    assert row.kind is Kind.PHOTO and row.username == "pia"
    assert "jpegPhoto has 2 photos" in row.reason


def test_an_ou_with_several_values_where_one_is_read_is_rejected_with_its_subtree(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory
) -> None:
    slapd.add_ldif(
        f"dn: ou=Legal,{ldap_base}\nobjectClass: organizationalUnit\nou: Legal\n"
        "description: Legal\ndescription: Law\n\n"
        f"dn: ou=Tax,{ldap_base}\nobjectClass: organizationalUnit\nou: Tax\nou: Taxes\n"
        "description: Tax\n"
    )

    by_description = read_ldap(ldap_settings(department_name_attribute="description"))
    by_ou = read_ldap(ldap_settings())

    assert {d.name for d in by_description.departments.values()} == {"Tax"}
    (row,) = by_description.rejected
    assert row.kind is Kind.DEPARTMENT and row.where == f"ou=Legal,{ldap_base}"
    assert "description has 2 values ('Law', 'Legal')" in row.reason
    assert {d.name for d in by_ou.departments.values()} == {"Legal", "Tax"}  # the RDN's ou


def test_active_directory_flavor_reads_several_values_by_the_same_rules(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory
) -> None:
    # Real AD keeps cn and mail single-valued; an AD-like directory need not.
    guids = ("MyIRAFVEd2aImaq7zN3u/w==", "eFY0Erya8N4BAgMEBQYHCA==")
    slapd.add_ldif(
        f"dn: cn=Dan Ops,{ldap_base}\nobjectClass: user\nsn: O\nsAMAccountName: dan\n"
        f"objectGUID:: {guids[0]}\nobjectCategory: person\nuserAccountControl: 512\n"
        "uSNChanged: 7\ncn: Daniel Ops\ncn: Dan Ops\n\n"
        f"dn: cn=Eve,{ldap_base}\nobjectClass: user\nsn: E\ncn: Eve\nsAMAccountName: eve\n"
        f"objectGUID:: {guids[1]}\nobjectCategory: person\nuserAccountControl: 512\n"
        "uSNChanged: 8\nmail: eve@a.example\nmail: eve@b.example\n"
    )

    directory = read_ldap(ldap_settings(flavor="active_directory"))

    assert people(directory)["dan"].name == "Dan Ops"  # no displayName: cn, by the RDN
    (row,) = directory.rejected
    assert row.username == "eve" and row.key == "12345678-9abc-def0-0102-030405060708"
    assert "mail has 2 values" in row.reason


# ---------------------------------------------------------------- any order, one read


VALUE_ORDER_SETTINGS = [
    pytest.param({}, id="defaults"),
    pytest.param(
        {
            "department_values_ignored": ["People"],
            "several_departments": "positions",
            "email_domains": ["acme.example"],
        },
        id="rules-set",
    ),
]


def _generated_people(base: str, seed: int) -> dict[str, dict[str, list[str]]]:
    """People with several values in the attributes each rule reads (uid=user0 ...)."""
    rng = random.Random(seed)
    found: dict[str, dict[str, list[str]]] = {}
    for n in range(12):
        uid = f"user{n}"
        departments = rng.sample(["Accounting", "Payroll", "Sales/East", "Sales / West"], 2)
        found[f"uid={uid},{base}"] = {
            "uid": [uid, f"{uid}.alias"][: rng.randint(1, 2)],
            "cn": [f"User {n}", f"U. {n}"][: rng.randint(1, 2)],
            "mail": [f"{uid}@acme.example", f"{uid}@old.example"][: rng.randint(1, 2)],
            "ou": ["People", *departments[: rng.randint(0, 2)]],
            "title": ["Clerk", "Auditor"][: rng.choice([1, 1, 2])],
        }
    return found


def _canonical(directory: Directory) -> tuple[Any, ...]:
    return (
        dict(directory.employees),
        dict(directory.departments),
        sorted((r.where, r.reason, r.kind.value, r.key, r.username) for r in directory.rejected),
        directory.leavers_known,
    )


def _ldif(people_values: dict[str, dict[str, list[str]]]) -> str:
    return "\n".join(
        f"dn: {dn}\nobjectClass: inetOrgPerson\nsn: S\n"
        + "".join(f"{a}: {v}\n" for a, values in attrs.items() for v in values)
        for dn, attrs in people_values.items()
    )


def _reorder(slapd: Slapd, people_values: dict[str, dict[str, list[str]]]) -> None:
    """Store each person's values in the given order (slapd returns them so)."""
    slapd.modify(
        "\n".join(
            f"dn: {dn}\nchangetype: modify\n"
            + "-\n".join(
                f"replace: {a}\n" + "".join(f"{a}: {v}\n" for v in values)
                for a, values in attrs.items()
            )
            for dn, attrs in people_values.items()
        )
    )


@pytest.mark.parametrize("choices", VALUE_ORDER_SETTINGS)
def test_reversing_every_value_order_changes_nothing_in_the_read(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory, choices: dict[str, Any]
) -> None:
    generated = _generated_people(ldap_base, seed=24)
    slapd.add_ldif(_ldif(generated))
    settings = ldap_settings(**BY_OU, **choices)
    before = read_ldap(settings)
    assert before.employees and before.rejected  # some picked, some rejected

    reversed_values = {
        dn: {a: values[::-1] for a, values in attrs.items()} for dn, attrs in generated.items()
    }
    _reorder(slapd, reversed_values)
    some_dn = next(dn for dn, attrs in generated.items() if len(attrs["ou"]) > 1)
    assert slapd.read_entry(some_dn, "ou")["ou"] == reversed_values[some_dn]["ou"]

    assert _canonical(read_ldap(settings)) == _canonical(before)


@pytest.mark.parametrize("choices", VALUE_ORDER_SETTINGS)
def test_any_value_order_gives_the_same_read(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory, choices: dict[str, Any]
) -> None:
    generated = _generated_people(ldap_base, seed=5)
    slapd.add_ldif(_ldif(generated))
    settings = ldap_settings(**BY_OU, **choices)
    expected = _canonical(read_ldap(settings))

    @settings_for_slapd
    @given(data=st.data())
    def shuffled(data: st.DataObject) -> None:
        order = {
            dn: {a: data.draw(st.permutations(values)) for a, values in attrs.items()}
            for dn, attrs in generated.items()
        }
        _reorder(slapd, order)
        assert _canonical(read_ldap(settings)) == expected

    shuffled()


settings_for_slapd = settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
