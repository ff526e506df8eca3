"""Mapping rules: platform fields made from source attributes, and the people a source keeps.

The settings (``[source.mapping]``) are validated when the settings load, so a broken rule
is one message naming the file, the key and the problem. A source then compiles them into
``Rules`` for one read and asks, for each person, whether the row filter keeps them and
what each ruled field becomes. A rule that cannot be applied to one person raises
RuleFailure: that person is rejected with the reason, the read goes on.

Attributes are LDAP attribute names or CSV column headers, compared case-insensitively;
an attribute a person lacks reads as empty. Every value a rule makes is trimmed at the
end, and empty means none (the field is left empty, or ``default`` fills it).
"""

from __future__ import annotations

import csv
import fnmatch
import re
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    GetCoreSchemaHandler,
    Tag,
    field_validator,
    model_validator,
)
from pydantic_core import core_schema

from syncd.model import Employee

# Model fields a rule may make (the id never: records are keyed by it).
RULE_FIELDS = (
    "username", "name", "en_name", "email", "mobile", "tel", "sn", "gender", "birthday",
    "job_title", "sort_order", "senior", "start_date", "end_date",
)  # fmt: skip
SETTING = "source.mapping"

Get = Callable[[str], str | None]  # an attribute's value for one person (None: absent)


class RuleFailure(ValueError):
    """A rule could not be applied to one person: the reason rejects that person."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ---------------------------------------------------------------- lookup tables


@dataclass(frozen=True)
class LookupTable:
    """A two-column CSV file read at load: a header row, then ``value,replacement`` rows."""

    path: Path
    table: dict[str, str]

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_before_validator_function(
            cls._load, core_schema.is_instance_schema(cls)
        )

    @classmethod
    def _load(cls, value: Any) -> Any:
        if isinstance(value, cls):
            return value
        if not isinstance(value, str | Path) or not str(value):
            raise ValueError("give the path of a CSV file: a header row, then value,replacement")
        return cls(Path(value), _read_table(Path(value)))


def _read_table(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise ValueError(f"{path}: file not found") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (save it as UTF-8)") from exc
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read: {exc.strerror}") from exc
    lines = text.splitlines()
    if not lines:
        raise ValueError(f"{path}: the file is empty; it needs a header row")
    try:
        dialect: Any = csv.Sniffer().sniff(lines[0], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    table: dict[str, str] = {}
    rows = csv.reader(lines, dialect)
    next(rows)  # the header: any names
    for number, row in enumerate(rows, start=2):
        cells = [cell.strip() for cell in row]
        if not any(cells):
            continue
        if len(cells) != 2:
            raise ValueError(f"{path}:{number}: {len(cells)} fields; a row is value,replacement")
        key, replacement = cells
        if table.get(key, replacement) != replacement:
            raise ValueError(f"{path}:{number}: {key!r} is listed twice, with different values")
        table[key] = replacement
    return table


# ---------------------------------------------------------------- transforms


class Replace(_Section):
    """``{ replace = ['regex', 'replacement'] }``: every match replaced (``\\1`` for groups)."""

    replace: tuple[str, str]

    @field_validator("replace")
    @classmethod
    def _compiles(cls, value: tuple[str, str]) -> tuple[str, str]:
        pattern, replacement = value
        try:
            re.compile(pattern).sub(replacement, "")  # parses the replacement's references too
        except (re.error, IndexError) as exc:
            raise ValueError(f"{pattern!r} / {replacement!r}: {exc}") from exc
        return value

    def apply(self, value: str) -> str:
        return re.sub(self.replace[0], self.replace[1], value)


class Lookup(_Section):
    """``{ lookup = "titles.csv" }``: the value replaced by its row's replacement."""

    lookup: LookupTable
    missing: Literal["reject", "keep", "empty"] = "reject"  # a value not in the table

    def apply(self, value: str) -> str:
        found = self.lookup.table.get(value)
        if found is not None:
            return found
        if self.missing == "keep":
            return value
        if self.missing == "empty":
            return ""
        raise RuleFailure(f"{value!r} is not in the lookup table {self.lookup.path.name}")


class Default(_Section):
    """``{ default = "Staff" }``: the value when there is none so far."""

    default: str


Simple = Literal["trim", "lower", "upper"]


def _transform_kind(value: Any) -> str:
    if isinstance(value, str):
        return "simple"
    if isinstance(value, dict | BaseModel):
        keys = value if isinstance(value, dict) else type(value).model_fields
        for kind in ("replace", "lookup", "default"):
            if kind in keys:
                return kind
    return "unknown"


