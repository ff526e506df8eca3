"""The identity suite's truth, and the sources it writes from it the way real ones come.

``Truth`` is the company as it really is, kept apart from what syncd reads: people by a
key of their own (never reused), each active, departed or gone, with the HR id they truly
have. Its events are HR's: hires, leavers, departures, returns, moves, and a leaver's
username recycled for a new hire (now and then while HR still lists the leaver as
departed, so that two rows give it). ``Export`` writes the truth as an HR system's CSV
export gets written in real life, then damages the text: lines joined (a lost line
break), blank lines and rows cut in two (doubled line breaks), quoting broken, the status
vocabulary changed, usernames and department names spelled in NFD, another letter case
or with invisible characters. ``Ldif`` writes the truth into a real slapd as change
records: entries with multi-valued attributes whose value order changes every round.
"""

from __future__ import annotations

import base64
import csv
import io
import random
import unicodedata
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["active", "departed", "gone"]

# Usernames and department names with letters that NFD spells in two code points.
USERNAMES = (
    "josé", "zoë", "renée", "müller", "chloé", "noël", "françois", "søren",
    "dvořák", "björn", "inès", "jürgen", "agnès", "anaïs", "hélène", "gaëlle",
)  # fmt: skip
UNIT_NAMES = (
    "Réception", "Qualité", "Sécurité", "Café", "Öffentlichkeit", "Ärzte",
    "Éditions", "研发部", "Développement", "Façade", "Société", "Übersetzung",
)  # fmt: skip
SURNAMES = ("Li", "Wang", "Zhang", "Müller", "Dupré", "Núñez", "O'Brien", "Ørsted")
GIVEN = ("Wei", "Fang", "Anaïs", "José", "Chloé", "Ming", "Zoë", "Ilse")
INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u200e", "\u200f", "\u202a")
# The HR system's status values: the settings name 在职 active and 离职 departed.
ACTIVE, DEPARTED = "在职", "离职"
VOCABULARIES = {  # a change of the export's vocabulary: (active, departed)
    "departed renamed 离职 -> 已离职": (ACTIVE, "已离职"),
    "english: Active / Terminated": ("Active", "Terminated"),
    "active renamed 在职 -> 在岗": ("在岗", DEPARTED),
}
COLUMNS = ("id", "username", "name", "department", "email", "mobile", "status")


def fold(text: str) -> str:
    """The key two spellings of one name share: NFC, no invisible characters, case folded."""
    visible = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return unicodedata.normalize("NFC", visible).casefold()


def twins(
    accounts: Iterable[tuple[str, str]], nodes: Iterable[Mapping[str, Any]]
) -> Iterator[tuple[str, str, str]]:
    """Look-alikes on the platform, as (violation kind, key, what): two accounts whose
    usernames (``accounts``: username and how to show the account) fold alike, and two
    departments under one parent whose names do."""
    usernames: dict[str, list[str]] = {}
    for username, shown in accounts:
        usernames.setdefault(fold(username), []).append(shown)
    for key, alike in usernames.items():
        if len(alike) > 1:
            yield "look-alike second account", key, ", ".join(alike)
    names: dict[tuple[Any, str], list[str]] = {}
    for node in nodes:
        names.setdefault((node.get("parent_org_id"), fold(node["name"])), []).append(node["name"])
    for (parent, key), spelled in names.items():
        if len(spelled) > 1:
            yield "look-alike second department", f"{parent}/{key}", repr(spelled)


def variant(rng: random.Random, text: str) -> tuple[str, str]:
    """Another spelling of ``text`` (NFD, letter case, an invisible character) and its kind."""
    kinds = ["case", "invisible"]
    if unicodedata.normalize("NFD", text) != text:
        kinds += ["nfd", "nfd"]
    kind = rng.choice(kinds)
    if kind == "nfd":
        return unicodedata.normalize("NFD", text), kind
    if kind == "case":
        spelled = rng.choice([text.upper(), text.title(), text.swapcase()])
        if spelled != text:  # (letters without case, as in 研发部, have no other)
            return spelled, kind
    at = rng.randint(0, len(text))
    return text[:at] + rng.choice(INVISIBLE) + text[at:], "invisible"


