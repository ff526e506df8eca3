"""The planner and spellings, with plain values: a record synced or found on the platform
in one spelling (NFD, another letter case, invisible characters) is the same record or a
conflict when the source spells it another way, never a second one."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.model import Department, Directory, Employee, Kind, Photo
from syncd.plan import (
    Action,
    PlatformNode,
    PlatformPerson,
    PlatformView,
    Policy,
    Snapshot,
    plan,
)
from syncd.spelling import look_alike
from tests.engine.plan_world import NOW, ROOT, actions, dept, directory, person, synced
from tests.support.examples import examples

NFC_RENEE, NFD_RENEE = "ren\u00e9e", "rene\u0301e"
CAFE, CAFE_NFD = "Caf\u00e9", "Cafe\u0301"
ZWSP, ZWJ, LRM, RLO = "\u200b", "\u200d", "\u200e", "\u202e"


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def as_written(employees: list[Employee], departments: list[Department]) -> Directory:
    """What an earlier syncd synced, which kept the source's spelling: a Directory made
    without build_directory's NFC."""
    return Directory({d.id: d for d in departments}, {e.id: e for e in employees})


def test_a_username_synced_in_nfd_is_the_same_account_when_the_source_sends_nfc() -> None:
    earlier = as_written(
        [person("e1", NFD_RENEE, "rd", name="Renee"), person("e2", "bob", "rd")],
        [dept("rd", "R&D")],
    )
    snapshot, view = synced(earlier)
    now = directory(
        [dept("rd", "R&D")],
        [person("e1", NFC_RENEE, "rd", name="Renee"), person("e2", "bob", "rd")],
    )
    for policy in (Policy(), Policy(username_change="remove_and_create")):
        p = plan(now, snapshot, view, policy, NOW)
        assert p.changes == () and p.notes == (), policy


def test_a_photo_is_set_on_the_account_synced_in_nfd() -> None:
    earlier = as_written([person("e1", NFD_RENEE, "rd", name="Renee")], [dept("rd", "R&D")])
    snapshot, view = synced(earlier)
    photo = Photo("digest", 100, "jpeg", "photos/renee.jpg")
    now = directory([dept("rd", "R&D")], [person("e1", NFC_RENEE, "rd", name="Renee", photo=photo)])
    p = plan(now, snapshot, view, Policy(), NOW)
    assert [(c.action, c.display) for c in p.changes] == [(Action.PHOTO, NFD_RENEE)]


def test_a_platform_account_in_nfd_is_adopted_not_duplicated() -> None:
    found = PlatformPerson(7, NFD_RENEE)
    view = PlatformView(ROOT, "Acme", {ROOT: PlatformNode(ROOT, "Acme", None)}, True)
    view = PlatformView(ROOT, "Acme", view.nodes, True, {look_alike(NFD_RENEE): found})
    p = plan(directory([], [person("e1", NFC_RENEE, None)]), Snapshot(), view, Policy(), NOW)
    assert [(c.action, c.target_id, c.display) for c in p.changes] == [
        (Action.UPDATE, 7, NFD_RENEE)  # adopted, under the platform's spelling
    ]
    record = p.changes[0].record
    assert isinstance(record, Employee) and record.username == NFD_RENEE


def test_a_platform_account_in_another_case_or_with_invisible_characters_is_a_conflict() -> None:
    for theirs in ("Ren\u00e9e", "ren" + ZWSP + "\u00e9e"):
        view = PlatformView(
            ROOT,
            "Acme",
            {ROOT: PlatformNode(ROOT, "Acme", None)},
            True,
            {look_alike(theirs): PlatformPerson(7, theirs)},
        )
        p = plan(directory([], [person("e1", NFC_RENEE, None)]), Snapshot(), view, Policy(), NOW)
        assert p.changes == ()
        assert [n.kind for n in p.notes] == ["conflict"]
    assert (
        "'ren\\u200b\u00e9e', which differs from 'ren\u00e9e' only in invisible"
        in p.notes[0].message
    )


