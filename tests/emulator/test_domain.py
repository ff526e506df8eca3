"""The domain logic without HTTP: clock, fault decisions, tree loading, saved state."""

from __future__ import annotations

import pytest

from syncd.emulator import EmulatorOptions, FaultSettings
from syncd.emulator.clock import Clock
from syncd.emulator.faults import FaultInjector
from syncd.emulator.people import Position
from syncd.emulator.state import EmulatorState
from syncd.emulator.tree import Node, OrgTree


def test_stamps_never_repeat() -> None:
    clock = Clock()
    stamps = [clock.stamp() for _ in range(1000)]
    assert stamps == sorted(set(stamps))


def test_fault_decisions_depend_only_on_the_seed() -> None:
    settings = FaultSettings(seed=3, http_500_rate=0.3, drop_rate=0.1, http_429_rate=0.2)
    runs = []
    for _ in range(2):
        injector = FaultInjector(settings)
        runs.append([injector.decide("GET", "/v1/x").action for _ in range(200)])
    assert runs[0] == runs[1]
    assert {"pass", "http_500", "http_429", "drop_before"} <= set(runs[0])


def test_scripted_faults_are_used_up_in_order() -> None:
    injector = FaultInjector(
        FaultSettings.model_validate(
            {"scripted": [{"match": "import", "method": "POST", "fault": "http_500", "count": 2}]}
        )
    )
    actions = [
        injector.decide(m, p).action
        for m, p in [
            ("GET", "/v1/import-orgs"),
            ("POST", "/v1/import-orgs"),
            ("POST", "/v1/import-x"),
            ("POST", "/v1/import-orgs"),
        ]
    ]
    assert actions == ["pass", "http_500", "http_500", "pass"]
    assert injector.scripted_remaining() == [0]


def test_a_tree_needs_one_root_reaching_every_node() -> None:
    with pytest.raises(ValueError, match="exactly one root"):
        OrgTree(
            "acme", "acme", [Node(1, None, "CORP", "A", 1, 1), Node(2, None, "CORP", "B", 1, 1)], 3
        )
    with pytest.raises(ValueError, match="not reachable"):
        OrgTree(
            "acme",
            "acme",
            [
                Node(1, None, "CORP", "A", 1, 1),
                Node(2, 3, "DEPT", "B", 1, 1),
                Node(3, 2, "DEPT", "C", 1, 1),
            ],
            4,
        )


def test_the_saved_state_restores_to_the_same_view() -> None:
    options = EmulatorOptions()
    state = EmulatorState(options)
    lab = state.tree.add(state.tree.root, "DEPT", "Lab", state.clock.stamp(), serial_no="lab")
    state.staff.import_employees(
        [
            {
                "username": "ann",
                "name": "Ann",
                "email": "a@x.test",
                "positions": [{"org_id": lab.id, "job_title": "Boss", "chief": True}],
            },
            {"username": "bob", "name": "Bob", "positions": [{"org_id": lab.id}]},
            {"username": "bob", "ops": "REMOVE"},  # bob's user stays
        ],
        state.clock.stamp(),
        lambda _: None,
    )
    restored = EmulatorState.restore(options, state.dump())
    before, after = state.view(), restored.view()
    before.pop("now"), after.pop("now")
    assert after == before
    [ann] = restored.staff
    assert ann.positions == [Position(lab.id, "Boss", False, True)]
    bob, bob_before = restored.staff.user("bob"), state.staff.user("bob")
    assert bob is not None and bob_before is not None and bob.user_id == bob_before.user_id
    assert restored.clock.stamp() > state.clock.last_stamp  # stamps keep increasing


def test_restore_refuses_damaged_state() -> None:
    options = EmulatorOptions()
    data = EmulatorState(options).dump()
    data["employees"] = [
        {
            "id": 1,
            "username": "x",
            "user_id": "u",
            "profile": {},
            "positions": [{"org_id": 424242}],
            "created": 1,
            "last_modified": 1,
            "locked": False,
        }
    ]
    with pytest.raises(ValueError, match="damaged"):
        EmulatorState.restore(options, data)
