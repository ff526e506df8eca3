"""Custom platform fields (`properties` with a data_schema_id), mapped from the source."""

from __future__ import annotations

from typing import Any

import pytest

from syncd.errors import EXIT_OK
from tests.support.admin import AnotherAdmin
from tests.support.runs import plan_of

from .support import Rig

SCHEMA = "5f0c3e1a"


@pytest.fixture
def mapped(rig: Rig) -> Rig:
    """The job title column also feeds a custom field."""
    rig.sections["source.mapping.properties"] = {SCHEMA: "{job_title}"}
    rig.company.person("ann")["job_title"] = "CEO"
    rig.company.person("bob")["job_title"] = "Engineer"
    return rig


def properties(rig: Rig, username: str) -> Any:
    return AnotherAdmin(rig.emulator).employee(username).get("properties")


def test_properties_are_sent_changed_cleared_and_put_back(mapped: Rig) -> None:
    assert mapped.sync().exit_code == EXIT_OK
    assert properties(mapped, "ann") == [{"data_schema_id": SCHEMA, "values": ["CEO"]}]
    assert properties(mapped, "cat") in (None, [])  # no title: no property sent
    assert plan_of(mapped.sync()).changes == ()

    mapped.company.person("ann")["job_title"] = "Chair"
    mapped.company.person("bob")["job_title"] = ""
    result = mapped.sync()
    assert sorted(c.display for c in plan_of(result).changes) == ["ann", "bob"]
    assert properties(mapped, "ann") == [{"data_schema_id": SCHEMA, "values": ["Chair"]}]
    assert properties(mapped, "bob") == []  # cleared on the platform too

    admin = AnotherAdmin(mapped.emulator)
    admin.edit("ann", properties=[{"data_schema_id": SCHEMA, "values": ["Intern"]}])
    result = mapped.sync()
    notes = [n.message for n in plan_of(result).notes]
    assert "ann: properties changed on the platform; putting back" in notes
    assert properties(mapped, "ann") == [{"data_schema_id": SCHEMA, "values": ["Chair"]}]


def test_a_property_someone_else_keeps_on_the_platform_is_left_alone(mapped: Rig) -> None:
    assert mapped.sync().exit_code == EXIT_OK
    AnotherAdmin(mapped.emulator).edit(
        "ann", properties=[{"data_schema_id": "other", "values": ["kept"]}]
    )
    result = mapped.sync()
    assert result.plan is not None and result.plan.changes == ()
    assert {"data_schema_id": "other", "values": ["kept"]} in properties(mapped, "ann")
