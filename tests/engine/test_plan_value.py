"""The plan is a value (issue 27): once made, nothing in it, nor in the reports and saved
plans made from it, reads the state database; the runner loads what planning needs first,
as plain values, in steps, and a plan from those steps is the plan of everything loaded."""

from __future__ import annotations

import dataclasses
import enum
import json
import shutil
import types
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from syncd import snapshot as store
from syncd.cli.screen import print_plan
from syncd.clock import now_ms
from syncd.config import platform_of, source_of
from syncd.model import Department, Directory, Employee, Kind, Position, State
from syncd.plan import (
    DAY_MS,
    Action,
    Change,
    KnownProblem,
    Limits,
    Plan,
    Planning,
    PlatformEmployee,
    PlatformNode,
    PlatformView,
    Policy,
    Snapshot,
    SyncedDepartment,
    SyncedEmployee,
    check_guards,
    department_fields,
    department_hash,
    department_paths,
    employee_fields,
    employee_hash,
    plan,
)
from syncd.plan.needs import (
    departments_weighed,
    gone_departments,
    names_only_synced,
    people_asked,
    weighed,
)
from syncd.platform import PlatformClient
from syncd.run import saved_plan
from syncd.run.policy import policy_of
from syncd.run.runner import RunResult
from syncd.sources import read_directory
from tests.engine.company import World, department, employee
from tests.support.examples import examples

_PLAIN = (str, int, float, bool, bytes, type(None), enum.Enum)


def store_reaches(root: object) -> list[str]:
    """Where the object graph under ``root`` holds something of the store: an object of
    SQLAlchemy's or of syncd.snapshot, or code (a function, method or partial may query it
    when called). Plain values only: dataclasses, tuples, lists, sets, mappings, scalars."""
    found: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[str, object]] = [("plan", root)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, _PLAIN) or id(value) in seen:
            continue
        seen.add(id(value))
        module = type(value).__module__
        if module.startswith(("sqlalchemy", "sqlite3", "syncd.snapshot")) or isinstance(
            value, (types.FunctionType, types.MethodType, types.BuiltinMethodType, partial)
        ):
            found.append(f"{where}: {type(value).__module__}.{type(value).__qualname__}")
        elif dataclasses.is_dataclass(value):
            stack.extend(
                (f"{where}.{f.name}", getattr(value, f.name)) for f in dataclasses.fields(value)
            )
        elif isinstance(value, Mapping):
            for k, v in value.items():
                stack.extend(((f"{where}[key]", k), (f"{where}[{k!r}]", v)))
        elif isinstance(value, (tuple, list, set, frozenset)):
            stack.extend((f"{where}[{n}]", v) for n, v in enumerate(value))
        else:
            found.append(f"{where}: {module}.{type(value).__qualname__} (not plain data)")
    return found


def test_the_walk_finds_a_store_behind_a_change() -> None:
    """The check below could fail: a change holding a look-up is found."""
    engine = store.open_engine(Path("/nonexistent") / "syncd.db")
    try:
        holding = Change(Kind.EMPLOYEE, Action.UPDATE, "E1", "ann", platform_before={"e": engine})
        assert store_reaches(Plan((holding,))) == [
            "plan.changes[0].platform_before['e']: sqlalchemy.engine.base.Engine"
        ]
        assert store_reaches(Plan((replace(holding, platform_before={"f": len}),)))
    finally:
        engine.dispose()


@pytest.fixture
def changed(world: World) -> World:
    """A synced company, then changed: an update, a leaver, a move, a rename, a newcomer."""
    world.sync_settings["max_removal_ratio"] = 1.0
    assert world.sync().exit_code == 0
    company = world.company
    company.person("bob")["mobile"] = "13999999999"
    company.employees = [e for e in company.employees if e["username"] != "eve"]
    company.person("dan")["department"] = "D3"
    company.unit("D4")["name"] = "Sales EMEA"
    company.unit("D3")["parent_id"] = "D1"
    company.employees.append(employee("E9", "zed", "D4"))
    company.departments.append(department("D5", "Support", "D1"))
    return world


