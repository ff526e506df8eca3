"""The CSV source's pure text rules: delimiters, yes/no, dates, numbers, paths, quote state."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from syncd.sources._text import (
    declared_delimiter,
    delimiter_from_setting,
    ends_inside_quotes,
    header_key,
    parse_date,
    parse_flag,
    parse_int32,
    shown,
    sniff_delimiter,
    split_list,
    split_path,
)


def test_header_key_trims_bom_spaces_and_case() -> None:
    assert header_key("\ufeff  User Name \t") == "user name"
    assert header_key(" 账号 ") == "账号"
    assert header_key("　工号　") == "工号"  # ideographic spaces


@pytest.mark.parametrize(
    ("line", "delimiter"),
    [
        ("id,username,name\r\n", ","),
        ("id;username;name\n", ";"),
        ("id\tusername\tname", "\t"),
        ("id|username|name", "|"),
        ('"a;b;c";"d,e";f\n', ";"),  # delimiters inside quotes do not count
        ("id;name,with,commas;x", ","),  # most frequent wins, even when it is wrong
        ("onlyonecolumn\n", ","),
        ("a,b;c", ","),  # a tie goes to the earlier candidate
    ],
)
def test_sniff_delimiter(line: str, delimiter: str) -> None:
    assert sniff_delimiter(line) == delimiter


@pytest.mark.parametrize(
    ("line", "delimiter"),
    [("sep=;\r\n", ";"), ("SEP=,", ","), ("\ufeffsep=|\n", "|"), ("sep=\t\n", "\t"),
     ("sep=\n", None), ("sep=;;", None), ("id,sep=;", None), ('sep="', None)],
)  # fmt: skip
def test_declared_delimiter(line: str, delimiter: str | None) -> None:
    assert declared_delimiter(line) == delimiter


@pytest.mark.parametrize(
    ("setting", "delimiter"),
    [(",", ","), (";", ";"), ("tab", "\t"), ("TAB", "\t"), ("\\t", "\t"), ("\t", "\t"),
     ("|", "|"), ("pipe", "|"), ("semicolon", ";"), ("comma", ","), (":", ":"),
     ("", None), ("ab", None), ('"', None), ("\n", None), ("x", None), ("1", None)],
)  # fmt: skip
def test_delimiter_from_setting(setting: str, delimiter: str | None) -> None:
    assert delimiter_from_setting(setting) == delimiter


@pytest.mark.parametrize(
    ("text", "flag"),
    [("1", True), ("true", True), ("TRUE", True), ("Yes", True), ("y", True), ("是", True),
     ("0", False), ("false", False), ("No", False), ("n", False), ("否", False), ("", False),
     ("  ", False), ("2", None), ("maybe", None), ("yes!", None)],
)  # fmt: skip
def test_parse_flag(text: str, flag: bool | None) -> None:
    assert parse_flag(text) is flag


@pytest.mark.parametrize(
    ("text", "iso"),
    [("1990-01-05", "1990-01-05"), ("1990/01/05", "1990-01-05"), ("19900105", "1990-01-05"),
     ("1990-1-5", "1990-01-05"), ("1990.1.5", "1990-01-05"), ("2000-02-29", "2000-02-29"),
     ("1990-01-05 00:00:00", "1990-01-05"), ("1990/1/5 0:00", "1990-01-05"),
     ("1990-01-05T08:30", "1990-01-05"),
     ("1900-02-29", None), ("1990-13-01", None), ("1990-00-10", None), ("0000-01-01", None),
     ("1990-01/05", None), ("05/01/1990", None), ("1990", None), ("199001055", None),
     ("1990-01-05x", None), ("１９９０-01-05", None), ("", None), ("not a date", None)],
)  # fmt: skip
def test_parse_date(text: str, iso: str | None) -> None:
    assert parse_date(text) == iso


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0), ("42", 42), (" 7 ", 7), ("+3", 3), ("-12", -12), ("2147483647", 2147483647),
     ("-2147483648", -2147483648), ("2147483648", None), ("1.0", None), ("1e3", None),
     ("1_000", None), ("²", None), ("١٢", None), ("", None), ("-", None)],
)  # fmt: skip
def test_parse_int32(text: str, value: int | None) -> None:
    assert parse_int32(text) == value


@pytest.mark.parametrize(
    ("text", "names"),
    [("Head Office/R&D/Backend", ("Head Office", "R&D", "Backend")),
     (" Head Office / R&D ", ("Head Office", "R&D")), ("/A//B/", ("A", "B")), ("", ()),
     (" / ", ())],
)  # fmt: skip
def test_split_path(text: str, names: tuple[str, ...]) -> None:
    assert split_path(text, "/") == names


def test_split_list_trims_and_drops_empty_and_repeated_items() -> None:
    assert split_list(" D2 ;D3;; D2;D1 ", ";") == ["D2", "D3", "D1"]
    assert split_list("", ";") == []


def test_shown_cuts_long_values() -> None:
    assert shown("abc") == "'abc'"
    assert shown("x" * 100, limit=5) == "'xxxxx'... (100 characters)"


@pytest.mark.parametrize(
    ("text", "inside"),
    [('a,b,c\n', False), ('a,"b\n', True), ('a,"b\nc",d\n', False), ('a,"b""\n', True),
     ('a,"b""",c\n', False), ('a,b"c,d\n', False), ('"a"b,"c\n', True), ('a,"b"c,"d\n', True),
     ('"', True), ('""', False), ('x\n"', True)],
)  # fmt: skip
def test_ends_inside_quotes(text: str, inside: bool) -> None:
    assert ends_inside_quotes(text, ",") is inside


def test_ends_inside_quotes_continues_a_record() -> None:
    assert ends_inside_quotes("still quoted\n", ",", inside=True)
    assert not ends_inside_quotes('closed here",x\n', ",", inside=True)
    assert ends_inside_quotes('escaped "" quote\n', ",", inside=True)


cells = st.lists(
    st.text(alphabet=st.sampled_from('ab,;"\n\r '), max_size=6), min_size=1, max_size=4
)


@given(rows=st.lists(cells, min_size=1, max_size=4), cut=st.integers(min_value=0, max_value=200))
def test_ends_inside_quotes_agrees_with_the_csv_module(rows: list[list[str]], cut: int) -> None:
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    text = out.getvalue()[:cut]
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        list(reader)
        truncated = False
    except csv.Error as exc:
        truncated = str(exc) == "unexpected end of data"
    assert ends_inside_quotes(text, ",") is truncated
