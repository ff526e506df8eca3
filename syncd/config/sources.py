"""Several sources in one settings file: ``[[sources]]``, each named with its role, and
``[join]``: the key people are joined on, each field's precedence, and what becomes of a
person found in one source and not another.

Today's single ``[source]`` is one source; ``[[sources]]`` replaces it (never both).
"""

# ruff: noqa: RUF012

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import field_validator

from syncd.config.section import Section
from syncd.config.source import CsvEmployeeColumns, SourceSettings

# What [join.precedence] may name: the person's fields, with two names an administrator
# uses (department: the positions; status: active or departed).
FIELD_NAMES = {"department": "positions", "status": "state"}
PRECEDENCE_FIELDS = (
    "username", "name", "department", "en_name", "email", "mobile", "tel", "sn", "gender",
    "birthday", "job_title", "sort_order", "senior", "status", "extra", "properties", "photo",
)  # fmt: skip
# What people may be joined on: a field every source can make (a mapping rule included),
# or an extra attribute (extra.<name>: an LDAP attribute or CSV column the source maps).
KEY_FIELDS = ("id", "username", "email", "mobile", "sn")
# How a source's keys are made comparable (join.normalize.<source>); applied in this order,
# whatever order the list names them in. See syncd.plan.join_keys.key_value.
NormalizeStep = Literal["strip", "nfkc", "casefold", "leading_zeros"]
NORMALIZE_STEPS: tuple[NormalizeStep, ...] = ("strip", "nfkc", "casefold", "leading_zeros")
# What [join] clear may name: a field a person may be without. Never username or name (a
# person needs them), department (the tree's own rule), status or senior (always a value).
CLEARABLE_FIELDS = tuple(
    f for f in PRECEDENCE_FIELDS if f not in ("username", "name", "department", "status", "senior")
)
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


class NamedSource(SourceSettings):
    """One of several sources: today's ``[source]`` settings, with a name and a role.

    ``role``: ``required`` sources must all know a person before that person is synced
    under ``join.missing = "wait"``; an ``optional`` source only adds the fields it decides
    to people the others know.
    """

    name: str
    role: Literal["required", "optional"] = "required"

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(
                "a source's name is lower-case letters, digits, - and _, starting with a letter "
                '(e.g. "hr", "ad-corp"): it is written in reports and in join.precedence'
            )
        return value