@dataclass(frozen=True)
class Account:
    """A platform account after a run, and the person it is held for (None: nobody known);
    the campaign keeps its name, mobile, e-mail and extension_id too."""

    id: int
    username: str
    holder: int | None
    locked: bool
    fields: tuple[str, ...] = ()


@dataclass
class Unit:
    id: str
    name: str
    parent: str  # "" at the top


@dataclass
class Person:
    key: int  # the person, whatever their rows say
    hr_id: str
    username: str
    name: str
    email: str
    mobile: str
    unit: str
    status: Status = "active"
    # LDAP: more values of multi-valued attributes, as a real directory holds them.
    more: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Truth:
    rng: random.Random
    units: list[Unit]
    ldap: bool  # people carry more values of multi-valued attributes
    people: list[Person] = field(default_factory=list)
    serial: int = 0
    log: list[str] = field(default_factory=list)  # this round's events, as told in failures
    counts: dict[str, int] = field(default_factory=dict)  # events of the scenario, by kind
    handed_on: set[str] = field(default_factory=set)  # HR ids given to one person after another
    # The old HR ids of people HR numbered anew whose old record an export still lists,
    # departed (a contractor made an employee): old id -> the person's key.
    old_records: dict[str, int] = field(default_factory=dict)

    def event(self, kind: str, text: str) -> None:
        self.log.append(f"{kind}: {text}")
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def unit(self, unit_id: str) -> Unit:
        return next(u for u in self.units if u.id == unit_id)

    def path(self, unit_id: str, spelled: dict[str, str] | None = None) -> list[str]:
        names: list[str] = []
        while unit_id:
            unit = self.unit(unit_id)
            names.insert(0, (spelled or {}).get(unit.id, unit.name))
            unit_id = unit.parent
        return names

    def present(self) -> list[Person]:
        return [p for p in self.people if p.status != "gone"]

    def with_status(self, *status: Status) -> list[Person]:
        return [p for p in self.people if p.status in status]

    def taken(self, username: str) -> bool:
        return any(fold(p.username) == fold(username) for p in self.present())

    def hire(self, username: str | None = None) -> Person:
        self.serial += 1
        n = self.serial
        surname, given = self.rng.choice(SURNAMES), self.rng.choice(GIVEN)
        name = f"{surname}, {given} {n}" if self.rng.random() < 0.3 else f"{given} {surname} {n}"
        person = Person(
            key=n,
            hr_id=f"E{n}",
            username=username or f"{self.rng.choice(USERNAMES)}{n}",
            name=name,
            email=f"p{n}@acme.example",
            mobile=f"139{n:08d}",
            unit=self.rng.choice(self.units).id,
        )
        if self.ldap:  # what a real slapd holds beside the value that names the person
            if self.rng.random() < 0.3:
                person.more["uid"] = [f"alias{n}"]
            if self.rng.random() < 0.4:
                person.more["cn"] = [f"{given}{surname} {n}"]
            if self.rng.random() < 0.4:
                person.more["mail"] = [f"alias{n}@acme.example"]
            if self.rng.random() < 0.3:
                person.more["employeeType"] = ["staff"]
        self.people.append(person)
        return person


def first_truth(rng: random.Random, *, ldap: bool) -> Truth:
    names = rng.sample(UNIT_NAMES, 7)
    units = [Unit("U1", names[0], "")]
    for n in range(2, 8):
        units.append(Unit(f"U{n}", names[n - 1], rng.choice(["", *[u.id for u in units]])))
    truth = Truth(rng, units, ldap)
    for _ in range(rng.randint(10, 15)):
        truth.hire()
    for person in rng.sample(truth.people, 2):
        person.status = "departed"
    return truth


# ---------------------------------------------------------------- HR's events


def hire(t: Truth) -> None:
    p = t.hire()
    t.event("hire", f"{p.hr_id} {p.username} in {p.unit}")


def leave(t: Truth) -> None:
    candidates = t.with_status("active", "departed")
    if len(candidates) > 4:
        p = t.rng.choice(candidates)
        p.status = "gone"
        t.event("leave", f"{p.hr_id} {p.username} dropped from the source")


def depart(t: Truth) -> None:
    if candidates := t.with_status("active"):
        p = t.rng.choice(candidates)
        p.status = "departed"
        t.event("depart", f"{p.hr_id} {p.username} departed")