def test_a_rekeyed_person_whose_username_was_synced_in_nfd_keeps_the_account() -> None:
    # The same person (the re-key rule: name and mobile agree), under a new id.
    earlier = as_written([person("e1", NFD_RENEE, "rd", mobile="13800000001")], [dept("rd", "R&D")])
    snapshot, view = synced(earlier)
    now = directory([dept("rd", "R&D")], [person("e9", NFC_RENEE, "rd", mobile="13800000001")])
    p = plan(now, snapshot, view, Policy(), NOW)
    assert actions(p) == [("employee", "update", "e9")]
    assert p.changes[0].previous_key == "e1" and p.changes[0].display == NFD_RENEE


def test_a_name_synced_in_nfd_is_updated_once_with_a_message_that_shows_the_difference() -> None:
    earlier = as_written([person("e1", "jose", "rd", name="Jose\u0301")], [dept("rd", CAFE_NFD)])
    snapshot, view = synced(earlier)
    now = directory([dept("rd", CAFE)], [person("e1", "jose", "rd", name="Jos\u00e9")])
    p = plan(now, snapshot, view, Policy(), NOW)
    assert [c.message for c in p.changes] == [
        f"update department Acme/{CAFE_NFD} to Acme/{CAFE} (name 'Cafe\\u0301' → '{CAFE}')",
        "update employee jose (name 'Jose\\u0301' → 'Jos\u00e9')",
    ]
    assert [n.kind for n in p.notes] == []


def test_a_department_synced_under_an_nfd_path_id_is_not_made_twice() -> None:
    # The paths layout: the id is the path. An earlier syncd kept it as the source spelled it.
    old = [
        dept("Head Office", "Head Office"),
        dept(f"Head Office/{CAFE_NFD}", CAFE_NFD, "Head Office"),
    ]
    earlier = as_written([person("e1", "ann", f"Head Office/{CAFE_NFD}")], old)
    snapshot, view = synced(earlier)
    ids = [dept("Head Office", "Head Office"), dept(f"Head Office/{CAFE}", CAFE, "Head Office")]
    now = directory(ids, [person("e1", "ann", f"Head Office/{CAFE}")])
    p = plan(now, snapshot, view, Policy(), NOW)
    # The same node, renamed to NFC once; no create, no delete, ann not moved.
    assert actions(p) == [("department", "update", f"Head Office/{CAFE_NFD}")]


def test_a_path_re_exported_in_another_letter_case_renames_the_department() -> None:
    old = [dept("Head Office", "Head Office"), dept("Head Office/Sales", "Sales", "Head Office")]
    earlier = as_written([person("e1", "ann", "Head Office/Sales")], old)
    snapshot, view = synced(earlier)
    ids = [dept("HEAD OFFICE", "HEAD OFFICE"), dept("HEAD OFFICE/Sales", "Sales", "HEAD OFFICE")]
    now = directory(ids, [person("e1", "ann", "HEAD OFFICE/Sales")])
    p = plan(now, snapshot, view, Policy(), NOW)
    assert actions(p) == [("department", "update", "Head Office")]
    assert p.changes[0].message == (
        "update department Acme/Head Office to Acme/HEAD OFFICE "
        "(name 'Head Office' → 'HEAD OFFICE')"
    )


def test_a_path_re_exported_with_an_invisible_character_keeps_the_department() -> None:
    old = [dept("Head Office", "Head Office"), dept("Head Office/Sales", "Sales", "Head Office")]
    snapshot, view = synced(as_written([person("e1", "ann", "Head Office/Sales")], old))
    hidden = "Head Office/Sa" + ZWSP + "les"
    ids = [dept("Head Office", "Head Office"), dept(hidden, "Sa" + ZWSP + "les", "Head Office")]
    now = directory(ids, [person("e1", "ann", hidden)])
    assert [r.key for r in now.rejected] == [hidden, "e1"]  # the row, and ann placed in it
    p = plan(now, snapshot, view, Policy(), NOW)
    assert p.changes == ()  # Sales is kept as it is, not deleted; ann is kept where she is


