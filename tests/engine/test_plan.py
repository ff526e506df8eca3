"""The planner, with plain values: no database, no platform, no clock.

The shared world (a small company, its perfect sync, the platform's view) is in
plan_world.py; leavers, identity (adoption and conflicts) and the removal
guards have their own modules: test_leavers_plan.py, test_identity_plan.py and
test_removal_guard_plan.py."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.model import (
    Employee,
    Kind,
    Position,
    State,
    build_directory,
)
from syncd.plan import (
    Action,
    PlatformNode,
    PlatformView,
    Policy,
    Snapshot,
    department_hash,
    employee_hash,
    plan,
)
from syncd.plan.fields import employee_hasher
from tests.engine.plan_world import (
    COMPANY,
    NOW,
    ROOT,
    STAFF,
    actions,
    by_action,
    changed_there,
    dept,
    directory,
    empty_view,
    person,
    synced,
)
from tests.support.examples import examples

# ---------------------------------------------------------------- first sync


def test_first_sync_creates_parents_before_children_then_people() -> None:
    d = directory(COMPANY, STAFF)
    p = plan(d, Snapshot(), empty_view(), Policy(), NOW)
    assert actions(p) == [
        ("department", "create", "rd"),
        ("department", "create", "sales"),
        ("department", "create", "be"),
        ("employee", "create", "e1"),
        ("employee", "create", "e2"),
        ("employee", "create", "e3"),
    ]
    creates = by_action(p, Kind.DEPARTMENT, Action.CREATE)
    assert [c.depth for c in creates] == sorted(c.depth for c in creates)
    assert {c.new_path for c in creates} == {"Acme/R&D", "Acme/R&D/Backend", "Acme/Sales"}
    assert p.removals == 0


def test_departed_people_never_synced_are_not_created_and_counted_once() -> None:
    d = directory(COMPANY, [*STAFF, person("e9", "zed", state=State.DEPARTED)])
    p = plan(d, Snapshot(), empty_view(), Policy(), NOW)
    assert "e9" not in {c.key for c in p.changes}
    assert [n.message for n in p.notes if n.kind == "skipped"] == [
        "1 person departed in the source but never synced: not created"
    ]


def test_nothing_changed_plans_nothing() -> None:
    d = directory(COMPANY, STAFF)
    snapshot, view = synced(d)
    p = plan(d, snapshot, view, Policy(), NOW)
    assert p.changes == ()
    assert p.notes == ()


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.text("xyz", min_size=1, max_size=3)),
        max_size=8,
        unique_by=lambda t: t[1],
    ),
    st.lists(st.text("abcdef", min_size=1, max_size=5), max_size=12, unique=True),
)
def test_a_synced_directory_plans_nothing(
    names: list[tuple[str, str]], usernames: list[str]
) -> None:
    departments = [dept(f"d{i}", f"{top}-{leaf}") for i, (top, leaf) in enumerate(names)]
    ids: list[str | None] = [x.id for x in departments] or [None]
    staff = [person(f"p{i}", u, ids[i % len(ids)]) for i, u in enumerate(usernames)]
    d = directory(departments, staff)
    snapshot, view = synced(d)
    assert plan(d, snapshot, view, Policy(), NOW).changes == ()


# ---------------------------------------------------------------- updates


def test_changed_field_is_an_update_naming_the_field() -> None:
    before = directory(COMPANY, STAFF)
    snapshot, view = synced(before)
    after = directory(
        COMPANY, [STAFF[0], person("e2", "bob", "be", mobile="13900000009"), STAFF[2]]
    )
    p = plan(after, snapshot, view, Policy(), NOW)
    assert actions(p) == [("employee", "update", "e2")]
    change = p.changes[0]
    assert change.target_id is not None
    assert "mobile '13800000002' → '13900000009'" in change.message


def test_rename_is_an_update_and_reparent_is_a_move_of_the_same_node() -> None:
    before = directory(COMPANY, STAFF)
    snapshot, view = synced(before)
    after = directory([dept("rd", "Research"), dept("be", "Backend", "sales"), COMPANY[2]], STAFF)
    p = plan(after, snapshot, view, Policy(), NOW)
    assert sorted(actions(p)) == [("department", "move", "be"), ("department", "update", "rd")]
    move = next(c for c in p.changes if c.action is Action.MOVE)
    assert move.target_id == snapshot.departments["be"].node_id
    assert move.display == "Acme/R&D/Backend" and move.new_path == "Acme/Sales/Backend"
    assert not by_action(p, Kind.DEPARTMENT, Action.CREATE, Action.DELETE)


def test_updates_are_ordered_by_new_depth_so_a_swap_never_makes_a_cycle() -> None:
    before = directory([dept("a", "A"), dept("b", "B", "a")], [])
    snapshot, view = synced(before)
    after = directory([dept("b", "B"), dept("a", "A", "b")], [])
    p = plan(after, snapshot, view, Policy(), NOW)
    assert [c.key for c in p.changes] == ["b", "a"]  # b leaves a first, then a goes under b


# ---------------------------------------------------------------- ownership and exclusions


def test_excluded_people_and_departments_are_never_touched() -> None:
    snapshot, view = synced(directory(COMPANY, STAFF))
    policy = Policy(exclude_usernames=("car*",), exclude_departments=("R&D",))
    p = plan(directory([COMPANY[2]], STAFF[2:]), snapshot, view, policy, NOW)
    assert not by_action(p, Kind.DEPARTMENT, Action.DELETE)  # R&D excluded, Backend under it
    fresh = plan(directory(COMPANY, STAFF), Snapshot(), empty_view(), policy, NOW)
    created = {c.key for c in fresh.changes}
    assert "e3" not in created and "rd" not in created and "be" not in created
    assert {"sales", "e1", "e2"} <= created


def test_what_syncd_never_wrote_is_never_removed() -> None:
    d = directory(COMPANY, STAFF)
    snapshot, view = synced(d)
    foreign = PlatformNode(999, "Partners", ROOT, None)
    view = PlatformView(ROOT, "Acme", {**view.nodes, 999: foreign}, True)
    assert plan(d, snapshot, view, Policy(), NOW).changes == ()


# ---------------------------------------------------------------- drift


def test_drift_on_the_platform_is_put_back_and_reported() -> None:
    d = directory(COMPANY, STAFF)
    snapshot, view = synced(d)
    rd = snapshot.departments["rd"].node_id
    be = snapshot.departments["be"].node_id
    sales = snapshot.departments["sales"].node_id
    nodes = dict(view.nodes)
    nodes[rd] = PlatformNode(rd, "Renamed", ROOT, "rd")
    nodes[be] = PlatformNode(be, "Backend", sales, "be")
    drifted = PlatformView(ROOT, "Acme", nodes, True)
    p = plan(d, snapshot, drifted, Policy(), NOW)
    assert sorted(actions(p)) == [("department", "move", "be"), ("department", "update", "rd")]
    assert len([n for n in p.notes if n.kind == "drift"]) == 2


def test_a_node_deleted_on_the_platform_is_recreated_on_a_full_listing_only() -> None:
    d = directory(COMPANY, STAFF)
    snapshot, view = synced(d)
    sales = snapshot.departments["sales"].node_id
    listed = {k: v for k, v in view.nodes.items() if k != sales}
    p = plan(d, snapshot, PlatformView(ROOT, "Acme", listed, True), Policy(), NOW)
    assert actions(p) == [("department", "create", "sales")]
    changed_only = PlatformView(ROOT, "Acme", listed, False)
    assert plan(d, snapshot, changed_only, Policy(), NOW).changes == ()


# ---------------------------------------------------------------- hashes


def test_hash_follows_pushed_fields_but_not_the_lock_state() -> None:
    a = person("e1", "alice", "rd", email="a@acme.example")
    assert employee_hash(a, {}) == employee_hash(
        person("e1", "alice", "rd", email="a@acme.example"), {}
    )
    assert employee_hash(a, {}) != employee_hash(
        person("e1", "alice", "rd", email="b@acme.example"), {}
    )
    departed = person("e1", "alice", "rd", email="a@acme.example", state=State.DEPARTED)
    assert employee_hash(a, {}) == employee_hash(departed, {})
    extra = person("e1", "alice", "rd", email="a@acme.example", extra=(("floor", "3"),))
    assert employee_hash(extra, {}) == employee_hash(a, {})  # unmapped extras are not pushed
    assert employee_hash(extra, {"floor": "extended1"}) != employee_hash(a, {"floor": "extended1"})


TEXTS = st.one_of(st.none(), st.text(max_size=8))


@settings(max_examples=examples(200), deadline=None)
@given(
    st.tuples(*[st.text(min_size=1, max_size=8)] * 2, *[TEXTS] * 8),
    st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
    st.booleans(),
    st.lists(st.tuples(TEXTS, TEXTS, st.booleans(), st.booleans()), max_size=3),
    st.lists(st.tuples(st.text(max_size=4), st.text(max_size=4)), max_size=2),
    st.lists(st.tuples(st.text(max_size=4), st.text(max_size=4)), max_size=2),
)
def test_employee_hashes_stay_as_stored_in_existing_snapshots(
    texts: tuple[str | None, ...],
    sort_order: int | None,
    senior: bool,
    places: list[tuple[str | None, str | None, bool, bool]],
    properties: list[tuple[str, str]],
    tags: list[tuple[str, str]],
) -> None:
    """The text hashed is exactly repr() of the tuple of the values written (and the
    properties' and tags' reprs after it when there are some), as it always was."""
    username, name, en_name, email, mobile, tel, sn, gender, birthday, title = texts
    assert username is not None and name is not None
    positions = tuple(Position(*p) for p in places)
    e = Employee(
        "e1", username, name, positions, en_name, email, mobile, tel, sn, gender, birthday,
        title, sort_order, senior, State.ACTIVE, (("floor", "3"),), tuple(properties),
        tags=tuple(tags),
    )  # fmt: skip
    values = (*texts, sort_order, senior, positions, (("extended1", "3"),))
    text = repr(values) + (repr(e.properties) if properties else "")
    text += "tags" + repr(e.tags) if tags else ""
    expected = hashlib.blake2b(text.encode(), digest_size=12).hexdigest()
    assert employee_hash(e, {"floor": "extended1"}) == expected
    assert employee_hasher({"floor": "extended1"})(e) == expected


def test_department_hashes_stay_as_stored_in_existing_snapshots() -> None:
    backend = dept("be", "Backend", "rd", sort_order=3, sn="7")
    assert department_hash(backend) == "cfb3106ed3e5f778c590c821"


# ---------------------------------------------------------------- people drift


def test_people_an_incremental_read_did_not_return_are_put_back_as_syncd_wrote_them() -> None:
    full = directory(COMPANY, STAFF)
    snapshot, view = synced(full)
    delta = directory(COMPANY, [STAFF[0]], complete=False)  # only alice was read
    view = changed_there(view, snapshot, "bob", mobile="13999999999")
    view = changed_there(view, snapshot, "carol", locked=True)

    p = plan(delta, snapshot, view, Policy(), NOW)

    assert actions(p) == [
        ("employee", "update", "e2"),
        ("employee", "unlock", "e3"),
    ]
    (update,) = by_action(p, Kind.EMPLOYEE, Action.UPDATE)
    assert update.record == STAFF[1]  # made again from the fields syncd recorded
    assert update.hash == snapshot.employees["e2"].hash
    assert (update.before or {})["mobile"] == "13999999999"
    assert (update.after or {})["mobile"] == "13800000002"


def test_a_record_that_only_looks_changed_is_no_drift() -> None:
    d = directory(COMPANY, STAFF)
    snapshot, view = synced(d)
    # Listed as changed (syncd's own last write), and as syncd wrote it.
    view = changed_there(view, snapshot, "bob")
    assert plan(d, snapshot, view, Policy(), NOW).changes == ()


def test_a_move_is_told_with_department_name_paths_not_ids() -> None:
    before = directory(COMPANY, STAFF)
    snapshot, view = synced(before)
    moved = [person("e1", "alice", "be"), *STAFF[1:]]
    p = plan(directory(COMPANY, moved), snapshot, view, Policy(), NOW)
    (change,) = p.changes
    assert change.message == "update employee alice (positions Acme/R&D → Acme/R&D/Backend)"


def test_what_the_source_could_not_cover_is_told_in_the_plan() -> None:
    d = build_directory(
        [("departments.csv:2", dept("rd", "R&D"))],
        [("employees.csv:2", STAFF[0])],
        filtered=3,
        warnings=["the child domain DC=emea,DC=acme,DC=example was not read"],
    )
    snapshot, view = synced(d)
    notes = [(n.kind, n.message) for n in plan(d, snapshot, view, Policy(), NOW).notes]
    assert notes == [
        ("source", "the child domain DC=emea,DC=acme,DC=example was not read"),
        ("source", "3 people left out by source.mapping.filter"),
    ]
