"""Pure text rules of the CSV source: header names, delimiters, yes/no, dates, numbers, paths.

Nothing here does I/O: each function takes the text of a cell or a line and says what it
means, or ``None`` when it means nothing valid.
"""

from __future__ import annotations

import datetime
import functools
import re

DELIMITERS = (",", ";", "\t", "|")  # what "auto" chooses among, in order of preference on a tie
DELIMITER_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}
TRUE_WORDS = frozenset({"1", "true", "yes", "y", "是"})
FALSE_WORDS = frozenset({"0", "false", "no", "n", "否"})
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1  # the platform's Integer fields are Java ints

_INTEGER = re.compile(r"[+-]?[0-9]+")
# 1990-01-05, 1990/1/5, 1990.01.05, optionally followed by a time (Excel writes "0:00:00").
_SEPARATED_DATE = re.compile(
    r"([0-9]{4})([-/.])([0-9]{1,2})\2([0-9]{1,2})(?:[ T][0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?)?"
)
_DECLARED_DELIMITER = re.compile(r"sep=(.)", re.IGNORECASE)
_COMPACT_DATE = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})")


def header_key(cell: str) -> str:
    """A header cell or configured column name as compared: trimmed, BOM-less, casefolded."""
    return cell.replace("\ufeff", "").strip().casefold()


def delimiter_from_setting(value: str) -> str | None:
    """The one-character delimiter an explicit setting names ("," ";" "tab" "|" ...), or None."""
    named = DELIMITER_NAMES.get(value.strip().casefold(), value)
    if len(named) != 1 or named in '\r\n"' or named.isalnum():
        return None
    return named


def declared_delimiter(line: str) -> str | None:
    """The delimiter an Excel "sep=;" first line declares, or None for any other line."""
    match = _DECLARED_DELIMITER.fullmatch(line.replace("\ufeff", "").rstrip("\r\n"))
    return match.group(1) if match and match.group(1) not in '\r\n"' else None


def sniff_delimiter(line: str) -> str:
    """The candidate delimiter seen most often outside quotes in a header line (comma if none)."""
    counts = dict.fromkeys(DELIMITERS, 0)
    inside = False
    for char in line:
        if char == '"':
            inside = not inside
        elif not inside and char in counts:
            counts[char] += 1
    best = max(DELIMITERS, key=lambda d: counts[d])  # max keeps the first of equals
    return best if counts[best] else ","


def parse_flag(text: str) -> bool | None:
    """True for 1/true/yes/y/是, False for 0/false/no/n/否 or an empty cell, None otherwise."""
    word = text.strip().casefold()
    if not word or word in FALSE_WORDS:
        return False
    if word in TRUE_WORDS:
        return True
    return None


def parse_date(text: str) -> str | None:
    """An ISO date (YYYY-MM-DD) from YYYY-MM-DD, YYYY/MM/DD, YYYY.MM.DD or YYYYMMDD, or None."""
    text = text.strip()
    match = _SEPARATED_DATE.fullmatch(text)
    if match:
        year, month, day = match.group(1, 3, 4)
    else:
        match = _COMPACT_DATE.fullmatch(text)
        if not match:
            return None
        year, month, day = match.groups()
    try:
        return datetime.date(int(year), int(month), int(day)).isoformat()
    except ValueError:  # 2023-02-30, month 13, year 0
        return None


_ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
ISO_DAY = "YYYY-MM-DD"


def parse_iso_day(text: str) -> str | None:
    """A start or end date: exactly ``YYYY-MM-DD`` (ASCII digits), a real day; else None.

    Strict, unlike birthdays: a day misread here creates or locks someone on the wrong day.
    """
    text = text.strip()
    if not _ISO_DAY.fullmatch(text):
        return None
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:  # 2026-02-30, month 13, year 0
        return None


def parse_int32(text: str) -> int | None:
    """A whole number that fits the platform's 32-bit integers (ASCII digits only), or None."""
    text = text.strip()
    # isdigit() alone would pass "²", which int() refuses: digits must be ASCII.
    if not (text.isascii() and text.isdigit()) and not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if INT32_MIN <= value <= INT32_MAX else None