def test_a_platform_node_named_in_nfd_is_adopted_by_name_path() -> None:
    nodes = {ROOT: PlatformNode(ROOT, "Acme", None), 50: PlatformNode(50, CAFE_NFD, ROOT)}
    p = plan(
        directory([dept("c", CAFE)], []),
        Snapshot(),
        PlatformView(ROOT, "Acme", nodes, True),
        Policy(),
        NOW,
    )
    assert [(c.action, c.target_id) for c in p.changes] == [(Action.UPDATE, 50)]
    assert "matched by name path" in p.changes[0].message


def test_a_platform_node_named_alike_in_another_case_is_a_conflict() -> None:
    for theirs in ("SALES", "Sa" + ZWSP + "les"):
        nodes = {ROOT: PlatformNode(ROOT, "Acme", None), 50: PlatformNode(50, theirs, ROOT)}
        view = PlatformView(ROOT, "Acme", nodes, True)
        d = directory([dept("s", "Sales"), dept("t", "Team", "s")], [person("e1", "ann", "t")])
        p = plan(d, Snapshot(), view, Policy(), NOW)
        assert [c.kind for c in p.changes] == [Kind.EMPLOYEE]  # ann only: see below
        assert [(n.kind, n.key) for n in p.notes][:2] == [("conflict", "s"), ("skipped", "t")]
    assert "node 'Acme/Sa\\u200bles', which differs only in letter case" in p.notes[0].message


def test_a_platform_node_renamed_to_nfd_is_not_drift() -> None:
    d = directory([dept("c", CAFE)], [])
    snapshot, view = synced(d)
    nodes = dict(view.nodes)
    node_id = snapshot.departments["c"].node_id
    nodes[node_id] = PlatformNode(node_id, CAFE_NFD, ROOT, "c")
    p = plan(d, snapshot, PlatformView(ROOT, "Acme", nodes, True), Policy(), NOW)
    assert p.changes == () and p.notes == ()


# ---------------------------------------------------------------- generated

_NAMES = st.text(
    alphabet=st.sampled_from("abeinorsAE\u00e9\u00fc\u00e5\u1ec7"), min_size=1, max_size=7
)
_HIDDEN = st.sampled_from([ZWSP, ZWJ, LRM, RLO])


@st.composite
def _variant(draw: st.DrawFn, base: str) -> str:
    text = nfd(base) if draw(st.booleans()) else base
    if draw(st.booleans()):
        text = text.swapcase()
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(_HIDDEN) + text[at:]
    return text


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_a_variant_of_a_synced_record_is_never_created_again(data: st.DataObject) -> None:
    names = data.draw(st.lists(_NAMES, min_size=1, max_size=4, unique_by=look_alike))
    departments = [dept("top", "Top")] + [dept(f"top/{n}", n, "top") for n in names]
    people = [person(f"e{i}", n.lower(), f"top/{n}") for i, n in enumerate(names)]
    first = directory(departments, people)
    snapshot, view = synced(first)
    # The same company re-exported with its names spelled other ways (the paths layout:
    # a department's id is its path, so it changes with the spelling too).
    spelled = [data.draw(_variant(n)) for n in names]
    again = directory(
        [dept("top", "Top")] + [dept(f"top/{s}", s, "top") for s in spelled],
        [
            person(f"e{i}", data.draw(_variant(n.lower())), f"top/{s}")
            for i, (n, s) in enumerate(zip(names, spelled, strict=True))
        ],
    )
    p = plan(again, snapshot, view, Policy(), NOW)
    assert [c for c in p.changes if c.action not in (Action.UPDATE, Action.MOVE)] == []
    # Told to replace an account whose username changed, syncd replaces one that changed
    # in letter case (the platform cannot rename it), but never adds a second account.
    replacing = plan(again, snapshot, view, Policy(username_change="remove_and_create"), NOW)
    removed = {c.key for c in replacing.changes if c.action is Action.REMOVE}
    created = {c.key for c in replacing.changes if c.action is Action.CREATE}
    assert created == removed
    assert all(c.kind is Kind.EMPLOYEE for c in replacing.changes if c.action is Action.CREATE)
