"""Mapping rules: templates, transforms, lookups and the row filter, for CSV and LDAP.

The rules themselves on plain values; then each source, read for real (CSV files, the
test slapd), with rules that make fields, extra attributes and custom properties, leave
people out, and reject one person whose rule fails while the others are still read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from syncd.config import CsvSource, LdapSource, load_settings, source_of
from syncd.errors import ConfigError, SourceError
from syncd.mapping import Lookup, RuleFailure, Rules, SourceMapping, Template
from syncd.model import Directory, Employee, State, match_index, match_value
from syncd.sources.csv import read_csv
from syncd.sources.ldap import read_ldap
from tests.support.slapd import Slapd

SettingsFactory = Callable[..., LdapSource]


def rules(**mapping: Any) -> Rules:
    return Rules(SourceMapping.model_validate(mapping))


def attributes(**values: str) -> Callable[[str], str | None]:
    folded = {k.casefold(): v for k, v in values.items()}
    return lambda name: folded.get(name.casefold())


def people(directory: Directory) -> dict[str, Employee]:
    return {e.username: e for e in directory.employees.values()}


# ---------------------------------------------------------------- the rules


def test_a_template_joins_attributes_and_literal_text() -> None:
    template = Template.parse("{sn}{givenName} <{mail}> {{x}}")

    assert template.attributes == ("sn", "givenName", "mail")
    assert template.render(attributes(sn="张", givenName="伟", mail="w@x")) == "张伟 <w@x> {x}"
    assert template.render(attributes(sn="张")) == "张 <> {x}"  # an absent attribute is empty


def test_transforms_apply_in_order_and_the_result_is_trimmed(tmp_path: Path) -> None:
    table = tmp_path / "titles.csv"
    table.write_text("title,platform title\nSWE,Software Engineer\nMGR,Manager\n")
    ruled = rules(
        fields={
            "email": {"transforms": ["trim", "lower"]},
            "job_title": {
                "template": " {title} ",
                "transforms": ["trim", "upper", {"lookup": str(table)}, {"default": "Staff"}],
            },
            "mobile": {"transforms": [{"replace": [r"^\+86[ -]?", ""]}, {"replace": [r"\D", ""]}]},
            "en_name": "{givenName} {sn}",
        }
    )
    own = {"email": "  Alice@Example.COM ", "mobile": "+86 138-0000-0001"}

    mapped = ruled.apply(
        attributes(title="swe", givenName="Alice", sn="Liddell"), lambda _, name: own.get(name)
    )

    assert mapped.fields == {
        "email": "alice@example.com",
        "job_title": "Software Engineer",
        "mobile": "13800000001",
        "en_name": "Alice Liddell",
    }
    empty = ruled.apply(attributes(), lambda _, name: None)
    assert empty.fields == {"email": None, "job_title": "Staff", "mobile": None, "en_name": None}


def test_a_value_missing_from_a_lookup_table_fails_the_rule_unless_told(tmp_path: Path) -> None:
    table = tmp_path / "codes.csv"
    table.write_text("code;name\nD1;Sales\n")  # any delimiter of , ; tab |

    def title(**lookup: Any) -> str | None:
        ruled = rules(fields={"job_title": {"transforms": [{"lookup": str(table), **lookup}]}})
        return ruled.apply(attributes(), lambda _, __: "D9").fields["job_title"]

    with pytest.raises(RuleFailure) as caught:
        title()
    assert str(caught.value) == (
        "source.mapping.fields.job_title: 'D9' is not in the lookup table codes.csv"
    )
    assert title(missing="keep") == "D9"
    assert title(missing="empty") is None


@pytest.mark.parametrize(
    ("values", "left_out"),
    [
        ({"employeeType": "staff", "uid": "alice"}, None),
        ({"employeeType": "Contractor", "uid": "bob"}, "employeeType 'Contractor' matches"),
        ({"employeeType": "staff", "uid": "svc-backup"}, "uid 'svc-backup' matches"),
        ({"uid": "carol"}, None),  # no type: "" is listed among the included values
        ({"employeeType": "intern", "uid": "dave"}, "employeeType 'intern' is not one of"),
    ],
)
def test_the_row_filter(values: dict[str, str], left_out: str | None) -> None:
    ruled = rules(
        filter={
            "include": {"employeeType": ["staff", "contractor", ""]},
            "exclude": {"employeeType": ["contractor"], "uid": ["svc-*"]},
        }
    )

    reason = ruled.left_out(attributes(**values))

    assert reason == left_out or (left_out is not None and reason and reason.startswith(left_out))


def test_match_values_are_compared_by_one_rule() -> None:
    assert match_value("email", " Alice@Example.com ") == "alice@example.com"
    assert match_value("mobile", "+86 138-0000-0001") == "+8613800000001"
    assert match_value("mobile", "138 0000 0001") == "13800000001"
    assert match_value("sn", " E001 ") == "E001"
    assert match_value("username", "Alice") == "Alice"  # the platform matches usernames exactly
    assert match_value("email", "  ") is None


# ---------------------------------------------------------------- settings


SETTINGS = """
[source]
kind = "csv"
[source.csv]
layout = "paths"
employees = "employees.csv"
{rules}
[platform]
base_url = "http://127.0.0.1:9"
domain_id = "acme"
org_code = "acme"
client_id = "syncd"
client_secret = "x"
org_id = "acme"
"""


def settings_file(tmp_path: Path, rules_text: str) -> Path:
    path = tmp_path / "syncd.toml"
    path.write_text(SETTINGS.replace("{rules}", rules_text))
    os.chmod(path, 0o600)
    return path


@pytest.mark.parametrize(
    ("rules_text", "problem"),
    [
        (
            '[source.mapping.fields]\nname = "{sn"',
            "key source.mapping.fields.name.template: Value error, template '{sn': expected '}'",
        ),
        (
            '[source.mapping.fields]\nname = "{sn:>9}"',
            "key source.mapping.fields.name.template: Value error, template '{sn:>9}': put one "
            "attribute name in each pair of braces",
        ),
        (
            '[source.mapping.fields]\nid = "{uid}"',
            "key source.mapping.fields: Value error, no rule can make id",
        ),
        (
            '[source.mapping.fields]\nemail = { transforms = ["lowercase"] }',
            "key source.mapping.fields.email.transforms.0.simple: Input should be 'trim', "
            "'lower' or 'upper'",
        ),
        (
            "[source.mapping.fields]\nemail = { transforms = [{ replace = ['(a', 'b'] }] }",
            "key source.mapping.fields.email.transforms.0.replace.replace: Value error, '(a' / "
            "'b': missing ), unterminated subpattern",
        ),
        (
            "[source.mapping.fields]\nemail = { transforms = [{ replace = ['(a)', '\\2'] }] }",
            "invalid group reference 2",
        ),
        (
            '[source.mapping.fields]\nemail = { transforms = [{ lookup = "nope.csv" }] }',
            "key source.mapping.fields.email.transforms.0.lookup.lookup: Value error, "
            "{dir}/nope.csv: file not found",
        ),
        (
            '[source.mapping.fields]\nemail = { transforms = [{ lookup = "bad.csv" }] }',
            "{dir}/bad.csv:3: 'a' is listed twice, with different values",
        ),
        (
            '[source.mapping.properties]\n"schema-1" = { transforms = ["trim"] }',
            "key source.mapping.properties: Value error, schema-1: give a template",
        ),
        (
            "[source.mapping.filter]\nexclude = { employeeType = [] }",
            "key source.mapping.filter.exclude: Value error, employeeType: list at least one",
        ),
        ("[source.mapping]\nfield = {}", "key source.mapping.field: unknown key"),
    ],
)
def test_broken_rules_are_named_at_load(tmp_path: Path, rules_text: str, problem: str) -> None:
    (tmp_path / "bad.csv").write_text("from,to\na,1\na,2\n")
    path = settings_file(tmp_path, rules_text)

    with pytest.raises(ConfigError) as caught:
        load_settings(path)

    message = str(caught.value)
    assert message.startswith(f"{path}: invalid settings: ")
    assert problem.replace("{dir}", str(tmp_path)) in message


def test_lookup_files_are_relative_to_the_settings_file(tmp_path: Path) -> None:
    (tmp_path / "titles.csv").write_text("from,to\nSWE,Engineer\n")
    path = settings_file(
        tmp_path,
        '[source.mapping.fields]\njob_title = { transforms = [{ lookup = "titles.csv" }] }',
    )

    settings = load_settings(path)

    (step,) = source_of(settings).mapping.fields["job_title"].transforms
    assert isinstance(step, Lookup) and step.lookup.table == {"SWE": "Engineer"}


# ---------------------------------------------------------------- the CSV source


EMPLOYEES = """id,username,family,given,email,department,type,title,born
E1,alice,张,丽,Alice@Example.com,R&D/Backend,staff,SWE,1990.01.05
E2,bob,王,强,bob@example.com,R&D,contractor,SWE,
E3,carol,李,娜,carol@example.com,Sales,staff,XYZ,
E4,dave,赵,磊,dave@example.com,Sales,staff,MGR,1985.13.01
E5,erin,周,敏,erin@example.com,Ops Only,contractor,MGR,
"""


def csv_settings(tmp_path: Path) -> CsvSource:
    (tmp_path / "employees.csv").write_text(EMPLOYEES)
    return CsvSource(
        layout="paths",
        employees=tmp_path / "employees.csv",
        columns={"name": "family", "birthday": "born", "job_title": "title"},
        extra_columns={"type": "kind"},
    )


def csv_mapping(tmp_path: Path, **more: Any) -> SourceMapping:
    (tmp_path / "titles.csv").write_text("title,job title\nSWE,Software Engineer\nMGR,Manager\n")
    return SourceMapping.model_validate(
        {
            "fields": {
                "name": "{family}{given}",
                "email": {"transforms": ["lower"]},
                "job_title": {"transforms": [{"lookup": str(tmp_path / "titles.csv")}]},
                "birthday": {"transforms": [{"replace": [r"\.", "-"]}]},
            },
            "extra": {"kind": {"transforms": ["upper"]}},
            "properties": {"schema-7": "{given} ({type})"},
            "filter": {"exclude": {"type": ["contractor"]}},
            **more,
        }
    )


def test_csv_rules_make_fields_extras_and_properties(tmp_path: Path) -> None:
    directory = read_csv(csv_settings(tmp_path), mapping=csv_mapping(tmp_path))

    alice = people(directory)["alice"]
    assert (alice.name, alice.email, alice.job_title) == (
        "张丽",
        "alice@example.com",
        "Software Engineer",
    )
    assert alice.birthday == "1990-01-05"  # the rule made a date the source's parser accepts
    assert alice.extra == (("kind", "STAFF"),)
    assert alice.properties == (("schema-7", "丽 (staff)"),)
    # bob and erin are contractors: left out, as if not in the file (erin's department too).
    assert set(people(directory)) == {"alice"}
    assert directory.filtered == 2
    assert {directory.path(d) for d in directory.departments} == {
        ("R&D",),
        ("R&D", "Backend"),
        ("Sales",),
    }
    # carol's title is not in the table, dave's birthday is no date after the rule:
    # each is rejected with the reason, by id and username.
    carol, dave = sorted(directory.rejected, key=lambda row: row.where)
    assert (carol.where, carol.key, carol.username) == ("employees.csv:4", "E3", "carol")
    assert (
        carol.reason
        == "source.mapping.fields.job_title: 'XYZ' is not in the lookup table titles.csv"
    )
    assert (dave.where, dave.key, dave.username) == ("employees.csv:5", "E4", "dave")
    assert dave.reason.startswith(
        "column 'source.mapping.fields.birthday': '1985-13-01' is not a date"
    )
    assert directory.leavers_known  # rejected rows still name their people


def test_an_include_filter_keeps_only_whom_it_names(tmp_path: Path) -> None:
    mapping = csv_mapping(tmp_path, filter={"include": {"username": ["a*", "b*"]}})

    directory = read_csv(csv_settings(tmp_path), mapping=mapping)

    assert set(people(directory)) == {"alice", "bob"} and directory.filtered == 3


def test_a_csv_rule_naming_a_column_the_file_lacks_stops_the_read(tmp_path: Path) -> None:
    mapping = SourceMapping.model_validate({"fields": {"en_name": "{given} {middle}"}})

    with pytest.raises(SourceError) as caught:
        read_csv(csv_settings(tmp_path), mapping=mapping)

    assert "column 'middle' (source.mapping.fields.en_name.template) is not in the header" in str(
        caught.value
    )


def test_source_side_match_keys_show_ambiguity(tmp_path: Path) -> None:
    (tmp_path / "employees.csv").write_text(
        "id,username,name,department,email\nE1,a,A,X,same@x.com\nE2,b,B,X,SAME@x.com\n"
        "E3,c,C,X,c@x.com\n"
    )
    directory = read_csv(CsvSource(layout="paths", employees=tmp_path / "employees.csv"))

    index = match_index(directory, "email")

    assert sorted(index["same@x.com"]) == ["E1", "E2"] and index["c@x.com"] == ("E3",)


# ---------------------------------------------------------------- the LDAP source


def test_ldap_rules_read_the_attributes_they_name(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory
) -> None:
    mapping = SourceMapping.model_validate(
        {
            "fields": {
                "name": "{sn}, {cn}",
                "email": {"transforms": ["upper"]},
                "job_title": {"transforms": [{"default": "Staff"}]},
                "sn": "{employeeNumber}-{departmentNumber}",
            },
            "properties": {"schema-1": "{departmentNumber}"},
            "filter": {"exclude": {"employeeType": ["departed"]}},
        }
    )

    directory = read_ldap(ldap_settings(), mapping=mapping)

    everyone = people(directory)
    assert "bob" not in everyone and directory.filtered == 1  # employeeType: departed
    alice = everyone["alice"]
    assert alice.name == "Liddell, Alice Liddell"
    assert alice.email == "ALICE@ACME.EXAMPLE"
    assert alice.sn == "E001-Head Office/R&D/Backend"
    assert alice.properties == (("schema-1", "Head Office/R&D/Backend"),)
    assert (
        everyone["grace"].job_title == "Staff" and everyone["heidi"].job_title == "Chief Executive"
    )
    assert all(e.state is State.ACTIVE for e in everyone.values())


def test_an_ldap_rule_that_fails_rejects_that_person_only(
    acme: str, ldap_settings: SettingsFactory, tmp_path: Path
) -> None:
    table = tmp_path / "titles.csv"
    table.write_text("title,platform title\nBackend Engineer,Backend\nFrontend Engineer,Frontend\n")
    mapping = SourceMapping.model_validate(
        {"fields": {"job_title": {"template": "{title}", "transforms": [{"lookup": str(table)}]}}}
    )

    directory = read_ldap(ldap_settings(), mapping=mapping)

    everyone = people(directory)
    assert everyone["alice"].job_title == "Backend" and everyone["carol"].job_title == "Frontend"
    reasons = {row.username: row.reason for row in directory.rejected}
    assert reasons["dave"] == (
        "source.mapping.fields.job_title: 'Account Manager' is not in the lookup table titles.csv"
    )
    assert "grace" in everyone  # no title: nothing to look up