def come_back(t: Truth) -> None:
    held = {p.hr_id for p in t.present()}  # a gone person's number may be handed on
    candidates = [
        p
        for p in t.with_status("departed", "gone")
        if p.status == "departed" or not (t.taken(p.username) or p.hr_id in held)
    ]
    if candidates:
        p = t.rng.choice(candidates)
        t.event("return", f"{p.hr_id} {p.username} active again (was {p.status})")
        p.status = "active"


def move(t: Truth) -> None:
    if candidates := t.present():
        p = t.rng.choice(candidates)
        p.unit = t.rng.choice(t.units).id
        t.event("move", f"{p.hr_id} {p.username} to {p.unit}")


def _a_leaver(t: Truth, free: list[Person]) -> Person | None:
    """One of ``free`` (gone, nobody present holding what is given on), or, when there is
    none, someone dropped from the source in this very export; None: too few left."""
    if not free:
        candidates = t.with_status("departed", "active")
        if len(candidates) < 5:
            return None
        leaver = t.rng.choice(candidates)
        leaver.status = "gone"
        t.event("leave", f"{leaver.hr_id} {leaver.username} dropped from the source")
        free = [leaver]
    return t.rng.choice(free)


def recycle(t: Truth) -> None:
    """A new hire gets a leaver's username (dropped before, or in this very export); now
    and then (a generator of its own) the username of someone HR still lists as departed,
    most often since this round (their account not locked yet): both rows give it."""
    old = _still_listed(t) or _a_leaver(
        t, [p for p in t.with_status("gone") if not t.taken(p.username)]
    )
    if old is None:
        return
    username, kind = old.username, "same spelling"
    if t.rng.random() < 0.3:
        username, kind = variant(t.rng, old.username)
    p = t.hire(username)
    t.event("recycled username", f"{p.hr_id} hired as {username!r} ({kind}), {old.hr_id}'s")


def _still_listed(t: Truth) -> Person | None:
    """Now and then someone HR still lists as departed, whose username nobody else has,
    most often one who left this round; else None, drawing nothing from the round's
    generator."""
    side = side_random(t.rng, 7)
    listed = [
        p
        for p in t.with_status("departed")
        if not any(fold(q.username) == fold(p.username) and q.key != p.key for q in t.present())
    ]
    fresh = [p for p in listed if p.hr_id in departed_this_round(t)]
    if listed and side.random() < (0.8 if fresh else 0.3):
        return side.choice(fresh or listed)
    return None


def hand_on_number(t: Truth) -> None:
    """HR hands a leaver's number (their source id) on to a new hire, in the export that
    drops the leaver or a later one; half the time with the leaver's username too (the
    update syncd must hold: the record under the number shows another person)."""
    taken = {p.hr_id for p in t.present()}
    free = [p for p in t.with_status("gone") if p.hr_id not in taken and not t.taken(p.username)]
    old = _a_leaver(t, free)
    if old is None:
        return
    same = t.rng.random() < 0.5
    p = t.hire(old.username if same else None)
    p.hr_id = old.hr_id
    t.handed_on.add(old.hr_id)
    told = f"{old.username!r} too" if same else f"as {p.username!r}"
    t.event("number handed on", f"{old.hr_id} of {old.username} given to a new hire, {told}")


# hand_on_number before recycle: the restores double the last one (usernames recycled).
TRUTH_EVENTS = (hire, hire, leave, depart, come_back, move, hand_on_number, recycle)


def holder(
    e: Mapping[str, Any],
    source_ids: Mapping[str, int],
    handed_on: Collection[str],
    by_contact: Mapping[tuple[Any, Any], int],
) -> int | None:
    """Whose a platform account is: the person its extension_id names, or, where that id
    was handed on to someone else (held by more than one person in turn) or names nobody,
    the person its name and mobile are (None: nobody known)."""
    mark = e.get("extension_id") or ""
    found = None if mark in handed_on else source_ids.get(mark)
    return by_contact.get((e.get("name"), e.get("mobile"))) if found is None else found


# ---------------------------------------------------------------- CSV exports