def split_path(text: str, separator: str) -> tuple[str, ...]:
    """The department names of a path, trimmed, empty segments ("A//B", "/A/") dropped."""
    return tuple(part for part in (p.strip() for p in text.split(separator)) if part)


def split_list(text: str, separator: str) -> list[str]:
    """The trimmed, non-empty, distinct items of a joined cell, in their first order."""
    items = (item.strip() for item in text.split(separator))
    return list(dict.fromkeys(item for item in items if item))


def ends_inside_quotes(text: str, delimiter: str, inside: bool = False) -> bool:
    """Whether CSV text that starts a record (or continues one, when ``inside``) ends in quotes.

    Follows the reader's own rules: a quote opens a quoted field only at the start of a
    field, and two quotes inside one stand for a quote. Used to find where a record that
    the reader gave up on really ends.
    """
    length = len(text)
    at = 0
    while at < length:
        if inside:
            close = text.find('"', at)
            if close < 0:
                return True
            if text.startswith('"', close + 1):
                at = close + 2
                continue
            inside = False
            at = close + 1
        if at < length and text[at] == '"' and _starts_field(text, at, delimiter):
            inside = True
            at += 1
            continue
        at = _next_field_start(text, at, delimiter)
    return inside


def has_bare_quote(text: str, delimiter: str) -> bool:
    """Whether a record's text has a quote inside an unquoted field, or text after the quote
    that closes a quoted one: a quote was lost or added (a CSV writer never writes so)."""
    at, length = 0, len(text)
    field_end = _field_end(delimiter)
    while at < length:
        if text[at] == '"':
            at += 1
            while True:
                close = text.find('"', at)
                if close < 0:
                    return False  # never closed: the reader says so itself
                at = close + 2 if text.startswith('"', close + 1) else close + 1
                if at == close + 1:
                    break
            if at < length and text[at] not in (delimiter, "\r", "\n"):
                return True
        else:
            end = field_end.search(text, at)
            stop = end.start() if end else length
            if text.find('"', at, stop) >= 0:
                return True
            at = stop
        at += 1
    return False


def lenient_cells(line: str, delimiter: str) -> list[str]:
    """The cells of one line read leniently, as a record of its own: a quote opens a quoted
    field only at the start of a field, two quotes inside one stand for a quote, text after
    a closing quote joins the field, and a quote never closed runs to the line's end."""
    line = line.rstrip("\r\n")
    cells: list[str] = []
    at, length = 0, len(line)
    while True:
        if at < length and line[at] == '"':
            parts = []
            at += 1
            while True:
                close = line.find('"', at)
                if close < 0:
                    parts.append(line[at:])
                    at = length
                    break
                parts.append(line[at:close])
                if line.startswith('"', close + 1):
                    parts.append('"')
                    at = close + 2
                    continue
                at = close + 1
                break
            end = line.find(delimiter, at)
            end = length if end < 0 else end
            cells.append("".join(parts) + line[at:end])
        else:
            end = line.find(delimiter, at)
            end = length if end < 0 else end
            cells.append(line[at:end])
        if end >= length:
            return cells
        at = end + len(delimiter)


def _starts_field(text: str, at: int, delimiter: str) -> bool:
    return at == 0 or text[at - 1] in (delimiter, "\n", "\r")


def _next_field_start(text: str, at: int, delimiter: str) -> int:
    end = _field_end(delimiter).search(text, at)
    return end.end() if end else len(text)


@functools.cache
def _field_end(delimiter: str) -> re.Pattern[str]:
    return re.compile(f"[{re.escape(delimiter)}\r\n]")


def shown(value: str, limit: int = 60) -> str:
    """A cell's value quoted for a message, cut short when long (a field may be megabytes)."""
    if len(value) <= limit:
        return repr(value)
    return repr(value[:limit]) + f"... ({len(value)} characters)"
