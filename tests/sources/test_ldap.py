"""The LDAP source against a real slapd: the OU tree, people, paging, departures, deltas."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from syncd.config import CsvSource, LdapSource
from syncd.errors import ConfigError, SourceError
from syncd.mapping import SourceMapping
from syncd.model import Directory, Employee, Kind, State
from syncd.sources.csv import read_csv
from syncd.sources.ldap import read_ldap
from syncd.sources.ldap import wire as ldap_source
from tests.support.slapd import Slapd, synthetic_people_ldif

SettingsFactory = Callable[..., LdapSource]

ACME_PEOPLE = {"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"}
ACME_PATHS = {
    ("Head Office",),
    ("Head Office", "R&D"),
    ("Head Office", "R&D", "Backend"),
    ("Head Office", "R&D", "Frontend"),
    ("Head Office", "Sales"),
    ("Support, Europe",),
    ("Marketing",),
}
FIXTURE_TIME = "20200101000000Z"  # every entry of acme.ldif was last modified then


def people(directory: Directory) -> dict[str, Employee]:
    return {e.username: e for e in directory.employees.values()}


def place(directory: Directory, employee: Employee) -> tuple[str, ...] | None:
    """The name path of the person's primary department; None at the root."""
    primary = [p for p in employee.positions if p.primary]
    if not primary:
        return None
    assert primary[0].department_id is not None
    return directory.path(primary[0].department_id)


def entry_uuid(slapd: Slapd, dn: str) -> str:
    return slapd.read_entry(dn, "entryUUID")["entryUUID"][0]


def test_a_full_read_builds_the_ou_tree_and_places_everyone(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory
) -> None:
    directory = read_ldap(ldap_settings())

    assert directory.complete
    assert directory.rejected == ()
    assert {directory.path(d) for d in directory.departments} == ACME_PATHS
    everyone = people(directory)
    assert set(everyone) == ACME_PEOPLE  # ivan is an account, not an inetOrgPerson
    assert place(directory, everyone["alice"]) == ("Head Office", "R&D", "Backend")
    assert place(directory, everyone["carol"]) == ("Head Office", "R&D", "Frontend")
    assert place(directory, everyone["erin"]) == ("Head Office", "Sales")  # via cn=Field Team
    assert place(directory, everyone["frank"]) == ("Support, Europe",)
    assert place(directory, everyone["grace"]) == ("Marketing",)  # ou: Mktg too; the DN decides
    assert everyone["heidi"].positions == ()  # directly below the base: the root organization


def test_ids_are_entry_uuids_and_fields_follow_the_openldap_preset(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory
) -> None:
    directory = read_ldap(ldap_settings())

    alice_dn = f"uid=alice,ou=Backend,ou=R&D,ou=Head Office,{acme}"
    alice = directory.employees[entry_uuid(slapd, alice_dn)]
    assert (alice.username, alice.name, alice.email) == (
        "alice",
        "Alice Liddell",
        "alice@acme.example",
    )
    assert (alice.mobile, alice.tel, alice.sn) == ("+86 138 0000 0001", "+86 10 8000 0001", "E001")
    assert alice.job_title == "Backend Engineer"
    assert alice.state is State.ACTIVE
    (position,) = alice.positions
    assert position.primary and position.job_title == "Backend Engineer"
    assert position.department_id == entry_uuid(slapd, f"ou=Backend,ou=R&D,ou=Head Office,{acme}")
    backend = directory.departments[position.department_id]
    assert backend.parent_id == entry_uuid(slapd, f"ou=R&D,ou=Head Office,{acme}")
    assert directory.departments[backend.parent_id].parent_id is not None
    assert people(directory)["carol"].name == "张伟"


def test_the_base_is_the_root_and_no_department(acme: str, ldap_settings: SettingsFactory) -> None:
    directory = read_ldap(ldap_settings())

    top_level = {d.name for d in directory.departments.values() if d.parent_id is None}
    assert top_level == {"Head Office", "Support, Europe", "Marketing"}


def test_departments_may_come_from_another_base(acme: str, ldap_settings: SettingsFactory) -> None:
    directory = read_ldap(ldap_settings(departments_base=f"ou=Head Office,{acme}"))

    assert {directory.path(d) for d in directory.departments} == {
        ("R&D",), ("R&D", "Backend"), ("R&D", "Frontend"), ("Sales",)
    }  # fmt: skip
    assert place(directory, people(directory)["alice"]) == ("R&D", "Backend")
    assert people(directory)["frank"].positions == ()  # his OU is outside the departments base