@dataclass
class Export:
    """One round's CSV files, written from the truth and damaged as real exports are."""

    truth: Truth
    layout: Literal["two_files", "paths"]
    line_end: str
    vocabulary: tuple[str, str] = (ACTIVE, DEPARTED)
    # The last write's rows whose name was blanked (HR blanking a leaver's name), by id:
    # each row's line as written before any other damage, and the lines of the other rows
    # that give its username in any spelling (a new hire given it); and the employees
    # text written.
    blanked: dict[str, str] = field(default_factory=dict)
    sharing: dict[str, list[str]] = field(default_factory=dict)
    # The last write's own rows of people numbered anew whose old record it lists, by the
    # person's key: each row's line as written before any other damage.
    renumbered: dict[int, str] = field(default_factory=dict)
    written: str = ""

    def write(self, *, damaged: bool = True) -> tuple[str, str]:
        """The employees file's text and the departments file's."""
        t, rng = self.truth, self.truth.rng
        spelled_people: dict[int, str] = {}
        some = rng.choice([0, 0, 1, 2, 3]) if damaged else 0
        for p in rng.sample(t.present(), min(len(t.present()), some)):
            spelled_people[p.key], kind = variant(rng, p.username)
            t.event("username variant", f"{p.hr_id} as {spelled_people[p.key]!r} ({kind})")
        spelled_units: dict[str, str] = {}
        if damaged and rng.random() < 0.35:
            unit = rng.choice(t.units)
            spelled_units[unit.id], kind = variant(rng, unit.name)
            t.event("department variant", f"{unit.id} as {spelled_units[unit.id]!r} ({kind})")
        if damaged:
            self._renumber_someone()
        rows = [list(COLUMNS)]
        for old, key in sorted(t.old_records.items()):  # before the person's own row
            p = next(p for p in t.people if p.key == key)
            department = "/".join(t.path(p.unit)) if self.layout == "paths" else p.unit
            rows.append(
                [old, p.username, p.name, department, p.email, p.mobile, self.vocabulary[1]]
            )
        for p in t.present():
            department = p.unit
            if self.layout == "paths":
                department = "/".join(t.path(p.unit, spelled_units))
            status = self.vocabulary[0] if p.status == "active" else self.vocabulary[1]
            username = spelled_people.get(p.key, p.username)
            rows.append([p.hr_id, username, p.name, department, p.email, p.mobile, status])
        departments = _plain(
            [["id", "name", "parent_id"]]
            + [[u.id, spelled_units.get(u.id, u.name), u.parent] for u in t.units],
            self.line_end,
        )
        self.blanked, self.sharing, self.renumbered = {}, {}, {}
        self.written = _plain(rows, self.line_end) if not damaged else self._damaged(rows)
        return self.written, departments

    def _damaged(self, rows: list[list[str]]) -> str:
        t, rng = self.truth, self.truth.rng
        self._mistype_an_id(rows)
        self._blank_a_name(rows)
        anew = {p.hr_id: p.key for p in t.people if p.key in t.old_records.values()}
        self.renumbered = {
            anew[row[0]]: ",".join(_cell(value) for value in row)
            for row in rows[1:]
            if row[0] in anew
        }
        cells = [[_cell(value) for value in row] for row in rows]
        ids = [row[0] for row in rows]
        for _ in range(rng.choice([0, 0, 1, 2])):
            n = rng.randrange(1, len(cells))
            how = _break_quote(rng, cells[n])
            t.event("quote broken", f"row of {ids[n]}: {how}")
        lines = [",".join(row) for row in cells]
        who = list(ids)
        for _ in range(rng.choice([0, 0, 1, 2])):  # a line break inside a row: two lines
            n = rng.randrange(1, len(lines))
            at = _outside_quotes(rng, lines[n])
            lines[n : n + 1] = [lines[n][:at], lines[n][at:]]
            who[n : n + 1] = [who[n], f"(rest of {who[n]})"]
            t.event("line break doubled", f"row of {who[n]} cut at {at}")
        for _ in range(rng.choice([0, 0, 1, 2])):  # a lost line break: two rows joined
            if len(lines) > 3:
                n = rng.randrange(1, len(lines) - 1)
                lines[n : n + 2] = [lines[n] + lines[n + 1]]
                t.event("line break lost", f"rows of {who[n]} and {who[n + 1]} joined")
                who[n : n + 2] = [f"{who[n]}+{who[n + 1]}"]
        if rng.random() < 0.3:
            n = rng.randrange(1, len(lines) + 1)
            lines.insert(n, "")
            who.insert(n, "(blank)")
            t.event("blank line", f"at line {n + 1}")
        return "".join(line + self.line_end for line in lines)

    def _renumber_someone(self) -> None:
        """Now and then HR numbers an active person anew (a contractor made an employee, a
        rehire) and the export keeps their old record, departed, under the same username,
        name and mobile, for a round or more; the old record goes when its person is gone
        or, now and then, by itself. Drawn from a generator of its own (the truth's draws
        stay as they were): the same person's account, whichever number shows it."""
        t = self.truth
        side = side_random(t.rng, 8)
        present = {p.key for p in t.present()}
        for old, key in list(t.old_records.items()):
            if key not in present or side.random() < 0.3:
                del t.old_records[old]
                t.event("old record dropped", f"{old} of {key}")
        active = [p for p in t.with_status("active") if p.key not in t.old_records.values()]
        if not active or side.random() < 0.85:
            return
        p = side.choice(active)
        old, p.hr_id = p.hr_id, f"N{p.key}"
        if old == p.hr_id or old in t.old_records:
            p.hr_id = old
            return
        t.old_records[old] = p.key
        t.event("numbered anew", f"{old} {p.username} now {p.hr_id}, the old record departed")

    def _mistype_an_id(self, rows: list[list[str]]) -> None:
        """Now and then a row under the HR number of someone gone (a typo, or a line break
        moved into the next row's id: "3" then "6" read as "36"): the row reads well, and
        only its values say whose it is. Drawn from a generator of its own, made from the
        round's without drawing from it, so every other draw of a seed stays as it was.

        The number is judged as one handed on (``holder``): an account carrying it is whose
        its name and mobile say. A new hire's row under it cannot be told from HR giving
        the number to the hire, and syncd rightly treats it so."""
        t = self.truth
        held = {row[0] for row in rows}
        gone = sorted({p.hr_id for p in t.with_status("gone")} - held)
        if not gone or len(rows) < 2:
            return
        side = side_random(t.rng, 0)
        if side.random() < 0.8:
            return
        n = side.randrange(1, len(rows))
        wrong = side.choice(gone)
        t.event("id mistyped", f"row of {rows[n][0]} ({rows[n][1]}) under {wrong}")
        rows[n][0] = wrong
        t.handed_on.add(wrong)

    def _blank_a_name(self, rows: list[list[str]]) -> None:
        """Now and then a row without its name (some HR systems blank a leaver's name): set
        aside, it still says who left. Drawn from a generator of its own, as ids are
        mistyped, so every other draw of a seed stays as it was."""
        n = row_to_blank(self.truth, rows, 1)
        if n is None:
            return
        rows[n][2] = ""
        self.truth.event("name blanked", f"row of {rows[n][0]} ({rows[n][1]})")
        self.blanked[rows[n][0]] = ",".join(_cell(value) for value in rows[n])
        self.sharing[rows[n][0]] = [
            ",".join(_cell(value) for value in row)
            for m, row in enumerate(rows[1:], 1)
            if m != n and fold(row[1]) == fold(rows[n][1])
        ]


