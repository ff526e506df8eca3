"""``syncd check --preview``: what the source and the mapping rules make of some people.

For the first N people read, or the ones named, each platform field is shown with where
it comes from (an attribute, or a rule), the source values it reads, and the value the
platform would get; people the row filter leaves out and rows that are rejected are
shown with the reason. The source is read as a sync reads it; the platform is not
contacted, and its secret is not needed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from syncd.config import Settings, SourceSettings
from syncd.mapping import FieldRule, Get, Template
from syncd.model import Directory, Employee
from syncd.report import printable
from syncd.sources import read_directory
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


def preview(settings: Settings, targets: list[str]) -> list[PersonPreview]:
    """Read the source and preview the first N people (default 5) or the usernames given."""
    wanted: int | list[str] = 5
    if len(targets) == 1 and targets[0].isdigit():
        wanted = int(targets[0])
    elif targets:
        wanted = targets
    if settings.source is None:  # several sources: each field with the source that gave it
        from syncd.sources.joined_preview import joined_preview

        return joined_preview(settings, wanted)
    tracer = Preview(settings, wanted)
    directory = read_directory(settings.source, trace=tracer)
    return tracer.finish(directory)


def show_preview(settings: Settings, targets: list[str], output: str, console: Console) -> None:
    """Print the preview of the people asked for, as a table per person or as JSON."""
    people = preview(settings, targets)
    if output == "json":
        console.print(render_json(people))
    else:
        print_table(people, console, targets)


def render_json(people: list[PersonPreview]) -> str:
    def plain(person: PersonPreview) -> dict[str, Any]:
        found = asdict(person)
        found.pop("_employee")
        return found

    return json.dumps([plain(p) for p in people], ensure_ascii=False, indent=2)


def print_table(people: list[PersonPreview], console: Console, named: list[str]) -> None:
    """One block per person: a line saying who and what became of them, then their fields."""
    if not people:
        console.print(
            "nobody to preview" + (f": no one is named {', '.join(named)}" if named else "")
        )
    for person in people:
        head = f"{person.username or '?'}  {person.where}  {person.outcome}"
        console.print(printable(head + (f": {person.reason}" if person.reason else "")))
        if not person.fields:  # set aside by the join before any field was made
            continue
        rows: list[tuple[str, ...]] = [("platform field", "from", "source values", "value")]
        for row in person.fields:
            inputs = "  ".join(
                f"{k}={'(empty)' if v is None else v}" for k, v in row.inputs.items()
            )
            rows.append(tuple(map(printable, (row.field, row.source, inputs, row.value))))
        lines = _aligned(rows)
        if console.is_terminal and max(map(cell_len, lines)) + 2 > console.width:
            _print_stacked(rows[1:], console)  # a table wider than the terminal: a field a block
            continue
        for line in lines:
            console.print("  " + line)
    found = {(p.username or "").casefold() for p in people}
    missing = [name for name in named if name.casefold() not in found and not name.isdigit()]
    if missing:
        console.print(f"not in the source: {', '.join(missing)}")


def _print_stacked(rows: list[tuple[str, ...]], console: Console) -> None:
    """Each field as ``name  value``, then where it came from on the lines below, wrapped
    between words: what a table too wide for the terminal says, in its width."""
    width = max(cell_len(row[0]) for row in rows) + 2
    for name, source, inputs, value in rows:
        console.print(Text("  " + name + " " * (width - cell_len(name)) + (value or "—")))
        came = f"from {source}" + (f" ({inputs})" if inputs else "")
        console.print(
            Padding(Text(came, style="dim", overflow="fold"), (0, 0, 0, width + 2), expand=False)
        )


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    """Rows as lines of columns, each as wide as its widest cell (wide characters count 2)."""
    widths = [max(cell_len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell + " " * (w - cell_len(cell)) for cell, w in zip(row, widths, strict=True)
        ).rstrip()
        for row in rows
    ]


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