def test_department_fields_mapped_by_settings(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory
) -> None:
    slapd.add_ldif(
        f"dn: ou=Legal,{ldap_base}\nobjectClass: organizationalUnit\nou: Legal\n"
        "businessCategory: 3\ndescription: D-007\nl: Legal Affairs\n"
    )
    directory = read_ldap(
        ldap_settings(
            attributes={
                "department_sort_order": "businessCategory",
                "department_sn": "description",
                "department_en_name": "l",
            }
        )
    )

    (legal,) = directory.departments.values()
    assert (legal.name, legal.sort_order, legal.sn, legal.en_name) == (
        "Legal",
        3,
        "D-007",
        "Legal Affairs",
    )


def test_paging_reads_every_page(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    slapd.add_ldif(synthetic_people_ldif(ldap_base, 60, divisions=3, teams=2))
    pages = count_pages(monkeypatch)

    directory = read_ldap(ldap_settings(page_size=5))

    assert len(directory.employees) == 60
    assert len(directory.departments) == 9
    assert pages[0] >= 12 + 2  # people and OUs, five a page
    assert directory.path(people(directory)["user000007"].positions[0].department_id or "") == (
        "Division 1",
        "Team 1-0",
    )


def count_pages(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the page requests the source sends (a one-element list, updated in place)."""
    pages = [0]
    send = ldap_source.send_page

    def counting(*args: Any) -> int:
        pages[0] += 1
        return send(*args)

    monkeypatch.setattr(ldap_source, "send_page", counting)
    return pages


def test_departed_filter_marks_people_departed(acme: str, ldap_settings: SettingsFactory) -> None:
    directory = read_ldap(ldap_settings(departed_filter="(employeeType=departed)"))

    everyone = people(directory)
    assert everyone["bob"].state is State.DEPARTED
    assert {u for u, e in everyone.items() if e.state is State.DEPARTED} == {"bob"}


def test_without_departed_filter_nobody_is_departed(
    acme: str, ldap_settings: SettingsFactory
) -> None:
    directory = read_ldap(ldap_settings())

    assert all(e.state is State.ACTIVE for e in directory.employees.values())


def test_departments_from_a_path_attribute(acme: str, ldap_settings: SettingsFactory) -> None:
    directory = read_ldap(
        ldap_settings(departments_from="attribute", department_attribute="departmentNumber")
    )

    assert set(directory.departments) == {
        "Head Office",
        "Head Office/R&D",
        "Head Office/R&D/Backend",
        "Head Office/R&D/Frontend",
        "Head Office/Sales",
        "Support, Europe",
        "Marketing",
    }
    assert directory.departments["Head Office/R&D"].parent_id == "Head Office"
    everyone = people(directory)
    assert everyone["alice"].positions[0].department_id == "Head Office/R&D/Backend"
    assert everyone["bob"].positions[0].department_id == "Head Office/R&D/Backend"  # " / " spaced
    assert everyone["heidi"].positions == ()  # no departmentNumber


def test_department_paths_get_the_ids_the_csv_source_gives(
    acme: str, ldap_settings: SettingsFactory, tmp_path: Path
) -> None:
    # One rule for both sources: a company moving from CSV exports to LDAP (or back)
    # keeps its departments rather than having them deleted and created again.
    from_ldap = read_ldap(
        ldap_settings(departments_from="attribute", department_attribute="departmentNumber")
    )
    paths = [
        "Head Office/R&D/Backend",
        "Head Office / R&D / Backend",
        "Head Office/R&D/Frontend",
        "Head Office/Sales",
        "Support, Europe",
        "Marketing",
    ]  # the departmentNumber values of acme.ldif
    employees = tmp_path / "employees.csv"
    rows = [f'E{n},user{n},User {n},"{path}"' for n, path in enumerate(paths)]
    employees.write_text("id,username,name,department\n" + "\n".join(rows) + "\n")

    from_csv = read_csv(CsvSource(layout="paths", employees=employees))

    assert dict(from_ldap.departments) == dict(from_csv.departments)
    # And the plan makes them alike: only for someone they place (syncd.plan.departments).
    assert from_ldap.departments_from_people and from_csv.departments_from_people


def test_extra_attributes_and_attribute_overrides(
    acme: str, ldap_settings: SettingsFactory
) -> None:
    directory = read_ldap(
        ldap_settings(
            attributes={"en_name": "sn", "sn": "roomNumber"},
            extra_attributes={"roomNumber": "room", "departmentNumber": "path"},
        )
    )

    alice = people(directory)["alice"]
    assert alice.en_name == "Liddell"
    assert alice.sn == "B-101"
    assert alice.extra == (("room", "B-101"), ("path", "Head Office/R&D/Backend"))
    assert people(directory)["heidi"].extra == ()


def test_optional_fields_mapped_by_settings(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory
) -> None:
    slapd.add_ldif(
        f"dn: uid=olga,{ldap_base}\nobjectClass: inetOrgPerson\nuid: olga\ncn: Olga\nsn: O\n"
        "businessCategory: Female\ncarLicense: 19900228120000Z\npreferredLanguage: TRUE\n"
        "departmentNumber: 7\n\n"
        f"dn: uid=otto,{ldap_base}\nobjectClass: inetOrgPerson\nuid: otto\ncn: Otto\nsn: O\n"
        "carLicense: 1990-02-30\n"
    )
    directory = read_ldap(
        ldap_settings(
            attributes={
                "gender": "businessCategory",
                "birthday": "carLicense",
                "senior": "preferredLanguage",
                "sort_order": "departmentNumber",
            }
        )
    )

    olga = people(directory)["olga"]
    assert (olga.gender, olga.birthday, olga.senior, olga.sort_order) == (
        "FEMALE",
        "1990-02-28",
        True,
        7,
    )
    (row,) = directory.rejected
    assert row.username == "otto" and "birthday '1990-02-30' is not a date" in row.reason


def _person(base: str, uid: str, ou: str = "", **more: str) -> str:
    where = f"uid={uid},{ou + ',' if ou else ''}{base}"
    lines = [f"dn: {where}", "objectClass: inetOrgPerson", f"uid: {uid}", f"cn: {uid.title()}"]
    lines += ["sn: X", *(f"{attribute}: {value}" for attribute, value in more.items())]
    return "\n".join(lines) + "\n\n"


def test_an_entry_set_aside_for_a_value_it_cannot_give_still_says_who_left(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory
) -> None:
    """Entries set aside for a birthday that is not a date: olga's says she left, and no
    other entry gives her uid, so she is marked departed (RejectedRow.departed: the planner
    locks her account, syncd.plan.departed_aside); otto's says he is active; pia's uid is
    given by another entry too, so hers names nobody for sure; and with mapping rules, who
    an entry names is not read plainly."""
    left, bad = {"employeeType": "departed"}, {"carLicense": "1990-02-30"}
    slapd.add_ldif(
        f"dn: ou=Elsewhere,{ldap_base}\nobjectClass: organizationalUnit\nou: Elsewhere\n\n"
        + _person(ldap_base, "olga", **left, **bad)
        + _person(ldap_base, "otto", **bad)
        + _person(ldap_base, "pia", **left, **bad)
        + _person(ldap_base, "pia", "ou=Elsewhere", **left)
    )
    settings = ldap_settings(
        attributes={"birthday": "carLicense"}, departed_filter="(employeeType=departed)"
    )

    directory = read_ldap(settings)

    marks = sorted((r.where.split(",")[0], r.departed) for r in directory.rejected)
    assert marks == [
        ("uid=olga", True),
        ("uid=otto", False),
        ("uid=pia", False),
        ("uid=pia", False),
    ]
    (olga,) = [r for r in directory.rejected if r.departed]
    assert directory.departed_aside() == {str(olga.key): "olga"}
    ruled = SourceMapping.model_validate({"fields": {"username": "{uid}"}})
    aside = read_ldap(settings, mapping=ruled).rejected
    assert len(aside) == 4 and not any(r.departed for r in aside)


def test_a_value_that_cannot_be_used_rejects_that_person_only(
    acme: str, ldap_settings: SettingsFactory
) -> None:
    settings = ldap_settings(
        attributes={"sort_order": "roomNumber"}, extra_attributes={"employeeNumber": "number"}
    )
    directory = read_ldap(settings)

    (row,) = directory.rejected
    assert row.username == "alice"
    assert row.where.startswith("uid=alice,")
    assert "sort order 'B-101' is not a whole number" in row.reason
    # What tells her from another, her e-mail and extra attributes (join keys), as read.
    kept = dict(row.identifiers)
    assert (kept["name"], kept["mobile"]) == ("Alice Liddell", "+86 138 0000 0001")
    assert (kept["email"], kept["extra.number"]) == ("alice@acme.example", "E001")
    assert set(people(directory)) == ACME_PEOPLE - {"alice"}
    assert not directory.leavers_known or row.key  # she is named: not taken for a leaver


# An OU that cannot be used, below Eng and above Backend; alice in it, bob below it.
REJECTED_OU = """\
dn: ou=Eng,{base}
objectClass: organizationalUnit
ou: Eng

dn: ou=RD,ou=Eng,{base}
objectClass: organizationalUnit
{bad}
ou: RD

dn: ou=Backend,ou=RD,ou=Eng,{base}
objectClass: organizationalUnit
ou: Backend

dn: uid=alice,ou=RD,ou=Eng,{base}
objectClass: inetOrgPerson
uid: alice
cn: Alice
sn: A

dn: uid=bob,ou=Backend,ou=RD,ou=Eng,{base}
objectClass: inetOrgPerson
uid: bob
cn: Bob
sn: B

dn: uid=carol,ou=Eng,{base}
objectClass: inetOrgPerson
uid: carol
cn: Carol
sn: C
"""


@pytest.mark.parametrize(
    ("bad", "attributes", "reason"),
    [
        (
            "businessCategory: not-a-number",
            {"department_sort_order": "businessCategory"},
            "sort order 'not-a-number' is not a whole number",
        ),
        (
            # 16 bytes 0xff in an octet-string attribute (the AD-like schema's), as en_name
            "objectClass: adObject\nobjectGUID:: /////////////////////w==",
            {"department_en_name": "objectGUID"},
            "a value is not UTF-8 text",
        ),
    ],
)
def test_a_rejected_ou_keeps_its_subtree_and_people_where_they_are(
    slapd: Slapd,
    ldap_base: str,
    ldap_settings: SettingsFactory,
    bad: str,
    attributes: dict[str, str],
    reason: str,
) -> None:
    slapd.add_ldif(REJECTED_OU.format(base=ldap_base, bad=bad))
    rd = entry_uuid(slapd, f"ou=RD,ou=Eng,{ldap_base}")

    directory = read_ldap(ldap_settings(attributes=attributes))

    # Nothing moves up to Eng: the OU's subtree and people are rejected with it, each
    # named by its id, so the platform keeps them as they are and nobody is a leaver.
    assert {directory.path(d) for d in directory.departments} == {("Eng",)}
    assert set(people(directory)) == {"carol"}
    rows = {row.where.partition(",")[0]: row for row in directory.rejected}
    assert set(rows) == {"ou=RD", "ou=Backend", "uid=alice", "uid=bob"}
    assert rows["ou=RD"].key == rd and reason in rows["ou=RD"].reason
    backend = rows["ou=Backend"]
    assert backend.key == entry_uuid(slapd, f"ou=Backend,ou=RD,ou=Eng,{ldap_base}")
    assert f"parent department {rd!r} is unknown or was rejected" in backend.reason
    alice = rows["uid=alice"]
    assert (alice.key, alice.username) == (
        entry_uuid(slapd, f"uid=alice,ou=RD,ou=Eng,{ldap_base}"),
        "alice",
    )
    assert f"placed in department {rd!r}" in alice.reason
    assert rows["uid=bob"].key and rows["uid=bob"].username == "bob"
    assert directory.leavers_known
    assert rd in directory.rejected_keys(Kind.DEPARTMENT)


def test_unknown_attribute_fields_are_config_errors(ldap_settings: SettingsFactory) -> None:
    with pytest.raises(ConfigError, match=r"unknown field.*emial"):
        read_ldap(ldap_settings(attributes={"emial": "mail"}))
    with pytest.raises(ConfigError, match="department_attribute is not set"):
        read_ldap(ldap_settings(departments_from="attribute"))


def test_a_filter_matching_nobody_gives_an_empty_complete_directory(
    acme: str, ldap_settings: SettingsFactory
) -> None:
    directory = read_ldap(ldap_settings(users_filter="(uid=nobody-at-all)"))

    assert directory.employees == {}
    assert directory.complete
    assert {directory.path(d) for d in directory.departments} == ACME_PATHS


def test_an_anonymous_read(acme: str, ldap_settings: SettingsFactory) -> None:
    directory = read_ldap(ldap_settings(bind_dn=None, bind_password=None))

    assert set(people(directory)) == ACME_PEOPLE


# ---------------------------------------------------------------- incremental reads


def test_a_full_read_gives_a_mark_pulled_back_by_its_own_duration(
    acme: str, ldap_settings: SettingsFactory
) -> None:
    directory = read_ldap(ldap_settings())

    # The newest entry is from FIXTURE_TIME; entries changed while the read ran could
    # carry earlier times than that, so the mark is set back by the read's duration.
    assert directory.cursor is not None
    assert "20191231235900Z" < directory.cursor < FIXTURE_TIME


def test_a_delta_holds_what_changed_after_the_mark(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory
) -> None:
    settings = ldap_settings()
    carol_before = people(read_ldap(settings))["carol"]
    mark = "20200101000001Z"  # a second after the fixture was written: nothing changed since

    slapd.modify(
        f"dn: uid=judy,ou=Sales,ou=Head Office,{acme}\nchangetype: add\n"
        "objectClass: inetOrgPerson\nuid: judy\ncn: Judy New\nsn: New\n\n"
        f"dn: uid=alice,ou=Backend,ou=R&D,ou=Head Office,{acme}\nchangetype: modify\n"
        "replace: title\ntitle: Staff Engineer\n\n"
        f"dn: uid=carol,ou=Frontend,ou=R&D,ou=Head Office,{acme}\nchangetype: modrdn\n"
        f"newrdn: uid=carol\ndeleteoldrdn: 1\nnewsuperior: ou=Sales,ou=Head Office,{acme}\n\n"
        f"dn: uid=dave,ou=Sales,ou=Head Office,{acme}\nchangetype: delete\n"
    )
    delta = read_ldap(settings, since=mark)

    assert not delta.complete and not delta.leavers_known
    changed = people(delta)
    assert set(changed) == {"judy", "alice", "carol"}  # dave's deletion cannot show in a delta
    assert changed["alice"].job_title == "Staff Engineer"
    assert changed["carol"].id == carol_before.id  # moved: the same person, updated
    assert place(delta, changed["carol"]) == ("Head Office", "Sales")
    assert {delta.path(d) for d in delta.departments} == ACME_PATHS  # the whole OU tree
    assert delta.cursor is not None and delta.cursor > mark

    follow_up = read_ldap(settings, since=delta.cursor)
    assert set(people(follow_up)) <= {"judy", "alice", "carol"}  # at most the last seconds again
    assert follow_up.cursor is not None and follow_up.cursor >= delta.cursor

    after = read_ldap(settings)
    assert set(people(after)) == ACME_PEOPLE - {"dave"} | {"judy"}
    assert after.complete and after.leavers_known


def test_a_delta_with_no_change_keeps_the_mark(acme: str, ldap_settings: SettingsFactory) -> None:
    mark = "20200101000001Z"  # a second after the fixture's last change

    delta = read_ldap(ldap_settings(), since=mark)

    assert delta.employees == {}
    assert delta.cursor == mark
    assert not delta.complete


def test_a_delta_rereads_the_mark_second_itself(acme: str, ldap_settings: SettingsFactory) -> None:
    delta = read_ldap(ldap_settings(), since=FIXTURE_TIME)

    assert set(people(delta)) == ACME_PEOPLE  # >=: a change in the mark's second is not missed


def test_a_delta_of_departed_people(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory
) -> None:
    settings = ldap_settings(departed_filter="(employeeType=departed)")
    slapd.modify(
        f"dn: uid=carol,ou=Frontend,ou=R&D,ou=Head Office,{acme}\nchangetype: modify\n"
        "add: employeeType\nemployeeType: departed\n"
    )

    delta = read_ldap(settings, since="20200101000001Z")

    assert {u: e.state for u, e in people(delta).items()} == {"carol": State.DEPARTED}


def test_a_mark_that_is_no_time_is_refused(acme: str, ldap_settings: SettingsFactory) -> None:
    with pytest.raises(SourceError, match="not a generalized time"):
        read_ldap(ldap_settings(), since="20200101)(uid=*")