def row_to_blank(t: Truth, rows: list[list[str]], salt: int) -> int | None:
    """Now and then the row (under the header, its id first) whose name an export blanks,
    as some HR systems blank a leaver's: most often the row of someone who left this round
    (their account is still active); None this time. Drawn from a generator of its own
    (``salt``), so every other draw of a seed stays as it was."""
    side = side_random(t.rng, salt)
    if side.random() < 0.6 or len(rows) < 2:
        return None
    left = departed_this_round(t)
    return preferred_row(side, rows, [n for n in range(1, len(rows)) if rows[n][0] in left])


def departed_this_round(t: Truth) -> set[str]:
    """The HR ids of the people this round's events made departed."""
    return {line.split()[1] for line in t.log if line.startswith("depart: ")}


def preferred_row(side: random.Random, rows: list[list[str]], preferred: list[int]) -> int:
    """Most often one of the ``preferred`` rows (if any), else any row under the header."""
    if preferred and side.random() < 0.8:
        return side.choice(preferred)
    return side.randrange(1, len(rows))


def side_random(rng: random.Random, salt: int) -> random.Random:
    """A generator of its own, made from ``rng``'s state without drawing from it: the same in
    every process (a Random's state is ints; hypothesis's stand-in gives a state id)."""
    state = rng.getstate()
    return random.Random(hash(state[1] if isinstance(state, tuple) else state) + salt)


