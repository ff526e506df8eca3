"""The settings file ``syncd init`` writes: each key it comments out shows its real default.

The template's rule (its head says so): a commented ``# key = value`` line shows the key's
default, unless marked ``e.g.`` (an example). A key unset by default (None) has no value to
show: its line is an example, or a default syncd works out at run time (an LDAP flavor's
users_filter, departments_base from users_base). Each line, uncommented, must be TOML that
names a setting: that is what an admin does with it.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any, get_args

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from syncd.config import Settings
from syncd.setup.init import SourceKind, settings_text

COMMENTED_KEY = re.compile(r"^# (?P<key>[a-z_]+) = ")
TABLE = re.compile(r"^\[(?P<name>[a-z_.]+)\]")
EXAMPLE = re.compile(r"#\s*e\.g\.")


def section_model(table: str) -> type[BaseModel] | None:
    """The model of a table (``source.csv.columns``), or None where no model is."""
    model: type[BaseModel] = Settings
    for name in filter(None, table.split(".")):
        field = model.model_fields.get(name)
        kinds = (field.annotation, *get_args(field.annotation)) if field is not None else ()
        models = [k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)]
        if not models:
            return None
        model = models[0]
    return model


def defaults_shown(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """What is wrong with the commented keys of a settings text, and the lines whose value
    was compared with a default (table, line)."""
    problems: list[str] = []
    compared: list[tuple[str, str]] = []
    table = ""
    for line in text.splitlines():
        header = TABLE.match(line)
        table = header["name"] if header else table
        found = COMMENTED_KEY.match(line)
        if found is None:
            continue
        problem = _problem(table, line, found["key"])
        if problem == "compared":
            compared.append((table, line))
        elif problem:
            problems.append(f"[{table}] {line!r}: {problem}")
    return problems, compared


def _problem(table: str, line: str, key: str) -> str | None:
    """Why a commented line is wrong; "compared" when it shows its default; None for an
    example."""
    try:
        value = tomllib.loads(line[2:])[key]
    except tomllib.TOMLDecodeError as exc:
        return f"not TOML once uncommented: {exc}"
    model = section_model(table)
    field = model.model_fields.get(key) if model is not None else None
    if field is None:
        return "names no setting"
    default = field.get_default(call_default_factory=True)
    if default is None or EXAMPLE.search(line[2:]):
        return None
    try:
        same = TypeAdapter(field.rebuild_annotation()).validate_python(value) == default
    except ValidationError:
        same = False
    return "compared" if same else f"the default is {default!r}"


@pytest.mark.parametrize("kind", list(SourceKind))
def test_each_commented_key_shows_its_default_unless_marked_as_an_example(
    kind: SourceKind,
) -> None:
    problems, compared = defaults_shown(settings_text(kind))
    assert problems == []
    assert any("max_reactivations" in line for _, line in compared)


def _other(value: Any) -> Any:
    """A value of the same kind as ``value``, and not it."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, *(value[:1] or ["x"])]
    return {"x": "y"}


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("kind", list(SourceKind))
def test_any_default_the_template_shows_when_changed_is_found(kind: SourceKind) -> None:
    text = settings_text(kind)
    for _, line in defaults_shown(text)[1]:
        key = COMMENTED_KEY.match(line)
        assert key is not None
        value = tomllib.loads(line[2:])[key["key"]]
        drifted = text.replace(line + "\n", f"# {key['key']} = {_toml(_other(value))}\n", 1)
        problems, _ = defaults_shown(drifted)
        assert len(problems) == 1 and f"{key['key']} = " in problems[0], line
