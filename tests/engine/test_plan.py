"""The planner, with plain values: no database, no platform, no clock."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.model import (
    Department,
    Directory,
    Employee,
    Kind,
    Position,
    RejectedRow,
    State,
    build_directory,
)
from syncd.plan import (
    DAY_MS,
    Action,
    Change,
    Limits,
    Plan,
    PlatformEmployee,
    PlatformNode,
    PlatformPerson,
    PlatformView,
    Policy,
    Snapshot,
    SyncedDepartment,
    SyncedEmployee,
    check_guards,
    department_fields,
    department_hash,
    employee_fields,
    employee_hash,
    plan,
)
from tests.support.examples import examples

ROOT = 1
NOW = 1_800_000_000_000


def dept(id: str, name: str, parent: str | None = None, **kw: Any) -> Department:
    return Department(id, name, parent, **kw)


def person(id: str, username: str, department: str | None = "rd", **kw: Any) -> Employee:
    positions = (Position(department, primary=True),) if department else ()
    return Employee(id, username, kw.pop("name", username.title()), positions, **kw)


def directory(
    departments: Iterable[Department], employees: Iterable[Employee], **kw: Any
) -> Directory:
    return build_directory(
        [(f"departments.csv:{n}", d) for n, d in enumerate(departments, 2)],
        [(f"employees.csv:{n}", e) for n, e in enumerate(employees, 2)],
        **kw,
    )


COMPANY = [dept("rd", "R&D"), dept("be", "Backend", "rd"), dept("sales", "Sales")]
STAFF = [
    person("e1", "alice", "rd"),
    person("e2", "bob", "be", mobile="13800000002"),
    person("e3", "carol", "sales"),
]


def synced(
    d: Directory,
    *,
    locked: Mapping[str, int] | None = None,
    policy: Policy | None = None,
) -> tuple[Snapshot, PlatformView]:
    """The snapshot and platform view after a perfect sync of ``d``: nothing left to do."""
    policy = policy or Policy()
    fields: dict[tuple[Kind, str], Mapping[str, Any]] = {}
    departments: dict[str, SyncedDepartment] = {}
    nodes: dict[int, PlatformNode] = {ROOT: PlatformNode(ROOT, "Acme", None)}
    ordered = sorted(d.departments.values(), key=lambda x: len(d.path(x.id)))
    for n, x in enumerate(ordered, 100):
        path = "/".join(("Acme", *d.path(x.id)))
        departments[x.id] = SyncedDepartment(x.id, n, path, department_hash(x))
        fields[(Kind.DEPARTMENT, x.id)] = department_fields(x)
        parent = ROOT if x.parent_id is None else departments[x.parent_id].node_id
        nodes[n] = PlatformNode(n, x.name, parent, x.id, x.sort_order)
    employees = {}
    for n, e in enumerate(d.employees.values(), 1000):
        since = (locked or {}).get(e.id)
        employees[e.id] = SyncedEmployee(
            e.id,
            e.username,
            n,
            employee_hash(e, policy.extended_fields),
            locked=since is not None,
            lock_reason="missing" if since is not None else None,
            locked_since=since,
        )
        fields[(Kind.EMPLOYEE, e.id)] = employee_fields(e, policy.extended_fields)
    snapshot = Snapshot(departments, employees, fields)
    return snapshot, PlatformView(ROOT, "Acme", nodes, True)


def empty_view(
    nodes: Iterable[PlatformNode] = (), people: Iterable[PlatformPerson] = ()
) -> PlatformView:
    listed = {ROOT: PlatformNode(ROOT, "Acme", None), **{n.id: n for n in nodes}}
    return PlatformView(ROOT, "Acme", listed, True, {p.username.casefold(): p for p in people})


def actions(p: Any) -> list[tuple[str, str, str]]:
    return [(c.kind.value, c.action.value, c.key) for c in p.changes]


def by_action(p: Plan, kind: Kind, *wanted: Action) -> list[Change]:
    return [c for c in p.changes if c.kind is kind and c.action in wanted]


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


# ---------------------------------------------------------------- leavers


def test_missing_people_are_locked_by_default_with_the_reason() -> None:
    before = directory(COMPANY, STAFF)
    snapshot, view = synced(before)
    p = plan(directory(COMPANY, STAFF[:2]), snapshot, view, Policy(), NOW)
    assert actions(p) == [("employee", "lock", "e3")]
    assert p.changes[0].message == (
        "lock employee carol: missing from the source (removed after 30 days)"
    )


def test_leaver_policy_remove_removes_at_once() -> None:
    snapshot, view = synced(directory(COMPANY, STAFF))
    p = plan(directory(COMPANY, STAFF[:2]), snapshot, view, Policy(leaver_policy="remove"), NOW)
    assert actions(p) == [("employee", "remove", "e3")]


def test_lock_then_remove_waits_for_the_grace_period() -> None:
    d = directory(COMPANY, STAFF)
    recent, view = synced(d, locked={"e3": NOW - 5 * DAY_MS})
    old, _ = synced(d, locked={"e3": NOW - 31 * DAY_MS})
    leavers_gone = directory(COMPANY, STAFF[:2])
    assert plan(leavers_gone, recent, view, Policy(), NOW).changes == ()
    p = plan(leavers_gone, old, view, Policy(), NOW)
    assert actions(p) == [("employee", "remove", "e3")]
    assert "locked 31 days ago" in p.changes[0].message
    assert plan(leavers_gone, old, view, Policy(leaver_policy="lock"), NOW).changes == ()


def test_departed_is_locked_and_returning_is_unlocked() -> None:
    d = directory(COMPANY, STAFF)
    snapshot, view = synced(d, locked={"e1": NOW - DAY_MS})
    departed = person("e3", "carol", "sales", state=State.DEPARTED)
    p = plan(directory(COMPANY, [STAFF[0], STAFF[1], departed]), snapshot, view, Policy(), NOW)
    assert actions(p) == [("employee", "unlock", "e1"), ("employee", "lock", "e3")]
    assert p.changes[1].reason == "departed in the source"


def test_a_delta_read_never_makes_leavers_or_deletes() -> None:
    snapshot, view = synced(directory(COMPANY, STAFF))
    delta = directory(COMPANY, STAFF[:1], complete=False)
    assert plan(delta, snapshot, view, Policy(), NOW).changes == ()


def test_rejected_rows_are_not_leavers() -> None:
    snapshot, view = synced(directory(COMPANY, STAFF))
    rejected = [
        RejectedRow("employees.csv:3", "bad mobile", Kind.EMPLOYEE, key="e2"),
        RejectedRow("employees.csv:4", "bad date", Kind.EMPLOYEE, username="Carol"),
    ]
    d = directory(COMPANY, STAFF[:1], rejected=rejected)
    assert plan(d, snapshot, view, Policy(), NOW).changes == ()


def test_an_unidentifiable_rejected_row_stops_all_leaver_decisions() -> None:
    snapshot, view = synced(directory(COMPANY, STAFF))
    rejected = [RejectedRow("employees.csv:9", "wrong number of fields", Kind.EMPLOYEE)]
    p = plan(directory(COMPANY, STAFF[:1], rejected=rejected), snapshot, view, Policy(), NOW)
    assert p.changes == ()
    assert [n.kind for n in p.notes] == ["leavers"]


def test_departments_gone_from_the_source_are_deleted_children_first() -> None:
    snapshot, view = synced(directory(COMPANY, STAFF))
    d = directory([COMPANY[2]], [STAFF[2]])
    p = plan(d, snapshot, view, Policy(leaver_policy="remove"), NOW)
    deletes = by_action(p, Kind.DEPARTMENT, Action.DELETE)
    assert [c.key for c in deletes] == ["be", "rd"]
    assert actions(p)[-2:] == [("department", "delete", "be"), ("department", "delete", "rd")]


def test_a_rejected_department_is_not_deleted() -> None:
    snapshot, view = synced(directory(COMPANY, STAFF))
    broken = [dept("rd", "R&D", "nowhere"), COMPANY[2]]
    d = directory(broken, [STAFF[2]])
    p = plan(d, snapshot, view, Policy(), NOW)
    assert not by_action(p, Kind.DEPARTMENT, Action.DELETE)


def test_a_department_is_not_deleted_while_a_rejected_child_remains_below_it() -> None:
    snapshot, view = synced(directory(COMPANY, STAFF))
    orphaned = directory([dept("be", "Backend", "rd"), COMPANY[2]], [STAFF[2]])
    assert [r.key for r in orphaned.rejected] == ["be"]  # its parent is unknown now
    for listed in (view, PlatformView(ROOT, "Acme", {}, False)):
        p = plan(orphaned, snapshot, listed, Policy(leaver_policy="remove"), NOW)
        assert not by_action(p, Kind.DEPARTMENT, Action.DELETE)
        (note,) = [n for n in p.notes if n.key == "rd"]
        assert note.message == (
            "Acme/R&D is gone from the source but not deleted: Acme/R&D/Backend is still "
            "below it on the platform"
        )


def test_a_department_is_not_deleted_while_a_node_only_on_the_platform_is_below_it() -> None:
    snapshot, view = synced(directory(COMPANY, []))
    sales = snapshot.departments["sales"].node_id
    temp = PlatformNode(999, "Temp", sales, None)
    view = PlatformView(ROOT, "Acme", {**view.nodes, 999: temp}, True)
    p = plan(directory(COMPANY[:2], []), snapshot, view, Policy(), NOW)
    assert p.changes == ()
    assert [n.message for n in p.notes] == [
        "Acme/Sales is gone from the source but not deleted: Acme/Sales/Temp is still below "
        "it on the platform"
    ]


def test_a_department_whose_children_move_out_in_the_same_run_is_deleted() -> None:
    snapshot, view = synced(directory(COMPANY, []))
    backend = snapshot.departments["be"].node_id
    # A node only on the platform, under Backend: it moves out with Backend.
    temp = PlatformNode(999, "Temp", backend, None)
    view = PlatformView(ROOT, "Acme", {**view.nodes, 999: temp}, True)
    d = directory([dept("be", "Backend", "sales"), COMPANY[2]], [])
    p = plan(d, snapshot, view, Policy(), NOW)
    assert actions(p) == [("department", "move", "be"), ("department", "delete", "rd")]


def test_an_unidentifiable_rejected_employee_row_stops_department_deletes() -> None:
    # The paths layout: departments come from the employees' rows, and a file cut short
    # loses the departments only its lost rows named, with no department row rejected.
    snapshot, view = synced(directory(COMPANY, STAFF))
    cut = [RejectedRow("employees.csv:4", "the file is cut short", Kind.EMPLOYEE)]
    d = directory(COMPANY[:2], STAFF[:2], rejected=cut)
    p = plan(d, snapshot, view, Policy(), NOW)
    assert p.changes == ()
    assert [n.kind for n in p.notes] == ["leavers"]
    assert "departments not deleted" in p.notes[0].message


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


# ---------------------------------------------------------------- adoption


def test_first_run_adopts_nodes_by_serial_then_by_name_path() -> None:
    nodes = [
        PlatformNode(50, "R&D", ROOT, "rd"),  # ours already, same values
        PlatformNode(51, "Backend", 50, None),  # by name path
        PlatformNode(52, "Sales", ROOT, "sales", sort_order=9),  # by serial, different order
    ]
    d = directory([*COMPANY[:2], dept("sales", "Sales", sort_order=1)], [])
    p = plan(d, Snapshot(), empty_view(nodes), Policy(), NOW)
    by_key = {c.key: c for c in p.changes}
    assert by_key["rd"].action is Action.ADOPT
    assert by_key["be"].action is Action.UPDATE and by_key["be"].target_id == 51
    assert "name path" in by_key["be"].reason
    assert by_key["sales"].action is Action.UPDATE and by_key["sales"].target_id == 52
    assert not by_action(p, Kind.DEPARTMENT, Action.CREATE)


def test_nested_nodes_found_as_they_should_be_are_adopted_without_an_update() -> None:
    nodes = [PlatformNode(100, "R&D", ROOT, "rd"), PlatformNode(101, "Backend", 100, "be")]
    d = directory(COMPANY[:2], [])
    p = plan(d, Snapshot(), empty_view(nodes), Policy(), NOW)
    assert [(c.action.value, c.key, c.target_id) for c in p.changes] == [
        ("adopt", "rd", 100),
        ("adopt", "be", 101),
    ]


def test_ambiguous_name_path_on_the_platform_skips_the_subtree_as_a_conflict() -> None:
    nodes = [PlatformNode(60, "R&D", ROOT, None), PlatformNode(61, "R&D", ROOT, None)]
    d = directory(COMPANY, [])
    p = plan(d, Snapshot(), empty_view(nodes), Policy(), NOW)
    assert {c.key for c in p.changes} == {"sales"}
    assert [n.kind for n in p.notes].count("conflict") == 1
    assert any(n.key == "be" and n.kind == "skipped" for n in p.notes)


def test_first_run_adopts_people_by_username_and_unlocks_the_active() -> None:
    # A locked account is unlocked for someone only where its mobile or work number is theirs.
    people = [PlatformPerson(7, "bob", locked=True, mobile="138 0000 0002")]
    p = plan(directory(COMPANY, STAFF), Snapshot(), empty_view(people=people), Policy(), NOW)
    bob = [c for c in p.changes if c.key == "e2"]
    assert [c.action for c in bob] == [Action.UPDATE, Action.UNLOCK]
    assert all(c.target_id == 7 for c in bob)


def test_a_locked_platform_account_nothing_ties_to_the_person_is_not_adopted() -> None:
    # A former employee's locked account, its username now a new hire's: not unlocked for them.
    for mobile in (None, "13999999999"):
        people = [PlatformPerson(7, "bob", locked=True, mobile=mobile)]
        p = plan(directory(COMPANY, STAFF), Snapshot(), empty_view(people=people), Policy(), NOW)
        assert [c for c in p.changes if c.key == "e2"] == []
        (note,) = [n for n in p.notes if n.key == "e2"]
        assert note.kind == "conflict" and "is locked, and nothing shows it is e2's" in note.message
    # Departed, the same: adopted, the account would be unlocked when they come back.
    departed = directory(COMPANY, [*STAFF[:1], STAFF[1]._replace(state=State.DEPARTED)])
    locked = [PlatformPerson(7, "bob", locked=True)]
    p = plan(departed, Snapshot(), empty_view(people=locked), Policy(), NOW)
    assert [c.action for c in p.changes if c.key == "e2"] == []
    theirs = [PlatformPerson(7, "bob", locked=True, mobile="13800000002")]
    p = plan(departed, Snapshot(), empty_view(people=theirs), Policy(), NOW)
    assert [c.action for c in p.changes if c.key == "e2"] == [Action.UPDATE]  # stays locked


def test_a_platform_account_differing_only_in_letter_case_is_a_conflict() -> None:
    people = [PlatformPerson(7, "ALICE", locked=True)]
    p = plan(directory(COMPANY, STAFF), Snapshot(), empty_view(people=people), Policy(), NOW)
    assert [c for c in p.changes if c.key == "e1"] == []
    (note,) = [n for n in p.notes if n.key == "e1"]
    assert note.kind == "conflict" and "only in letter case" in note.message


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


# ---------------------------------------------------------------- identity conflicts


def test_a_changed_username_is_a_conflict_by_default() -> None:
    snapshot, view = synced(directory(COMPANY, STAFF))
    renamed = [STAFF[0], STAFF[1], person("e3", "carol.new", "sales")]
    p = plan(directory(COMPANY, renamed), snapshot, view, Policy(), NOW)
    assert p.changes == ()
    assert [n.kind for n in p.notes] == ["conflict"]
    replace = Policy(username_change="remove_and_create")
    p = plan(directory(COMPANY, renamed), snapshot, view, replace, NOW)
    assert actions(p) == [("employee", "remove", "e3"), ("employee", "create", "e3")]


def test_a_new_source_id_for_a_known_username_is_the_same_account_rekeyed() -> None:
    # The name and the mobile agree: the same person (see tests/engine/test_rekey_plan.py).
    carol = person("e3", "carol", "sales", mobile="13800000003")
    snapshot, view = synced(directory(COMPANY, [*STAFF[:2], carol]))
    rekeyed = [STAFF[0], STAFF[1], carol._replace(id="e3-new")]
    p = plan(directory(COMPANY, rekeyed), snapshot, view, Policy(), NOW)
    assert actions(p) == [("employee", "update", "e3-new")]
    assert p.changes[0].previous_key == "e3"
    assert p.changes[0].target_id == snapshot.employees["e3"].employee_id


def test_a_username_changed_only_in_letter_case_is_a_username_change() -> None:
    # The platform's import matches usernames exactly: an update would make "Bob" a
    # second account and leave "bob" active and forgotten.
    snapshot, view = synced(directory(COMPANY, STAFF))
    recased = [STAFF[0], person("e2", "Bob", "be", mobile="13800000002"), STAFF[2]]
    p = plan(directory(COMPANY, recased), snapshot, view, Policy(), NOW)
    assert p.changes == ()
    assert [(n.kind, n.key) for n in p.notes] == [("conflict", "e2")]
    assert "from bob to Bob" in p.notes[0].message
    # Not even remove_and_create replaces it: a look-alike is never a new account (the
    # identity suite found bob's account removed and made again for "Bob").
    replace = Policy(username_change="remove_and_create")
    p = plan(directory(COMPANY, recased), snapshot, view, replace, NOW)
    assert p.changes == ()
    assert [(n.kind, n.key) for n in p.notes] == [("conflict", "e2")]
    assert "differs only in letter case" in p.notes[0].message


def test_a_new_source_id_for_a_username_in_another_letter_case_is_a_conflict() -> None:
    snapshot, view = synced(directory(COMPANY, STAFF))
    rekeyed = directory(COMPANY, [STAFF[0], STAFF[1], person("e3-new", "Carol", "sales")])
    p = plan(rekeyed, snapshot, view, Policy(), NOW)
    assert p.changes == ()  # neither a second account nor carol locked
    assert [(n.kind, n.key) for n in p.notes] == [("conflict", "e3-new")]
    assert "differs only in letter case from carol" in p.notes[0].message


def test_replacing_a_renamed_account_never_removes_an_excluded_one() -> None:
    snapshot, view = synced(directory(COMPANY, [person("e1", "admin", "rd")]))
    renamed = directory(COMPANY, [person("e1", "admin2", "rd")])
    policy = Policy(username_change="remove_and_create", exclude_usernames=("admin",))
    p = plan(renamed, snapshot, view, policy, NOW)
    assert p.changes == ()
    assert [(n.kind, n.key) for n in p.notes] == [("skipped", "e1")]
    assert "excluded by settings" in p.notes[0].message


def test_a_leaver_whose_username_another_synced_person_took_is_still_locked() -> None:
    # carol left; alice now calls herself carol. carol's account is carol's, not alice's.
    snapshot, view = synced(directory(COMPANY, STAFF))
    d = directory(COMPANY, [person("e1", "carol", "rd"), STAFF[1]])
    for username_change in ("conflict", "remove_and_create"):
        p = plan(d, snapshot, view, Policy(username_change=username_change), NOW)
        assert actions(p) == [("employee", "lock", "e3")], username_change
        assert [(n.kind, n.key) for n in p.notes] == [("conflict", "e1")]
        assert "synced for source id e3" in p.notes[0].message


# ---------------------------------------------------------------- guards


def _guard(p: Any, d: Directory, s: Snapshot, **limits: Any) -> dict[str, Any]:
    return {g.name: g for g in check_guards(p, d, s, Limits(**limits))}


def test_removal_guard_names_the_numbers_and_the_override() -> None:
    staff = [person(f"e{i}", f"user{i}", "rd") for i in range(100)]
    snapshot, view = synced(directory(COMPANY, staff))
    d = directory(COMPANY, staff[:80])
    p = plan(d, snapshot, view, Policy(), NOW)
    assert p.removals == 20
    guard = _guard(p, d, snapshot)["max_removals"]
    assert not guard.passed
    assert "20 removals planned" in guard.message and "--allow-removals 20" in guard.message
    assert _guard(p, d, snapshot, allow_removals=20)["max_removals"].overridden
    assert not _guard(p, d, snapshot, allow_removals=19)["max_removals"].passed
    assert _guard(p, d, snapshot, max_removal_ratio=0.5)["max_removals"].passed


def test_an_empty_or_shrunken_source_is_blocked() -> None:
    staff = [person(f"e{i}", f"user{i}", "rd") for i in range(30)]
    snapshot, view = synced(directory(COMPANY, staff))
    empty = directory(COMPANY, [])
    p = plan(empty, snapshot, view, Policy(), NOW)
    guards = _guard(p, empty, snapshot, max_removals=1000, max_removal_ratio=1.0)
    assert not guards["source_shrink"].passed
    assert "returned 0 employees, 30 were synced" in guards["source_shrink"].message
    fine = directory(COMPANY, staff[:28])
    p = plan(fine, snapshot, view, Policy(), NOW)
    assert all(g.passed for g in check_guards(p, fine, snapshot, Limits()))


def test_the_shrink_guard_does_not_count_people_locked_as_missing_long_ago() -> None:
    staff = [person(f"e{i}", f"user{i}", "rd") for i in range(100)]
    gone = {f"e{i}": NOW - 400 * DAY_MS for i in range(85, 100)}  # left long ago, locked
    snapshot, view = synced(directory(COMPANY, staff), locked=gone)
    d = directory(COMPANY, staff[:85])
    p = plan(d, snapshot, view, Policy(leaver_policy="lock"), NOW)
    assert p.changes == ()
    guards = _guard(p, d, snapshot)
    assert all(g.passed for g in guards.values())
    assert guards["source_shrink"].message == (
        "the source returned 85 employees, 85 were synced before "
        "(not counting 15 locked as missing from earlier reads)"
    )
    shrunk = directory(COMPANY, staff[:70])
    p = plan(shrunk, snapshot, view, Policy(leaver_policy="lock"), NOW)
    assert not _guard(p, shrunk, snapshot, max_removals=1000)["source_shrink"].passed


def test_department_deletions_are_guarded_against_the_number_of_departments() -> None:
    # 50 departments among 650 records: all of them deleted is under 10% of the records.
    staff = [person(f"e{i}", f"user{i}", None) for i in range(600)]
    departments = [dept(f"d{i}", f"D{i}") for i in range(50)]
    snapshot, view = synced(directory(departments, staff))
    d = directory([], staff)
    p = plan(d, snapshot, view, Policy(), NOW)
    assert p.removals == 50
    guard = _guard(p, d, snapshot)["max_removals"]
    assert not guard.passed
    assert guard.message == (
        "50 removals planned (locks, removals, department deletions); the limits are 50 and "
        "10% of 650 synced records, and 10% of 50 synced departments (50 to delete): rerun "
        "with --allow-removals 50 if this is intended"
    )
    assert _guard(p, d, snapshot, allow_removals=50)["max_removals"].overridden
    few = directory(departments[5:], staff)
    assert _guard(plan(few, snapshot, view, Policy(), NOW), few, snapshot)["max_removals"].passed


def test_guards_pass_on_a_first_sync() -> None:
    d = directory(COMPANY, STAFF)
    p = plan(d, Snapshot(), empty_view(), Policy(), NOW)
    assert all(g.passed for g in check_guards(p, d, Snapshot(), Limits()))


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


def test_department_hashes_stay_as_stored_in_existing_snapshots() -> None:
    backend = dept("be", "Backend", "rd", sort_order=3, sn="7")
    assert department_hash(backend) == "cfb3106ed3e5f778c590c821"


# ---------------------------------------------------------------- people drift


def changed_there(
    view: PlatformView, snapshot: Snapshot, username: str, **overrides: Any
) -> PlatformView:
    """The view, with one person changed on the platform (their record as it is there)."""
    s = next(s for s in snapshot.employees.values() if s.username == username)
    written = snapshot.written(Kind.EMPLOYEE, s.source_id) or {}
    node = {d.source_id: d.node_id for d in snapshot.departments.values()}
    positions = tuple(
        (node[p["department"]], p["primary"], p["chief"], p["job_title"] or "")
        for p in written["positions"]
    )
    record = PlatformEmployee(
        s.employee_id or 0,
        username,
        overrides.pop("locked", False),
        {k: written.get(k) for k in ("name", "email", "mobile", "sn")} | overrides,
        overrides.pop("positions", positions),
        NOW,
    )
    return replace(view, changed={**view.changed, username: record})


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
