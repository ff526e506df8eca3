"""What ``syncd check --preview`` shows of a person: each platform field, where it comes
from, the source values it reads and the value the platform would get, kept by a tracer
as one source is read (``syncd.sources.preview`` asks for it; with several sources,
``syncd.sources.joined_preview`` asks once per source)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from syncd.config import Settings, SourceSettings
from syncd.mapping import FieldRule, Get, Template
from syncd.model import Directory, Employee
from syncd.sources._trace import Outcome

# Model field -> the platform's field it becomes, in the order shown.
PLATFORM_FIELDS = {
    "id": "extension_id",
    "username": "username",
    "name": "name",
    "en_name": "en_name",
    "email": "email",
    "mobile": "mobile",
    "tel": "tel",
    "sn": "sn",
    "gender": "gender",
    "birthday": "birthday",
    "job_title": "positions.job_title",
    "sort_order": "sort_order",
    "senior": "senior",
    "department": "positions.org",
    "state": "locked",
}
_OWN_NAMES = {"state": "status"}  # where a source's own attribute for a field is named otherwise


@dataclass
class FieldPreview:
    field: str  # the platform's field
    source: str  # the attribute it reads, or the rule that makes it
    inputs: dict[str, str | None]  # source attribute -> value
    value: str | None  # what the platform gets (None: nothing)


@dataclass
class PersonPreview:
    where: str  # file:line or DN
    username: str | None
    outcome: str  # synced, rejected, left out
    reason: str | None
    fields: list[FieldPreview] = field(default_factory=list)
    _employee: Employee | None = field(default=None, repr=False)


class Preview:
    """A Tracer that keeps what the preview shows, for the people it is asked about."""

    def __init__(
        self,
        settings: Settings,
        wanted: int | Iterable[str],
        source: SourceSettings | None = None,
        ids: frozenset[str] = frozenset(),
    ) -> None:
        """``source``: one of several ([[sources]]), else the settings' [source]; ``ids``:
        the people wanted by their source ids, as well as by username."""
        self.settings = settings
        found = source or settings.source
        assert found is not None  # several sources: each is previewed with its own
        self.source = found
        self.count = wanted if isinstance(wanted, int) else None
        self.usernames = set() if isinstance(wanted, int) else {u.casefold() for u in wanted}
        self.ids = ids
        self.people: list[PersonPreview] = []
        self._own: Mapping[str, tuple[str, ...]] = {}

    def start(self, own: Mapping[str, tuple[str, ...]]) -> None:
        self._own = own

    def record(self, where: str, get: Get, outcome: Outcome) -> None:
        own_username = _first(get, self._own.get("username", ()))
        username = outcome.employee.username if outcome.employee else own_username
        if self.count is not None:
            if len(self.people) >= self.count:
                return
        elif not self._wanted(username, own_username, outcome):
            return
        state = "left out" if outcome.left_out else "rejected" if outcome.reason else "synced"
        person = PersonPreview(where, username, state, outcome.reason, _employee=outcome.employee)
        person.fields = self._fields(get, outcome.employee)
        self.people.append(person)

    def _wanted(self, username: str | None, own: str | None, outcome: Outcome) -> bool:
        if {(username or "").casefold(), (own or "").casefold()} & self.usernames:
            return True
        return outcome.employee is not None and outcome.employee.id in self.ids

    def finish(self, directory: Directory) -> list[PersonPreview]:
        """Settle what the read's last checks decided (duplicates, unknown departments)."""
        rejected = {row.where: row.reason for row in directory.rejected}
        for person in self.people:
            e = person._employee
            if e is None:
                continue
            if e.id not in directory.employees:
                person.outcome, person.reason = "rejected", rejected.get(person.where)
                continue
            primary = next((p for p in e.positions if p.primary), None)
            path = (
                directory.path(primary.department_id) if primary and primary.department_id else ()
            )
            for row in person.fields:
                if row.field == PLATFORM_FIELDS["department"]:
                    row.value = "/".join(path) or "(the root organization)"
        return self.people

    def _fields(self, get: Get, e: Employee | None) -> list[FieldPreview]:
        mapping = self.source.mapping
        rows: list[FieldPreview] = []
        for name, platform in PLATFORM_FIELDS.items():
            rule = mapping.fields.get(name)
            own = self._own.get(_OWN_NAMES.get(name, name), ())
            if rule is None and not own and name not in ("department", "state"):
                continue
            value = _shown(getattr(e, name, None)) if e is not None else None
            if name == "state" and e is not None:
                value = "yes" if e.state == "departed" else "no"
            if not own:
                own = ("DN",) if name == "department" else ("the departure settings",)
            rows.append(self._row(platform, rule, own, get, value))
        extra = dict(e.extra) if e is not None else {}
        extended = self.settings.sync.extended_fields
        for name in sorted(set(mapping.extra) | self._extra_names()):
            platform = extended.get(name, f"extra {name} (no sync.extended_fields entry)")
            rows.append(
                self._row(
                    platform, mapping.extra.get(name), self._own.get(name, ()), get, extra.get(name)
                )
            )
        properties = dict(e.properties) if e is not None else {}
        for schema_id, rule in mapping.properties.items():
            rows.append(
                self._row(f"properties {schema_id}", rule, (), get, properties.get(schema_id))
            )
        return rows

    def _extra_names(self) -> set[str]:
        source = self.source
        if source.csv is not None:
            return set(source.csv.extra_columns.values())
        return set(source.ldap.extra_attributes.values()) if source.ldap is not None else set()

    def _row(
        self,
        platform: str,
        rule: FieldRule | None,
        own: tuple[str, ...],
        get: Get,
        value: str | None,
    ) -> FieldPreview:
        names = own
        source = " or ".join(own)
        if rule is not None:
            source = rule.describe(source)
            if rule.template is not None:
                names = Template.parse(rule.template).attributes
        inputs = {name: _safe(get, name) for name in dict.fromkeys(names) if " " not in name}
        inputs.pop("DN", None)
        return FieldPreview(platform, source, inputs, value)


def _first(get: Get, names: tuple[str, ...]) -> str | None:
    return next((v for name in names if (v := _safe(get, name))), None)


def _safe(get: Get, name: str) -> str | None:
    try:
        return get(name)
    except ValueError:  # UnicodeDecodeError included: a binary value such as objectGUID
        return "(binary)"


def _shown(value: Any) -> str | None:
    if value is None or value == ():
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