class JoinSettings(Section):
    # The field people are joined on: one of KEY_FIELDS or extra.<name>; ``keys`` names it
    # per source where a source holds it elsewhere (AD: keys.ad = "extra.employeeID").
    key: str = "sn"
    keys: dict[str, str] = {}
    # Field -> the sources that decide it, in order: the first that gives a value wins.
    # A field not named here: every source, in the order of [[sources]].
    precedence: dict[str, list[str]] = {}
    # A person some required source lacks: "wait" (not synced, and kept as they are on the
    # platform, until every required source has them) or "partial" (synced with what the
    # sources that have them give).
    missing: Literal["wait", "partial"] = "wait"
    # Source -> how its keys are compared, steps from NORMALIZE_STEPS: "strip" (spaces
    # around), "nfkc" (full-width digits and letters as ASCII), "casefold" (any case),
    # "leading_zeros" (a key of digits alone without its leading zeros: 00123 is 123). A
    # source not named: ["strip"]. email keys are always compared in any case and mobile
    # keys by their digits. The key is the joined person's id: changing how a source's
    # keys are compared re-keys the people whose keys it changes.
    normalize: dict[str, list[NormalizeStep]] = {}
    # Fields whose first source in join.precedence that has the person decides them even
    # when its value is empty (it clears the field), instead of the next source giving one.
    clear: list[str] = []

    @field_validator("key")
    @classmethod
    def _key_field(cls, value: str) -> str:
        return _check_key(value)

    @field_validator("keys")
    @classmethod
    def _key_fields(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value.values():
            _check_key(key)
        return value

    @field_validator("precedence")
    @classmethod
    def _known_fields(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for name, order in value.items():
            if name not in PRECEDENCE_FIELDS:
                raise ValueError(
                    f"join.precedence.{name}: not a field; the fields are "
                    + ", ".join(PRECEDENCE_FIELDS)
                )
            if not order:
                raise ValueError(
                    f"join.precedence.{name}: no source is named, so nobody provides {name}"
                )
            if len(set(order)) != len(order):
                raise ValueError(f"join.precedence.{name}: a source is named twice")
        return value

    @field_validator("normalize")
    @classmethod
    def _steps_once(cls, value: dict[str, list[NormalizeStep]]) -> dict[str, list[NormalizeStep]]:
        for source, steps in value.items():
            if len(set(steps)) != len(steps):
                raise ValueError(f"join.normalize.{source}: a step is named twice")
        return value

    @field_validator("clear")
    @classmethod
    def _clearable(cls, value: list[str]) -> list[str]:
        for name in value:
            if name not in CLEARABLE_FIELDS:
                raise ValueError(
                    f"join.clear: {name!r} cannot be cleared; the fields that can: "
                    + ", ".join(CLEARABLE_FIELDS)
                )
        if len(set(value)) != len(value):
            raise ValueError("join.clear: a field is named twice")
        return value


def _check_key(value: str) -> str:
    if value in KEY_FIELDS:
        return value
    if value.startswith("extra.") and len(value) > len("extra."):
        return value
    raise ValueError(
        f"{value!r} cannot join people: use one of {', '.join(KEY_FIELDS)} or extra.<name> "
        "(an extra attribute the source maps); a mapping rule can make any of them"
    )


def check_sources(sources: Sequence[NamedSource], join: JoinSettings) -> None:
    """What the sections cannot check alone: names known and unique, every field provided.

    Raises ValueError naming the setting."""
    if not sources:
        raise ValueError("sources: name at least one source ([[sources]] with name and kind)")
    names = [s.name for s in sources]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"sources: two sources are named {name!r}; each name is one source")
    for source in sources:
        if source.photos.enabled:
            raise ValueError(
                f"sources.{source.name}.photos: photos are read from a single [source] only; "
                "with several sources they are not synced yet"
            )
    known = set(names)
    for setting in ("keys", "normalize"):
        for source_name in getattr(join, setting):
            if source_name not in known:
                raise ValueError(_unknown(f"join.{setting}.{source_name}", source_name, names))
    for field, order in join.precedence.items():
        for source_name in order:
            if source_name not in known:
                raise ValueError(_unknown(f"join.precedence.{field}", source_name, names))
        _provided(field, [s for s in sources if s.name in order])
    if join.missing == "wait" and not any(s.role == "required" for s in sources):
        raise ValueError(
            'join.missing = "wait" needs a source whose role is "required" (who must know a '
            "person before they are synced)"
        )


def _unknown(setting: str, name: str, names: list[str]) -> str:
    return f"{setting}: no source is named {name!r} (the sources: {', '.join(names)})"


def _provided(field: str, sources: list[NamedSource]) -> None:
    """A field whose every listed source is a CSV file without its column, and no rule."""
    column = {"department": "department", "status": "status"}.get(field, field)
    for s in sources:
        if s.kind != "csv" or s.csv is None:
            return  # an LDAP preset reads every field
        if field not in CsvEmployeeColumns.model_fields:
            return  # extra, properties, photo: not a column
        if getattr(s.csv.columns, column) or field in s.mapping.fields:
            return
    listed = ", ".join(repr(s.name) for s in sources)
    raise ValueError(
        f"join.precedence.{field}: nobody provides {field}: source {listed} has no column "
        f"for it (sources.csv.columns.{column} is empty) and no mapping rule makes it"
    )


def key_of(join: JoinSettings, source: str) -> str:
    """The field that holds the join key in this source."""
    return join.keys.get(source, join.key)


def key_setting(join: JoinSettings, source: str) -> str:
    """The setting that names this source's key field, as an error names it."""
    return f"join.keys.{source}" if source in join.keys else "join.key"


def normalizing(join: JoinSettings, source: str) -> tuple[NormalizeStep, ...]:
    """How this source's keys are compared: its steps, in NORMALIZE_STEPS' order."""
    steps = join.normalize.get(source, ["strip"])
    return tuple(s for s in NORMALIZE_STEPS if s in steps)


def deciders(join: JoinSettings, sources: Sequence[NamedSource], field: str) -> tuple[str, ...]:
    """The sources that decide a precedence field, in order."""
    order = join.precedence.get(field)
    return tuple(order) if order else tuple(s.name for s in sources)


__all__ = [
    "CLEARABLE_FIELDS",
    "FIELD_NAMES",
    "KEY_FIELDS",
    "NORMALIZE_STEPS",
    "PRECEDENCE_FIELDS",
    "JoinSettings",
    "NamedSource",
    "check_sources",
    "deciders",
    "key_of",
    "key_setting",
    "normalizing",
]