def _cell(value: str) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([value])
    return out.getvalue()


def _plain(rows: list[list[str]], line_end: str) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator=line_end).writerows(rows)
    return out.getvalue()


def _break_quote(rng: random.Random, row: list[str]) -> str:
    # Fields quoted whole, as the writer quotes them: a field an earlier break left with an
    # opening quote alone would lose its last character to "unquoted", a clean row naming
    # another username (seed 4369: björn10 read as björn1), not a broken one.
    quoted = [n for n, c in enumerate(row) if len(c) > 1 and c[0] == '"' and c[-1] == '"']
    choice = rng.choice(["unquoted", "opened", "after"] if quoted else ["opened"])
    if choice == "unquoted":  # the quotes around a value with a comma lost: one field more
        n = rng.choice(quoted)
        row[n] = row[n][1:-1].replace('""', '"')
        return f"field {n + 1} lost its quotes"
    if choice == "after":  # text after the closing quote
        n = rng.choice(quoted)
        row[n] += "x"
        return f"text after field {n + 1}'s closing quote"
    n = rng.randrange(len(row))  # a quote opened and never closed
    fresh = [k for k, c in enumerate(row) if not c.startswith('"')]
    if row[n].startswith('"') and fresh:  # opened twice, a quoted field reads whole again,
        n = rng.choice(fresh)  # with a quote more: another value, not a broken row
    row[n] = '"' + row[n]
    return f"a quote opened in field {n + 1}"