def test_a_runs_plan_outlives_its_database(
    changed: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = changed.sync(dry_run=True)
    assert result.exit_code == 0 and result.plan is not None and result.directory is not None
    the_plan = result.plan
    assert store_reaches(the_plan) == []
    shutil.rmtree(changed.folder / "state")  # the database, its journal and all: gone

    _befores_and_afters_read_now(the_plan)
    _shown_on_screen_and_as_json(result, the_plan, capsys)
    _saved_and_read_back(changed, result, the_plan, tmp_path / "plan.json")


def _befores_and_afters_read_now(the_plan: Plan) -> None:
    """Every change's before and after, read now."""
    seen = {(c.action, c.key): (c.before, c.after) for c in the_plan.changes}
    bob = seen[(Action.UPDATE, "E2")]
    assert (bob[0] or {})["mobile"] == "13800000002" and (bob[1] or {})["mobile"] == "13999999999"
    eve_before, _ = seen[(Action.LOCK, "E5")]
    assert eve_before is not None and eve_before["username"] == "eve"
    dan_before, dan_after = seen[(Action.UPDATE, "E4")]
    assert dan_before is not None and dan_after is not None
    assert [p["department"] for p in dan_before["positions"]] == ["D4"]
    assert [p["department"] for p in dan_after["positions"]] == ["D3"]
    rename = next(c for c in the_plan.changes if c.key == "D4")
    assert (rename.before or {})["name"] == "Sales" and (rename.after or {})["name"] == "Sales EMEA"
    move = next(c for c in the_plan.changes if c.key == "D3")
    assert move.action is Action.MOVE and (move.before or {})["parent"] == "D2"
    assert seen[(Action.CREATE, "E9")][0] is None
    assert all(c.message for c in the_plan.changes)


def _shown_on_screen_and_as_json(
    result: RunResult, the_plan: Plan, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plan on screen (text) and as JSON (--output json's changes)."""
    print_plan(result, show=100)
    text = capsys.readouterr().out
    assert "update employee bob (mobile '13800000002' → '13999999999')" in text
    assert "(name 'Sales' → 'Sales EMEA')" in text
    assert "(parent Acme/Head Office/R&D → Acme/Head Office)" in text
    document = json.loads(
        json.dumps(
            {
                "changes": [c.as_document() for c in the_plan.changes],
                "departments": department_paths(the_plan.changes),
            }
        )
    )
    shown = {(c["action"], c["key"]): c for c in document["changes"]}
    assert shown[("update", "E2")]["before"]["mobile"] == "13800000002"
    assert shown[("lock", "E5")]["before"]["username"] == "eve"


def _saved_and_read_back(changed: World, result: RunResult, the_plan: Plan, path: Path) -> None:
    """A saved plan: written and read back."""
    assert result.directory is not None
    saved_plan.write(
        path,
        run_id=result.run_id,
        settings=changed.settings(),
        plan=the_plan,
        guards=result.guards,
        directory=result.directory,
        snapshot=Snapshot(),
        policy=policy_of(changed.settings()),
        limits=Limits(),
    )
    assert saved_plan.read(path).count == len(the_plan.changes)
    written = json.loads(path.read_text(encoding="utf-8"))["changes"]
    assert [(c["action"], c["key"], c["before"], c["after"]) for c in written] == [
        (c.action.value, c.key, c.before, c.after) for c in the_plan.changes
    ]


def _in_steps(
    engine: Engine, directory: Directory, view: PlatformView, *, everyone: bool
) -> tuple[Snapshot, Plan]:
    """The snapshot and plan as the runner loads and makes them (syncd.run.runner._inputs,
    _plan)."""
    head = store.load_snapshot(engine, everyone=False)
    snapshot = store.people_for(engine, head, directory, view, everyone=everyone)
    snapshot = store.weighed_fields(engine, snapshot, directory, view)
    planning = Planning(directory, snapshot, view, POLICY, now_ms())
    while (wanted := planning.wanted()) is not None:
        planning.give(store.written_fields(engine, wanted))
    return snapshot, planning.plan()


POLICY = Policy(leaver_policy="lock_then_remove")


def documents(p: Plan) -> list[object]:
    """The plan as plain data: each change's document, then the notes."""
    return [*(c.as_document() for c in p.changes), *p.notes]


@pytest.mark.parametrize("complete", [True, False], ids=["complete read", "incremental read"])
def test_the_runners_steps_plan_as_loading_everything(changed: World, complete: bool) -> None:
    settings = changed.settings()
    changed.company.write(changed.folder)
    directory = read_directory(source_of(settings))
    if not complete:  # an incremental read: bob and dan changed, nobody else read
        named = {k: e for k, e in directory.employees.items() if e.username in ("bob", "dan")}
        directory = replace(directory, employees=named, complete=False, _paths={})
    engine = store.open_engine(settings.database)
    try:
        with PlatformClient(platform_of(settings), store.TokenStore(engine)) as client:
            root = client.root()
        view = PlatformView(root.id, root.name or "", {}, False)
        whole = store.load_snapshot(engine, fields=True)
        expected = plan(directory, whole, view, POLICY, now_ms())
        snapshot, stepped = _in_steps(engine, directory, view, everyone=False)
    finally:
        engine.dispose()
    shutil.rmtree(changed.folder / "state")

    assert documents(stepped) == documents(expected)
    assert store_reaches(stepped) == [] and store_reaches(snapshot) == []
    if complete:
        assert not snapshot.partial and len(snapshot.employees) == 5
        assert any(c.action is Action.LOCK for c in stepped.changes)  # eve, a leaver
    else:  # only the people the read names are loaded, and only the fields it weighs
        assert snapshot.partial and snapshot.headcount == 5
        assert set(snapshot.employees) == {"E2", "E4"}
        assert snapshot.fields_of == frozenset()
        assert [(c.action, c.key) for c in stepped.changes if c.kind is Kind.EMPLOYEE] == [
            (Action.UPDATE, "E2"),
            (Action.UPDATE, "E4"),
        ]


# ---------------------------------------------------------------- the class, generated

PEOPLE = 6
UNITS = {"D1": Department("D1", "Unit"), "D2": Department("D2", "Lab", "D1")}
NODES = {"D1": 2, "D2": 3}


def someone(n: int, version: int, unit: str, state: State = State.ACTIVE) -> Employee:
    return Employee(
        f"E{n}",
        f"u{n}",
        f"Person {n}" if version < 2 else f"Someone {n}",  # 2: another person (holds)
        (Position(unit, primary=True),),
        mobile=f"1380000000{n % 10}" if version == 0 else f"1390000000{(n + version) % 10}",
        sn=f"S{n}",
        state=state,
    )


def _written(draw: st.DrawFn, n: int, wrote: Employee) -> SyncedEmployee:
    """What syncd recorded writing for person ``n``: locked or not, its hash current or stale."""
    locked = draw(st.sampled_from([None, "missing", "departed"]))
    return SyncedEmployee(
        wrote.id,
        wrote.username,
        100 + n,
        employee_hash(wrote, {}) if draw(st.booleans()) else "stale",
        locked is not None,
        locked,
        0 if locked else None,
    )


def _read_again(draw: st.DrawFn, n: int, unit: str) -> Employee | None:
    """Person ``n`` as the source has them now: kept, changed, moved, departed, gone, or
    another person under their id."""
    how = draw(st.sampled_from(["same", "changed", "moved", "departed", "absent", "another"]))
    if how == "absent":
        return None
    version = {"same": 0, "departed": 0, "another": 2}.get(how, 1)
    place = "D1" if how == "moved" else unit
    state = State.DEPARTED if how == "departed" else State.ACTIVE
    return someone(n, version, place, state)


def _newcomers(draw: st.DrawFn) -> dict[str, Employee]:
    """New ids: some take a synced username."""
    new: dict[str, Employee] = {}
    for k in range(draw(st.integers(0, 2))):
        taken = draw(st.integers(0, PEOPLE + 1))
        made = someone(taken, draw(st.integers(0, 2)), "D1")._replace(id=f"N{k}")
        new[made.id] = made if taken < PEOPLE else made._replace(username=f"new{k}")
    return new


def _a_read(draw: st.DrawFn, wanted: dict[str, Employee]) -> Directory:
    """The source's read of ``wanted``: complete, or incremental naming a few; D2 gone, or
    not; D1 renamed, or not."""
    complete = draw(st.booleans())
    if not complete:  # an incremental read names a few
        keep = draw(st.sets(st.sampled_from(sorted(wanted)), max_size=3)) if wanted else set()
        wanted = {k: e for k, e in wanted.items() if k in keep}
    units = dict(UNITS) if draw(st.booleans()) else {"D1": UNITS["D1"]}  # D2 gone, or not
    if draw(st.booleans()):
        units["D1"] = replace(UNITS["D1"], name="Unit renamed")
    return Directory(units, wanted, complete=complete)


def _changed_there(
    draw: st.DrawFn, usernames: list[str]
) -> tuple[dict[str, PlatformEmployee], frozenset[str]]:
    """People changed on the platform (their records as they are there), and deleted."""
    changed = draw(st.sets(st.sampled_from(usernames), max_size=2))
    deleted = draw(st.sets(st.sampled_from(usernames), max_size=1)) - changed
    there = {
        u: PlatformEmployee(
            100 + int(u[1:]),
            u,
            draw(st.booleans()),
            {"name": draw(st.sampled_from([f"Person {u[1:]}", "Someone Else"]))},
            ((draw(st.sampled_from([2, 3])), True, False, ""),),
            5,
        )
        for u in sorted(changed)
    }
    return there, frozenset(deleted)


def _platform_view(
    draw: st.DrawFn, there: dict[str, PlatformEmployee], deleted: frozenset[str]
) -> PlatformView:
    listed = draw(st.sets(st.sampled_from(sorted(NODES))))  # nodes changed there lately
    nodes = {
        n: PlatformNode(n, UNITS[k].name, 1 if k == "D1" else 2, k)
        for k, n in NODES.items()
        if k in listed
    }
    return PlatformView(
        1,
        "Acme",
        nodes,
        draw(st.booleans()),
        changed=there,
        deleted=deleted,
        released=frozenset(draw(st.sets(st.just(("E1", "mobile")), max_size=1))),
    )


@st.composite
def histories(draw: st.DrawFn) -> tuple[Snapshot, Directory, PlatformView, Policy]:
    """What syncd wrote for a few people, a read of the source (complete or not: people
    kept, changed, departed, gone, and new ids, some with a synced person's username),
    and the platform's view (people changed or deleted there)."""
    employees: dict[str, SyncedEmployee] = {}
    fields: dict[tuple[Kind, str], Mapping[str, Any]] = {
        (Kind.DEPARTMENT, k): department_fields(d) for k, d in UNITS.items()
    }
    placed: dict[str, list[str]] = {}
    wanted: dict[str, Employee] = {}
    for n in range(PEOPLE):
        unit = draw(st.sampled_from(sorted(UNITS)))
        wrote = someone(n, 0, unit)
        employees[wrote.id] = _written(draw, n, wrote)
        fields[(Kind.EMPLOYEE, wrote.id)] = employee_fields(wrote, {})
        placed.setdefault(unit, []).append(wrote.id)
        if (now := _read_again(draw, n, unit)) is not None:
            wanted[wrote.id] = now
    wanted.update(_newcomers(draw))
    directory = _a_read(draw, wanted)
    there, deleted = _changed_there(draw, sorted(e.username for e in employees.values()))
    problems = {}
    if draw(st.booleans()):
        problems["E1"] = (KnownProblem("E1", "mobile", "13800000002", "u2", "E2"),)
    view = _platform_view(draw, there, deleted)
    departments = {
        k: SyncedDepartment(k, NODES[k], f"Acme/{d.name}", department_hash(d))
        for k, d in UNITS.items()
    }
    full = Snapshot(
        departments,
        employees,
        fields,
        {k: tuple(v) for k, v in placed.items()},
        problems=problems,
    )
    policy = Policy(leaver_policy=draw(st.sampled_from(["lock", "remove", "lock_then_remove"])))
    return full, directory, view, policy


def loaded_in_steps(full: Snapshot, directory: Directory, view: PlatformView) -> Snapshot:
    """What the runner's steps load of ``full`` (syncd.snapshot.planning), in memory."""
    head = replace(
        full,
        employees={},
        people=len(full.employees),
        fields={},
        fields_of=frozenset(),
        department_fields_of=frozenset(),
        placed={},
    )
    asked = people_asked(directory, view, head)
    snapshot = replace(head, employees=dict(full.employees), people=None)
    if asked is not None:
        some = replace(head, employees={k: full.employees[k] for k in asked if k in full.employees})
        if names_only_synced(directory, some):
            snapshot = some
    people = weighed(directory, snapshot, view)
    gone = gone_departments(directory, snapshot)
    units = departments_weighed(directory, snapshot, view)
    return replace(
        snapshot,
        fields={
            k: v for k, v in full.fields.items() if k[1] in (units, people)[k[0] is Kind.EMPLOYEE]
        },
        fields_of=frozenset(people),
        department_fields_of=frozenset(units),
        placed={k: v for k, v in full.placed.items() if k in gone},
    )


@settings(max_examples=examples(400), deadline=None)
@given(histories())
def test_what_the_runner_loads_plans_as_everything_loaded(
    history: tuple[Snapshot, Directory, PlatformView, Policy],
) -> None:
    """Planning asks for no field the runner did not load (FieldsNotLoaded is never raised)
    and plans as with everything loaded: the same changes, before values, notes, guards."""
    full, directory, view, policy = history
    expected = plan(directory, full, view, policy, DAY_MS)
    snapshot = loaded_in_steps(full, directory, view)
    planning = Planning(directory, snapshot, view, policy, DAY_MS)
    while (wanted := planning.wanted()) is not None:
        planning.give({k: full.written(Kind.EMPLOYEE, k) for k in wanted})
    got = planning.plan()
    assert documents(got) == documents(expected)
    assert (got.unweighed_since, got.removal_due) == (
        expected.unweighed_since,
        expected.removal_due,
    )
    limits = Limits(1, 0.1)
    assert check_guards(got, directory, snapshot, limits) == check_guards(
        expected, directory, full, limits
    )
    assert store_reaches(got) == []
