"""How each user entry becomes an Employee (or a rejected row).

What is asked for, and which slot holds which field, is the ``Shape`` (shape.py); an
attribute's several values are read by the rule of the field that reads it (values.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, cast

from syncd.mapping import Get, Mapped, with_mapped
from syncd.model import (
    Employee,
    Kind,
    Photo,
    Position,
    RejectedRow,
    State,
    normalize_gender,
    row_identifiers,
)
from syncd.sources import active_directory as ad
from syncd.sources._text import parse_date, parse_flag, parse_int32, parse_iso_day
from syncd.sources._trace import Outcome, Tracer
from syncd.sources.ldap.shape import (
    EMPLOYEE_FIELDS,
    GENERALIZED_TIME,
    RARE_FIELDS,
    Shape,
    entry_id,
    value_problem,
)
from syncd.sources.ldap.values import Picked, Picker, Plain, distinct, one_of
from syncd.sources.ldap.wire import Several, Value, Values, WithSeveral

if TYPE_CHECKING:
    from syncd.sources.photos import PhotoCheck

# ---------------------------------------------------------------- people


class UnreadStatus(ValueError):
    """Whether a person is departed cannot be read (an AD account control the bind account
    may not read): their entry is set aside with the value, which makes the run say so loudly
    (syncd.sources.set_aside), as a CSV status nobody named does."""

    def __init__(self, message: str, value: str) -> None:
        super().__init__(message)
        self.value = value


class Placement(Protocol):
    """Finds the department a person belongs to, from a department path or the DN."""

    def department_of(self, path: str | None, where: str) -> str | None: ...


class PeopleReader:
    """Turns each user entry into an Employee, or a rejected row saying why not.

    Called once per person: the fields' slots are looked up once, here, and values are
    decoded inline rather than through a helper per field.
    """

    def __init__(
        self,
        shape: Shape,
        departed: frozenset[str],
        placement: Placement,
        rejected: list[RejectedRow],
        *,
        expired_before: int = 0,  # AD: accountExpires at or below this (and above 0) is past
        trace: Tracer | None = None,
        photos: PhotoCheck | None = None,
    ) -> None:
        self.shape = shape
        self.photos = photos  # checks the photo of each person, when photos are read
        self.departed = departed
        self.placement = placement
        self.rejected = rejected
        self.expired_before = expired_before
        self.trace = trace
        self.filtered = 0  # people the row filter left out
        self.highest_change: str | None = None
        self._highest_usn = -1
        self._slots = {
            name: shape.fields.get(name, (shape.empty_slot,)) for name in EMPLOYEE_FIELDS
        }
        self._first = {name: found[0] for name, found in self._slots.items()}
        self._rare_mapped = any(name in shape.fields for name in RARE_FIELDS)
        self._dates_mapped = any(name in shape.fields for name in DATE_FIELDS)
        self._date_sources = {name: self._source(name) for name in DATE_FIELDS}
        self._account_checked = (
            shape.account_control_slot is not None or shape.expires_slot is not None
        )
        # (department, title as read) -> the positions of everyone placed so: one value, shared.
        self._positions: dict[tuple[str | None, bytes | None], tuple[Position, ...]] = {}
        self._picker = Picker(shape.value_rules, shape.attributes, shape.choices)
        self._own = dict(shape.own_fields or shape.fields)
        self._own.update((name, (slot,)) for slot, name in shape.extras)
        if trace is not None:
            own = {
                name: tuple(shape.attributes[s] for s in slots) for name, slots in self._own.items()
            }
            trace.start(own)

    def employee(self, dn: str, values: Values) -> tuple[str, Employee | None]:
        try:
            picked: Picked | None = None
            if isinstance(values, WithSeveral):  # rare: read by each slot's rule (values.py)
                picked = self._picker.pick(dn, values)
                plain = picked.values
            else:
                plain = cast(Plain, values)
            if self.shape.rules is None and self.trace is None:
                return dn, self._employee(dn, plain, picked)
            return dn, self._mapped(dn, plain, picked)
        except ValueError as exc:
            reason = value_problem(exc)
            key, username = self._safe(dn, values, "id"), self._safe(dn, values, "username")
            status = exc.value if isinstance(exc, UnreadStatus) else None
            self.rejected.append(
                RejectedRow(
                    dn,
                    reason,
                    Kind.EMPLOYEE,
                    key,
                    username,
                    status=status,
                    identifiers=self._identifiers(dn, values),
                    departed=status is None and self._departed_anyway(values),
                )
            )
            if self.trace is not None:
                self.trace.record(dn, self._getter(values), Outcome(None, reason))
            return dn, None

    def _mapped(self, dn: str, values: Plain, picked: Picked | None) -> Employee | None:
        """The person by the mapping rules: None when the row filter leaves them out."""
        get, rules = self._getter(values), self.shape.rules
        mapped: Mapped | None = None
        if rules is not None:
            reason = rules.left_out(get)
            if reason is not None:
                self.filtered += 1
                if self.trace is not None:
                    self.trace.record(dn, get, Outcome(None, reason, left_out=True))
                return None
            mapped = rules.apply(get, lambda section, name: self._own_text(values, name))
            values.extend(
                None if (v := mapped.fields[name]) is None else v.encode()
                for name in self.shape.ruled
            )
        employee = self._employee(dn, values, picked)
        if mapped is not None:
            employee = with_mapped(employee, mapped)
        if self.trace is not None:
            self.trace.record(dn, get, Outcome(employee))
        return employee

    def _getter(self, values: Sequence[Value]) -> Get:
        """An attribute's value as text, by name (a value not UTF-8 rejects the person).

        Rules read the values picked (``values.py``); several values still there are only
        shown (a preview of a person rejected for them), sorted.
        """
        slot_of = self.shape.slot_of

        def get(attribute: str) -> str | None:
            raw = values[slot_of(attribute)]
            if isinstance(raw, Several):
                return " | ".join(sorted(v.decode("utf-8", "replace") for v in raw))
            return raw.decode() if raw else None

        return get

    def _own_text(self, values: Plain, name: str) -> str | None:
        """A field's (or extra attribute's) value read the way it is without a rule."""
        for slot in self._own.get(name, ()):
            if raw := values[slot]:
                return raw.decode()
        return None

    def _employee(self, dn: str, values: Plain, picked: Picked | None) -> Employee:
        first, shape = self._first, self.shape
        if v := values[shape.change_slot]:
            self._note_change(v)
        employee_id = self._id_of(values)
        several = picked.departments if picked is not None else None
        positions, title = self._placed(dn, values, several)
        departed = self._departed(employee_id, values)
        gender, birthday, sort_order, senior = (
            self._rare_fields(values) if self._rare_mapped else (None, None, None, False)
        )
        start_date, end_date = self._dates(values) if self._dates_mapped else (None, None)
        username = self._text(values, "username") or ""
        return Employee(
            id=employee_id,
            username=username,
            name=self._text(values, "name") or "",
            positions=positions,
            en_name=_decoded(values[first["en_name"]]),
            email=_decoded(values[first["email"]]),
            mobile=_decoded(values[first["mobile"]]),
            tel=_decoded(values[first["tel"]]),
            sn=_decoded(values[first["sn"]]),
            gender=gender,
            birthday=birthday,
            job_title=title,
            sort_order=sort_order,
            senior=senior,
            state=State.DEPARTED if departed else State.ACTIVE,
            extra=self._extras(values) if shape.extras else (),
            photo=self._photo(dn, values, picked, employee_id, username),
            start_date=start_date,
            end_date=end_date,
        )

    def _placed(
        self, dn: str, values: Plain, several: tuple[str, ...] | None
    ) -> tuple[tuple[Position, ...], str | None]:
        """The person's positions and job title: one department, or (picked) several."""
        raw_title = values[self._first["job_title"]]
        if several is not None and len(several) > 1:
            title = _decoded(raw_title)
            return self._placed_in(dn, several, title), title
        if several is not None:  # none that counts (no position), or exactly one
            path = several[0] if several else None
        else:
            path = self._department_path(values)
        department = self.placement.department_of(path, dn)
        positions = self._positions.get((department, raw_title))
        if positions is None:
            title = _decoded(raw_title)
            placed = (Position(department, title, primary=True),) if department is not None else ()
            positions = self._positions[(department, raw_title)] = placed
            return positions, title
        if positions:  # titles repeat across thousands of people: the string is shared
            return positions, positions[0].job_title
        return positions, _decoded(raw_title)

    def _department_path(self, values: Plain) -> str | None:
        """The department attribute's value, unless it is one the settings ignore."""
        shape = self.shape
        path = _decoded(values[shape.department_slot])
        if path and shape.choices.department_values_ignored and self._picker.ignored(path):
            return None
        return path

    def _photo(
        self, dn: str, values: Plain, picked: Picked | None, employee_id: str, username: str
    ) -> Photo | None:
        """The person's photo when photos are read; several photos are rejected, said."""
        shape = self.shape
        if self.photos is None or shape.photo_slot is None:
            return None
        data = values[shape.photo_slot]
        photo = self.photos.photo(data, dn, employee_id, username) if data else None
        if picked is not None and picked.photos is not None:
            attribute = shape.attributes[shape.photo_slot]
            count = len(distinct(picked.photos))
            self.photos.reject(dn, employee_id, username, f"{attribute} has {count} photos")
        return photo

    def _dates(self, values: Plain) -> tuple[str | None, str | None]:
        """Start and end dates (sync.dates): YYYY-MM-DD, or a generalized time's day."""
        where = self._date_sources
        return (
            _effective_day(self._text(values, "start_date"), "start_date", where["start_date"]),
            _effective_day(self._text(values, "end_date"), "end_date", where["end_date"]),
        )

    def _source(self, field_name: str) -> str:
        """Where a field is read: its attribute, or the mapping rule that makes it."""
        if field_name in self.shape.ruled:
            return f"source.mapping.fields.{field_name}"
        names = [
            self.shape.attributes[s] for s in self._slots[field_name] if s < self.shape.empty_slot
        ]
        return f"attribute {names[0]}" if names else field_name

    def _placed_in(
        self, dn: str, paths: tuple[str, ...], title: str | None
    ) -> tuple[Position, ...]:
        """A position in each department (several_departments = "positions"): the primary
        is the first department by its id (its path) in alphabetical order."""
        found = (self.placement.department_of(path, dn) for path in paths)
        ids = sorted({d for d in found if d is not None})
        if not ids:
            return ()
        return (Position(ids[0], title, primary=True), *(Position(d) for d in ids[1:]))

    def _rare_fields(self, values: Plain) -> tuple[str | None, str | None, int | None, bool]:
        """Gender, birthday, sort order and senior: no preset maps them, settings may."""
        return (
            normalize_gender(self._text(values, "gender")),
            _date(self._text(values, "birthday")),
            _integer(self._text(values, "sort_order"), "sort order"),
            _boolean(self._text(values, "senior"), "senior"),
        )

    def _note_change(self, raw: bytes) -> None:
        """Keep the highest change mark (modifyTimestamp text, or AD's uSNChanged number)."""
        if self.shape.flavor == "active_directory":
            usn = int(raw)
            if usn > self._highest_usn:
                self._highest_usn = usn
                self.highest_change = str(usn)
        else:
            stamp = raw.decode("ascii")
            if self.highest_change is None or stamp > self.highest_change:
                self.highest_change = stamp

    def _text(self, values: Plain, field_name: str) -> str | None:
        """The field's value, as text, from the first of its attributes present."""
        for slot in self._slots[field_name]:
            if raw := values[slot]:
                return raw.decode()
        return None

    def _id_of(self, values: Plain) -> str:
        for slot in self._slots["id"]:
            if raw := values[slot]:
                return entry_id(raw, guid=self.shape.guid_ids)
        return ""

    def _departed(self, employee_id: str, values: Plain) -> bool:
        """Whether the entry says its person departed: named by the departed filter's search,
        or an Active Directory account disabled or expired."""
        return employee_id in self.departed or (
            self._account_checked and (self._disabled(values) or self._expired(values))
        )

    def _departed_anyway(self, values: Values) -> bool:
        """Whether an entry set aside for a value it cannot give says its person departed,
        read from its own attributes (RejectedRow.departed). Not when mapping rules or
        several values decide what the entry gives: then who it names is not read plainly."""
        if self.shape.rules is not None or isinstance(values, WithSeveral):
            return False
        plain = cast(Plain, values)
        try:
            return self._departed(self._id_of(plain), plain)
        except ValueError:  # the status or the id cannot be read either
            return False

    def _disabled(self, values: Plain) -> bool:
        slot = self.shape.account_control_slot
        if slot is None:
            return False
        raw, attribute = values[slot], ad.ACCOUNT_CONTROL_ATTRIBUTE
        if not raw:
            # Every AD account has one: absent, the bind account may not read it, and an
            # unknown state must never pass for an enabled account (the person is kept).
            raise UnreadStatus(
                f"{attribute} is absent, so whether the account is disabled is unknown (may the "
                "bind account read it?)",
                f"{attribute} absent",
            )
        return ad.is_disabled(raw.decode("ascii"))  # an INTEGER in AD's schema

    def _expired(self, values: Plain) -> bool:
        slot = self.shape.expires_slot
        raw = values[slot] if slot is not None else None
        return ad.has_expired(raw.decode("ascii"), self.expired_before) if raw else False

    def _extras(self, values: Plain) -> tuple[tuple[str, str], ...]:
        return tuple(
            (name, raw.decode()) for slot, name in self.shape.extras if (raw := values[slot])
        )

    def _identifiers(self, dn: str, values: Values) -> tuple[tuple[str, str], ...]:
        """A rejected entry's RejectedRow.identifiers, read as far as they can be: its name,
        mobile, work number, e-mail and the extra attributes no mapping rule makes."""
        rules = self.shape.rules
        ruled = rules.extra if rules is not None else {}
        extras = [(n, self._safe(dn, values, n)) for _, n in self.shape.extras if n not in ruled]
        return row_identifiers(lambda f: self._safe(dn, values, f), extras)

    def _safe(self, dn: str, values: Values, field_name: str) -> str | None:
        """A field for a rejected row's key, if it can be read at all (several values: by
        the field's rule, as the person would be read)."""
        shape = self.shape
        one: Plain = []
        for value in values:
            if not isinstance(value, Several):
                one.append(value)
                continue
            found, rule = distinct(value), shape.value_rules.get(len(one))
            try:
                if len(found) > 1 and rule is not None:
                    one.append(one_of(dn, shape.attributes[len(one)], found, rule, shape.choices))
                else:
                    one.append(found[0] if len(found) == 1 else None)
            except ValueError:
                one.append(None)
        try:
            return (
                self._id_of(one) if field_name == "id" else self._own_text(one, field_name)
            ) or None
        except ValueError:  # UnicodeDecodeError included
            return None


