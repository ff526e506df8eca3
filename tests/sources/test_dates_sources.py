"""Start and end dates as sources read them: CSV columns, LDAP attributes (a real slapd),
mapping rules; strict dates, a bad one rejecting its row only; the settings' time zone."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.config import CsvEmployeeColumns, CsvSource, LdapSource, SyncSettings, load_settings
from syncd.config.dates import DateSettings
from syncd.errors import ConfigError
from syncd.mapping import SourceMapping
from syncd.model import Directory, Employee
from syncd.sources._text import parse_iso_day
from syncd.sources.csv import read_csv
from syncd.sources.ldap import read_ldap
from tests.support.examples import examples
from tests.support.settings import CSV_SETTINGS, write_settings
from tests.support.slapd import Slapd

DEPARTMENTS = "id,name,parent_id\nD1,Head Office,\n"
DATED = CsvEmployeeColumns(start_date="start_date", end_date="end_date")

SettingsFactory = Callable[..., LdapSource]


def csv(tmp_path: Path, employees: str, **more: Any) -> CsvSource:
    (tmp_path / "employees.csv").write_text(employees, encoding="utf-8")
    (tmp_path / "departments.csv").write_text(DEPARTMENTS, encoding="utf-8")
    return CsvSource(
        employees=tmp_path / "employees.csv", departments=tmp_path / "departments.csv", **more
    )


def people(directory: Directory) -> dict[str, Employee]:
    return {e.username: e for e in directory.employees.values()}


# ---------------------------------------------------------------- CSV


def test_date_columns_are_read_only_when_named(tmp_path: Path) -> None:
    text = (
        "id,username,name,department,start_date,end_date\n"
        "E1,ann,Ann,D1,2027-01-04,2027-12-31\n"
        "E2,bob,Bob,D1,,\n"
    )
    unnamed = read_csv(csv(tmp_path, text))
    assert people(unnamed)["ann"].start_date is None  # off by default
    named = read_csv(csv(tmp_path, text, columns=DATED))
    ann, bob = people(named)["ann"], people(named)["bob"]
    assert (ann.start_date, ann.end_date) == ("2027-01-04", "2027-12-31")
    assert (bob.start_date, bob.end_date) == (None, None)


def test_a_named_date_column_missing_from_the_header_stops_the_read(tmp_path: Path) -> None:
    from syncd.errors import SourceError

    named = r"column 'start_date' \(source.csv.columns.start_date\) is not in the header"
    with pytest.raises(SourceError, match=named):
        read_csv(csv(tmp_path, "id,username,name,department\nE1,ann,Ann,D1\n", columns=DATED))


@pytest.mark.parametrize(
    "value", ["31/12/2026", "2026/12/31", "2026-1-5", "2026-02-30", "20261231", "２０２６-01-01"]
)
def test_a_bad_date_rejects_its_row_naming_file_line_column_and_value(
    tmp_path: Path, value: str
) -> None:
    text = (
        "id,username,name,department,start_date,end_date\n"
        "E1,ann,Ann,D1,,2026-12-31\n"
        f"E2,bob,Bob,D1,,{value}\n"
        "E3,cat,Cat,D1,2027-01-04,\n"
    )
    directory = read_csv(csv(tmp_path, text, columns=DATED))
    (row,) = directory.rejected
    assert row.where == "employees.csv:3"
    assert row.reason == f"column 'end_date': {value!r} is not a date (YYYY-MM-DD)"
    assert (row.key, row.username, row.may_hide_rows) == ("E2", "bob", False)
    assert set(people(directory)) == {"ann", "cat"}  # the rest is kept
    assert directory.leavers_known  # bob's row names him: nobody is taken for a leaver


def test_a_mapping_rule_makes_an_end_date_from_another_column(tmp_path: Path) -> None:
    text = (
        "id,username,name,department,contract_end\nE1,ann,Ann,D1,31.12.2026\nE2,bob,Bob,D1,soon\n"
    )
    mapping = SourceMapping.model_validate(
        {
            "fields": {
                "end_date": {
                    "template": "{contract_end}",
                    "transforms": [
                        {"replace": [r"^(\d\d)\.(\d\d)\.(\d{4})$", r"\3-\2-\1"]},
                    ],
                }
            }
        }
    )
    directory = read_csv(csv(tmp_path, text), mapping=mapping)
    assert people(directory)["ann"].end_date == "2026-12-31"
    (row,) = directory.rejected
    assert row.reason == (
        "column 'source.mapping.fields.end_date': 'soon' is not a date (YYYY-MM-DD)"
    )


@settings(max_examples=examples(200), deadline=None)
@given(st.text(max_size=12))
def test_only_a_real_day_written_yyyy_mm_dd_is_a_date(text: str) -> None:
    import datetime as dt

    found = parse_iso_day(text)
    if found is not None:
        assert found == text.strip() and dt.date.fromisoformat(found).isoformat() == found


@given(st.dates())
def test_every_real_day_is_read_back(day: Any) -> None:
    assert parse_iso_day(day.isoformat()) == day.isoformat()


# ---------------------------------------------------------------- LDAP (a real slapd)


def test_ldap_attributes_give_dates_and_a_bad_one_rejects_that_person_only(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory
) -> None:
    slapd.add_ldif(
        f"dn: uid=ann,{ldap_base}\nobjectClass: inetOrgPerson\nuid: ann\ncn: Ann\nsn: A\n"
        "carLicense: 2027-01-04\nbusinessCategory: 20271231000000Z\n\n"
        f"dn: uid=bob,{ldap_base}\nobjectClass: inetOrgPerson\nuid: bob\ncn: Bob\nsn: B\n"
        "businessCategory: 2027-02-30\n\n"
        f"dn: uid=cat,{ldap_base}\nobjectClass: inetOrgPerson\nuid: cat\ncn: Cat\nsn: C\n"
    )
    directory = read_ldap(
        ldap_settings(attributes={"start_date": "carLicense", "end_date": "businessCategory"})
    )
    found = people(directory)
    assert (found["ann"].start_date, found["ann"].end_date) == ("2027-01-04", "2027-12-31")
    assert (found["cat"].start_date, found["cat"].end_date) == (None, None)
    (row,) = directory.rejected
    assert row.where == f"uid=bob,{ldap_base}" and row.username == "bob" and row.key
    assert row.reason == (
        "end_date (attribute businessCategory): '2027-02-30' is not a date "
        "(YYYY-MM-DD or a generalized time)"
    )
    assert directory.leavers_known


def test_ldap_mapping_rules_make_dates(
    slapd: Slapd, ldap_base: str, ldap_settings: SettingsFactory
) -> None:
    slapd.add_ldif(
        f"dn: uid=ann,{ldap_base}\nobjectClass: inetOrgPerson\nuid: ann\ncn: Ann\nsn: A\n"
        "carLicense: 04/01/2027\n"
    )
    mapping = SourceMapping.model_validate(
        {
            "fields": {
                "start_date": {
                    "template": "{carLicense}",
                    "transforms": [{"replace": [r"^(\d\d)/(\d\d)/(\d{4})$", r"\3-\2-\1"]}],
                }
            }
        }
    )
    directory = read_ldap(ldap_settings(), mapping=mapping)
    assert people(directory)["ann"].start_date == "2027-01-04"


# ---------------------------------------------------------------- settings


def test_the_time_zone_is_an_iana_name() -> None:
    assert DateSettings().time_zone == "UTC"
    assert SyncSettings.model_validate({"dates": {"time_zone": "Asia/Shanghai"}}).dates.time_zone
    for bad in ("Europe/Pari", "CEST", "../etc/passwd", "", " Europe/Paris"):
        with pytest.raises(ValueError, match="is not a time zone"):
            DateSettings(time_zone=bad)
    with pytest.raises(ValueError):
        DateSettings.model_validate({"before_start": "maybe"})
    with pytest.raises(ValueError):
        DateSettings(create_days_before_start=-1)


SETTINGS = CSV_SETTINGS + 'client_secret = "s3cret-value"\n[sync.dates]\ntime_zone = "{zone}"\n'


def test_a_settings_file_with_a_bad_time_zone_names_the_key_and_the_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in os.environ if n.startswith("SYNCD_")]:
        monkeypatch.delenv(name)
    path = write_settings(tmp_path, SETTINGS.replace("{zone}", "Europe/Pari"))
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    said = str(caught.value)
    assert "sync.dates.time_zone" in said and "'Europe/Pari' is not a time zone" in said
    monkeypatch.setenv("SYNCD_SYNC__DATES__TIME_ZONE", "Asia/Shanghai")
    assert load_settings(path).sync.dates.time_zone == "Asia/Shanghai"