def _outside_quotes(rng: random.Random, line: str) -> int:
    """A position of the line, not inside a quoted field, to cut it at."""
    places, inside = [], False
    for at, char in enumerate(line):
        if char == '"':
            inside = not inside
        elif not inside and at:
            places.append(at)
    return rng.choice(places or [len(line) // 2 or 1])


# ---------------------------------------------------------------- LDIF for a real slapd


def ldif_value(attribute: str, value: str) -> str:
    """One LDIF line; base64 for anything not plain printable ASCII (RFC 2849)."""
    safe = value.isascii() and value.isprintable() and not value.startswith((" ", ":", "<"))
    if safe and not value.endswith(" "):
        return f"{attribute}: {value}\n"
    return f"{attribute}:: {base64.b64encode(value.encode()).decode()}\n"


@dataclass
class Ldif:
    """The truth as entries of a slapd, and the change records that bring it up to date."""

    truth: Truth
    base: str
    ou_tree: bool  # departments from the OU tree; else from a path in each person's ``ou``
    entries: dict[int, tuple[str, list[tuple[str, list[str]]]]] = field(default_factory=dict)
    units_added: bool = False
    added: list[int] = field(default_factory=list)

    def unit_dn(self, unit_id: str) -> str:
        dn = self.base
        for name in self.truth.path(unit_id):
            dn = f"ou={name},{dn}"
        return dn

    def person_dn(self, p: Person) -> str:
        parent = self.unit_dn(p.unit) if self.ou_tree else f"ou=People,{self.base}"
        return f"employeeNumber={p.hr_id},{parent}"

    def changes(self, *, damaged: bool = True) -> str:
        """Change records from what slapd holds now to this round's truth, value order new;
        ``added``: the people whose entries they add."""
        t, rng = self.truth, self.truth.rng
        chunks: list[str] = []
        self.added = []
        if not self.units_added:
            chunks.append(self._base_entries())
            self.units_added = True
        spelled: dict[int, str] = {}
        some = rng.choice([0, 0, 1, 2]) if damaged else 0
        for p in rng.sample(t.present(), min(len(t.present()), some)):
            spelled[p.key], kind = variant(rng, p.username)
            t.event("username variant", f"{p.hr_id} as {spelled[p.key]!r} ({kind})")
        units: dict[str, str] = {}
        if damaged and not self.ou_tree and rng.random() < 0.35:
            unit = rng.choice(t.units)
            units[unit.id], kind = variant(rng, unit.name)
            t.event("department variant", f"{unit.id} as {units[unit.id]!r} ({kind})")
        # The leavers' entries go first: a number handed on frees its entry's name, which
        # someone earlier in the list (a leaver come back) may take in the same export.
        for p in t.with_status("gone"):
            if (old := self.entries.pop(p.key, None)) is not None:
                chunks.append(ldif_value("dn", old[0]) + "changetype: delete\n\n")
        shuffled = 0
        for p in t.present():
            old = self.entries.get(p.key)
            dn, attributes = self.person_dn(p), self._attributes(p, spelled, units)
            if old is None:
                chunks.append(self._add(dn, p, attributes))
                self.added.append(p.key)
            else:
                if old[0] != dn:
                    chunks.append(self._moved(old[0], dn))
                if attributes != old[1]:
                    shuffled += {a for a, _ in attributes} == {a for a, _ in old[1]}
                    chunks.append(self._replace(dn, attributes))
            self.entries[p.key] = (dn, attributes)
        if shuffled:
            t.event("values reordered", f"{shuffled} entries rewritten")
        return "".join(chunks)

    def reordered(self) -> str:
        """Change records that only put multi-valued attributes' values in another order."""
        chunks = []
        for key, (dn, attributes) in self.entries.items():
            if any(len(values) > 1 for _, values in attributes):
                shuffled = [(a, self.truth.rng.sample(v, len(v))) for a, v in attributes]
                if shuffled != attributes:
                    chunks.append(self._replace(dn, shuffled))
                    self.entries[key] = (dn, shuffled)
        return "".join(chunks)

    def _base_entries(self) -> str:
        t, rng = self.truth, self.truth.rng
        name = self.base.split(",")[0].removeprefix("ou=")
        top = "changetype: add\nobjectClass: organizationalUnit\n"
        chunks = [f"dn: {self.base}\n{top}ou: {name}\n"]
        if self.ou_tree:
            for unit in sorted(t.units, key=lambda u: len(t.path(u.id))):
                values = [unit.name] + ([f"Alias {unit.id}"] if rng.random() < 0.5 else [])
                rng.shuffle(values)
                chunks.append(
                    ldif_value("dn", self.unit_dn(unit.id))
                    + "changetype: add\nobjectClass: organizationalUnit\n"
                    + "".join(ldif_value("ou", v) for v in values)
                )
        else:
            chunks.append(
                f"dn: ou=People,{self.base}\nchangetype: add\nobjectClass: organizationalUnit\n"
                "ou: People\n"
            )
        return "\n".join(chunks) + "\n"

    def _attributes(
        self, p: Person, spelled: dict[int, str], units: dict[str, str]
    ) -> list[tuple[str, list[str]]]:
        rng = self.truth.rng
        values = {
            "uid": [spelled.get(p.key, p.username), *p.more.get("uid", [])],
            "cn": [p.name, *p.more.get("cn", [])],
            "mail": [p.email, *p.more.get("mail", [])],
            "mobile": [p.mobile],
            "employeeType": [*p.more.get("employeeType", [])]
            + (["departed"] if p.status == "departed" else []),
        }
        if not self.ou_tree:  # the department's path, beside the People a directory adds
            values["ou"] = ["/".join(self.truth.path(p.unit, units)), "People"]
        for listed in values.values():
            rng.shuffle(listed)
        return sorted(values.items())

    def _add(self, dn: str, p: Person, attributes: list[tuple[str, list[str]]]) -> str:
        lines = ldif_value("dn", dn) + "changetype: add\nobjectClass: inetOrgPerson\n"
        lines += ldif_value("employeeNumber", p.hr_id) + ldif_value("sn", p.name.split()[-1])
        for attribute, values in attributes:
            lines += "".join(ldif_value(attribute, v) for v in values)
        return lines + "\n"

    def _replace(self, dn: str, attributes: list[tuple[str, list[str]]]) -> str:
        lines = ldif_value("dn", dn) + "changetype: modify\n"
        for attribute, values in attributes:
            lines += f"replace: {attribute}\n" + "".join(ldif_value(attribute, v) for v in values)
            lines += "-\n"
        return lines + "\n"

    @staticmethod
    def _moved(old: str, new: str) -> str:
        rdn, _, superior = new.partition(",")
        return (
            ldif_value("dn", old)
            + "changetype: modrdn\n"
            + ldif_value("newrdn", rdn)
            + "deleteoldrdn: 1\n"
            + ldif_value("newsuperior", superior)
            + "\n"
        )