# Values are read by the same rules as the CSV source's cells.


def _integer(text: str | None, what: str) -> int | None:
    if text is None or not text.strip():
        return None
    number = parse_int32(text)
    if number is None:
        raise ValueError(f"{what} {text!r} is not a whole number the platform can store")
    return number


def _boolean(text: str | None, what: str) -> bool:
    flag = parse_flag(text or "")
    if flag is None:
        raise ValueError(f"{what} {text!r} is neither yes nor no")
    return flag


DATE_FIELDS = ("start_date", "end_date")


def _effective_day(text: str | None, field_name: str, where: str) -> str | None:
    """A start or end date: strictly YYYY-MM-DD, or the day of a generalized time
    (20261231000000Z) as written; anything else rejects the person."""
    if text is None or not text.strip():
        return None
    value = text.strip()
    match = GENERALIZED_TIME.fullmatch(value)
    day = parse_iso_day(value if match is None else f"{value[:4]}-{value[4:6]}-{value[6:8]}")
    if day is None:
        raise ValueError(
            f"{field_name} ({where}): {value!r} is not a date (YYYY-MM-DD or a generalized time)"
        )
    return day


def _date(text: str | None) -> str | None:
    """An ISO date from a date as the CSV source reads them, or from a generalized time."""
    if text is None or not text.strip():
        return None
    day = parse_date(GENERALIZED_TIME.sub(r"\1", text.strip()))
    if day is None:
        raise ValueError(f"birthday {text!r} is not a date")
    return day


def _decoded(raw: bytes | None) -> str | None:
    """An attribute's first value as text; None when it has none."""
    return raw.decode() if raw else None