Transform = Annotated[
    Annotated[Simple, Tag("simple")]
    | Annotated[Replace, Tag("replace")]
    | Annotated[Lookup, Tag("lookup")]
    | Annotated[Default, Tag("default")],
    Discriminator(
        _transform_kind,
        custom_error_type="transform",
        custom_error_message=(
            "a transform is 'trim', 'lower', 'upper', or a table with one of replace, "
            "lookup, default"
        ),
    ),
]


def _apply(step: Simple | Replace | Lookup | Default, value: str | None) -> str | None:
    if isinstance(step, Default):
        return value if value else step.default
    if not value:
        return value  # nothing to transform: only a default fills an empty value
    if step == "trim":
        return value.strip()
    if step == "lower":
        return value.lower()
    if step == "upper":
        return value.upper()
    assert isinstance(step, Replace | Lookup)
    return step.apply(value)


# ---------------------------------------------------------------- templates


@dataclass(frozen=True)
class Template:
    """``"{sn}{givenName}"``: text with attributes in braces (``{{`` and ``}}`` for braces)."""

    parts: tuple[tuple[str, str | None], ...]  # (literal text, attribute or None)

    @classmethod
    def parse(cls, text: str) -> Template:
        parts: list[tuple[str, str | None]] = []
        try:
            parsed = list(string.Formatter().parse(text))
        except ValueError as exc:
            raise ValueError(f"template {text!r}: {exc} (write {{{{ and }}}} for braces)") from exc
        for literal, name, spec, conversion in parsed:
            if name is not None and (not name.strip() or spec or conversion):
                raise ValueError(
                    f"template {text!r}: put one attribute name in each pair of braces, "
                    "as in {sn}{givenName}"
                )
            parts.append((literal, name.strip() if name is not None else None))
        return cls(tuple(parts))

    @property
    def attributes(self) -> tuple[str, ...]:
        return tuple(name for _, name in self.parts if name is not None)

    def render(self, get: Get) -> str:
        return "".join(literal + (get(name) or "" if name else "") for literal, name in self.parts)


# ---------------------------------------------------------------- rules


class FieldRule(_Section):
    """How one platform field is made: a template (else the field's own attribute), transformed."""

    template: str | None = None
    transforms: list[Transform] = []

    @model_validator(mode="before")
    @classmethod
    def _template_alone(cls, value: Any) -> Any:
        return {"template": value} if isinstance(value, str) else value

    @field_validator("template")
    @classmethod
    def _parses(cls, value: str | None) -> str | None:
        if value is not None:
            Template.parse(value)
        return value

    def describe(self, own: str) -> str:
        """Where the value comes from, as the preview shows it."""
        steps = [
            step
            if isinstance(step, str)
            else f"replace '{step.replace[0]}' with '{step.replace[1]}'"
            if isinstance(step, Replace)
            else f"lookup {step.lookup.path.name}"
            if isinstance(step, Lookup)
            else f"default {step.default!r}"
            for step in self.transforms
        ]
        return " | ".join([self.template if self.template is not None else own, *steps])


