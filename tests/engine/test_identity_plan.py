"""Identity, with plain values: what a first run adopts on the platform (nodes by serial
or name path, people by username), and the conflicts a changed username or source id
makes."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.model import Kind, State
from syncd.plan import Action, PlatformNode, PlatformPerson, Policy, Snapshot, plan
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


@settings(max_examples=examples(60), deadline=None)
@given(
    serial=st.one_of(st.none(), st.sampled_from(["rd", "be", "sales", "X02", "D2"])),
    at=st.sampled_from(["rd", "be", "sales"]),
)
def test_a_node_of_another_record_under_a_name_path_is_never_doubled(
    serial: str | None, at: str
) -> None:
    # Found by exploration, 2026-11-29: after `syncd state accept`, a department whose name
    # path another installation's node holds (its serial_no another record's) was created
    # a second time beside it; the platform then placed the new department's children and
    # people, by name path, under the other installation's node.
    d = directory(COMPANY, [person("e1", "ann", at)])
    path = {"rd": ("R&D", ROOT), "be": ("Backend", 50), "sales": ("Sales", ROOT)}
    parents = [PlatformNode(50, "R&D", ROOT, "rd")] if at == "be" else []
    name, parent = path[at]
    node = PlatformNode(70, name, parent, serial)
    p = plan(d, Snapshot(), empty_view([*parents, node]), Policy(), NOW)
    made = [c.new_path for c in p.changes if c.kind is Kind.DEPARTMENT]
    paths = [c.new_path or c.display for c in p.changes if c.kind is Kind.DEPARTMENT]
    theirs = serial not in (None, at)
    if theirs:
        assert not any(c.key == at for c in p.changes if c.kind is Kind.DEPARTMENT), made
        assert any(
            n.key == at and n.kind == "conflict" and repr(serial) in n.message for n in p.notes
        )
    else:
        assert [c.target_id for c in p.changes if c.key == at] == [70]  # adopted
    assert len(paths) == len(set(paths))  # no name path made twice


@settings(max_examples=examples(40), deadline=None)
@given(
    serial=st.one_of(st.none(), st.sampled_from(["sales", "FIN-1", ""])),
    spelled=st.sampled_from(["Sales", "SALES", "Sales\u200b"]),
    someone_made_it=st.booleans(),
)
def test_a_department_deleted_on_the_platform_is_made_again_only_where_no_node_has_its_path(
    serial: str | None, spelled: str, someone_made_it: bool
) -> None:
    # Found by exploration, 2026-11-29: an admin deleted Sales and another program made a
    # node Sales in its place; syncd made Sales again beside it, and the platform placed
    # what names that path in the older node. The tree is never made ambiguous.
    d = directory(COMPANY, [person("e1", "ann", "sales")])
    snapshot, view = synced(d)
    gone = snapshot.departments["sales"].node_id
    nodes = {k: n for k, n in view.nodes.items() if k != gone}
    if someone_made_it:
        nodes[900] = PlatformNode(900, spelled, ROOT, serial or None)
    p = plan(d, snapshot, replace(view, nodes=nodes), Policy(), NOW)
    made = [c for c in p.changes if c.kind is Kind.DEPARTMENT and c.key == "sales"]
    if someone_made_it:
        assert made == []
        assert any(n.key == "sales" and n.kind == "conflict" for n in p.notes), p.notes
    else:
        assert [c.action for c in made] == [Action.CREATE]


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
        why = "is locked, and nothing shows it is e2's" if mobile is None else "the mobile differs"
        assert note.kind == "conflict" and why in note.message
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


@pytest.mark.parametrize("name", ["Carol", "Carol Other"])
@pytest.mark.parametrize("unlocked_there", [False, True])
def test_a_leaver_renamed_keeps_her_old_account_locked_whatever_her_rows_name(
    name: str, unlocked_there: bool
) -> None:
    """A departed row that gives a new username: the old account stays under its username
    and is locked (nobody departed gets a new one), again if someone unlocked it on the
    platform; her other fields are written to it only where the row bears her name."""
    carol = person("e3", "carol", "sales", name="Carol", mobile="13800000003")
    snapshot, view = synced(directory(COMPANY, [*STAFF[:2], carol]), locked={"e3": NOW})
    if unlocked_there:
        view = changed_there(view, snapshot, "carol", locked=False)
    left = carol._replace(username="carol.left", name=name, mobile="13900000003")
    left = left._replace(state=State.DEPARTED)
    p = plan(directory(COMPANY, [*STAFF[:2], left]), snapshot, view, Policy(), NOW)
    done = [(c.action, c.display) for c in p.changes if c.key == "e3"]
    update = [(Action.UPDATE, "carol")] if name == "Carol" else []
    assert done == update + ([(Action.LOCK, "carol")] if unlocked_there else [])


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
    # (Alice's row with carol's name too may be carol's under a wrong id: then carol is
    # kept as she is, tests/engine/test_rekey_plan.py.)
    snapshot, view = synced(directory(COMPANY, STAFF))
    d = directory(COMPANY, [person("e1", "carol", "rd", name="Alice"), STAFF[1]])
    for username_change in ("conflict", "remove_and_create"):
        p = plan(d, snapshot, view, Policy(username_change=username_change), NOW)
        assert actions(p) == [("employee", "lock", "e3")], username_change
        assert [(n.kind, n.key) for n in p.notes] == [("conflict", "e1")]
        assert "synced for source id e3" in p.notes[0].message
