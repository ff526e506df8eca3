"""Leavers, with plain values: people locked or removed when the source drops them or
marks them departed, and departments deleted when it drops them, never while something
still below them on the platform, or a row the read rejected, may need them."""

from __future__ import annotations

from syncd.model import Kind, RejectedRow, State
from syncd.plan import DAY_MS, Action, PlatformNode, PlatformView, Policy, plan
from tests.engine.plan_world import (
    COMPANY,
    NOW,
    ROOT,
    STAFF,
    actions,
    by_action,
    dept,
    directory,
    person,
    synced,
)


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