class RowFilter(_Section):
    """Which people the source keeps, by attribute values (exact or shell patterns, any case).

    ``include``: only people whose every listed attribute matches one of its values.
    ``exclude``: nobody whose any listed attribute matches one of its values. An empty
    string matches an empty or absent attribute.
    """

    include: dict[str, list[str]] = {}
    exclude: dict[str, list[str]] = {}

    @field_validator("include", "exclude")
    @classmethod
    def _values_given(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for attribute, patterns in value.items():
            if not attribute.strip():
                raise ValueError("an attribute name is empty")
            if not patterns:
                raise ValueError(f"{attribute}: list at least one value")
        return value


class SourceMapping(_Section):
    """``[source.mapping]``: rules for model fields, extra attributes, custom properties."""

    fields: dict[str, FieldRule] = {}
    extra: dict[str, FieldRule] = {}  # extra attribute name -> rule (then sync.extended_fields)
    properties: dict[str, FieldRule] = {}  # the platform's data_schema_id -> rule
    filter: RowFilter = RowFilter()

    @field_validator("fields")
    @classmethod
    def _known_fields(cls, value: dict[str, FieldRule]) -> dict[str, FieldRule]:
        unknown = sorted(set(value) - set(RULE_FIELDS))
        if unknown:
            raise ValueError(
                f"no rule can make {', '.join(unknown)}; fields: {', '.join(RULE_FIELDS)}"
            )
        return value

    @field_validator("properties")
    @classmethod
    def _templates_for_properties(cls, value: dict[str, FieldRule]) -> dict[str, FieldRule]:
        for schema_id, rule in value.items():
            if not schema_id.strip():
                raise ValueError("a data_schema_id is empty")
            if rule.template is None:
                raise ValueError(
                    f"{schema_id}: give a template (a property has no attribute of its own)"
                )
        return value

    @property
    def empty(self) -> bool:
        rules = (self.fields, self.extra, self.properties, self.filter.include, self.filter.exclude)
        return not any(rules)


# ---------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class Mapped:
    """What the rules made of one person (None: empty)."""

    fields: dict[str, str | None]
    extra: dict[str, str | None]
    properties: dict[str, str | None]


@dataclass(frozen=True)
class CompiledRule:
    key: str  # the setting, for reasons: source.mapping.fields.name
    template: Template | None
    transforms: tuple[Simple | Replace | Lookup | Default, ...]

    def value(self, get: Get, own: str | None) -> str | None:
        value = self.template.render(get) if self.template is not None else own
        try:
            for step in self.transforms:
                value = _apply(step, value)
        except RuleFailure as exc:
            raise RuleFailure(f"{self.key}: {exc}") from exc
        return (value or "").strip() or None


class Rules:
    """The mapping compiled for one read."""

    def __init__(self, mapping: SourceMapping) -> None:
        def compiled(section: str, rules: dict[str, FieldRule]) -> dict[str, CompiledRule]:
            return {
                name: CompiledRule(
                    f"{SETTING}.{section}.{name}",
                    Template.parse(rule.template) if rule.template is not None else None,
                    tuple(rule.transforms),
                )
                for name, rule in rules.items()
            }

        self.mapping = mapping
        self.fields = compiled("fields", mapping.fields)
        self.extra = compiled("extra", mapping.extra)
        self.properties = compiled("properties", mapping.properties)
        self._include = _patterns(mapping.filter.include)
        self._exclude = _patterns(mapping.filter.exclude)

    def attributes(self) -> dict[str, str]:
        """Each attribute the rules read -> the setting that names it first."""
        found: dict[str, str] = {}
        for section in (self.fields, self.extra, self.properties):
            for rule in section.values():
                for name in rule.template.attributes if rule.template else ():
                    found.setdefault(name, f"{rule.key}.template")
        for which, patterns in (("include", self._include), ("exclude", self._exclude)):
            for name, _ in patterns:
                found.setdefault(name, f"{SETTING}.filter.{which}")
        return found

    def left_out(self, get: Get) -> str | None:
        """Why the row filter leaves this person out, or None when it keeps them."""
        for name, patterns in self._include:
            value = get(name)
            if not _matches(value, patterns):
                return f"{name} {_shown(value)} is not one of {SETTING}.filter.include"
        for name, patterns in self._exclude:
            value = get(name)
            if _matches(value, patterns):
                return f"{name} {_shown(value)} matches {SETTING}.filter.exclude"
        return None

    def apply(self, get: Get, own: Callable[[str, str], str | None]) -> Mapped:
        """Each ruled value for one person; ``own(section, name)`` reads a field's own attribute.

        Raises RuleFailure naming the rule when one cannot be applied.
        """
        return Mapped(
            {name: rule.value(get, own("fields", name)) for name, rule in self.fields.items()},
            {name: rule.value(get, own("extra", name)) for name, rule in self.extra.items()},
            {name: rule.value(get, None) for name, rule in self.properties.items()},
        )


def with_mapped(employee: Employee, mapped: Mapped) -> Employee:
    """The employee with the extra attributes and properties the rules made."""
    if not mapped.extra and not mapped.properties:
        return employee
    extra = dict(employee.extra)
    for name, value in mapped.extra.items():
        if value is None:
            extra.pop(name, None)
        else:
            extra[name] = value
    properties = dict(employee.properties)
    properties.update((k, v) for k, v in mapped.properties.items() if v is not None)
    return employee._replace(
        extra=tuple(sorted(extra.items())), properties=tuple(sorted(properties.items()))
    )


def _patterns(table: dict[str, list[str]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple(
        (name.strip(), tuple(p.strip().casefold() for p in ps)) for name, ps in table.items()
    )


def _matches(value: str | None, patterns: Iterable[str]) -> bool:
    text = (value or "").strip().casefold()
    return any(fnmatch.fnmatchcase(text, p) if p else not text for p in patterns)


def _shown(value: str | None) -> str:
    return repr(value.strip()) if value and value.strip() else "(empty)"
